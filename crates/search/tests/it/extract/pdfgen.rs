//! Small PDFs written from scratch for the tests: a page of text, the same encrypted (RC4, 40-bit,
//! PDF 1.4 standard security handler), and adversarial ones (a zlib bomb, exponentially nested
//! form XObjects, a form that draws itself).

use md5::{Digest, Md5};

/// A PDF from its objects (numbered from 1; object 1 is the catalog) and extra trailer entries.
pub fn pdf(objects: &[Vec<u8>], trailer: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let size = objects.len() + 1;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R {trailer} >>\nstartxref\n{xref}\n%%EOF\n")
            .as_bytes(),
    );
    out
}

/// A stream object.
pub fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// Objects 1–5 of a one-page document: catalog, pages, page (Helvetica as /F1, plus
/// `extra_resources`), font, and the page's content stream (`content_dict` adds e.g. a filter).
pub fn page_objects(content_dict: &str, content: &[u8], extra_resources: &str) -> Vec<Vec<u8>> {
    vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 4 0 R >> {extra_resources} >> /Contents 5 0 R >>"
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
        stream(content_dict, content),
    ]
}

/// A content stream showing `lines` (windows-1252 bytes; parentheses and backslashes escaped).
pub fn text_content(lines: &[&[u8]]) -> Vec<u8> {
    let mut out = b"BT /F1 12 Tf 72 720 Td 14 TL\n".to_vec();
    for line in lines {
        out.push(b'(');
        for &b in *line {
            if matches!(b, b'(' | b')' | b'\\') {
                out.push(b'\\');
            }
            out.push(b);
        }
        out.extend_from_slice(b") Tj T*\n");
    }
    out.extend_from_slice(b"ET");
    out
}

/// A one-page PDF showing `lines`.
pub fn text_pdf(lines: &[&[u8]]) -> Vec<u8> {
    pdf(&page_objects("", &text_content(lines), ""), "")
}

/// The padding string of the standard security handler.
const PAD: [u8; 32] = [
    0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
    0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
];

fn padded(password: &[u8]) -> Vec<u8> {
    password
        .iter()
        .chain(PAD.iter())
        .take(32)
        .copied()
        .collect()
}

fn rc4(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut s: Vec<u8> = (0..=255).collect();
    let mut j = 0u8;
    for i in 0..256 {
        j = j.wrapping_add(s[i]).wrapping_add(key[i % key.len()]);
        s.swap(i, usize::from(j));
    }
    let (mut i, mut j) = (0u8, 0u8);
    data.iter()
        .map(|&b| {
            i = i.wrapping_add(1);
            j = j.wrapping_add(s[usize::from(i)]);
            s.swap(usize::from(i), usize::from(j));
            b ^ s[usize::from(s[usize::from(i)].wrapping_add(s[usize::from(j)]))]
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// A one-page PDF showing `lines`, encrypted with the standard security handler (V 1, R 2:
/// RC4 with a 40-bit key) for `user_password` (owner password "owner"). With an empty user
/// password any reader opens it; with another one, only those who know it.
pub fn encrypted_text_pdf(lines: &[&[u8]], user_password: &[u8]) -> Vec<u8> {
    let id = *b"arca-test-pdf-id";
    let permissions: i32 = -4;
    // Algorithm 3 (O), then algorithm 2 (the file key), then algorithm 4 (U, revision 2).
    let owner_key = &Md5::digest(padded(b"owner"))[..5];
    let o = rc4(owner_key, &padded(user_password));
    let mut hasher = Md5::new();
    hasher.update(padded(user_password));
    hasher.update(&o);
    hasher.update(permissions.to_le_bytes());
    hasher.update(id);
    let key = hasher.finalize()[..5].to_vec();
    let u = rc4(&key, &PAD);
    // Algorithm 1: the key for object 5, generation 0, encrypts its stream.
    let mut object_key = key.clone();
    object_key.extend_from_slice(&[5, 0, 0, 0, 0]);
    let object_key = &Md5::digest(&object_key)[..10];
    let mut objects = page_objects("", &rc4(object_key, &text_content(lines)), "");
    objects.push(
        format!(
            "<< /Filter /Standard /V 1 /R 2 /O <{}> /U <{}> /P {permissions} >>",
            hex(&o),
            hex(&u)
        )
        .into_bytes(),
    );
    pdf(
        &objects,
        &format!("/Encrypt 6 0 R /ID [<{0}> <{0}>]", hex(&id)),
    )
}

/// Writes deflate (fixed Huffman codes) bits, least significant first.
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u64, count: u32) {
        self.acc |= value << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code: most significant bit first.
    fn code(&mut self, code: u64, count: u32) {
        let reversed = (0..count).fold(0, |r, i| r | (((code >> i) & 1) << (count - 1 - i)));
        self.put(reversed, count);
    }
}

/// A zlib stream that inflates to `len` zero bytes (one literal, then matches of 258 bytes at
/// distance 1): about 1/160 of `len`.
pub fn zlib_zeros(len: u64) -> Vec<u8> {
    let mut bits = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // BTYPE = fixed Huffman codes
    bits.code(0x30, 8); // literal 0
    let mut left = len - 1;
    while left >= 258 {
        bits.code(0xC5, 8); // length 258 (code 285)
        bits.code(0, 5); // distance 1 (code 0)
        left -= 258;
    }
    for _ in 0..left {
        bits.code(0x30, 8);
    }
    bits.code(0, 7); // end of block
    if bits.n > 0 {
        bits.put(0, 8 - bits.n);
    }
    // Adler-32 of `len` zeros: a = 1, b = len.
    let adler = ((len % 65521) << 16) | 1;
    bits.out.extend_from_slice(&(adler as u32).to_be_bytes());
    bits.out
}

/// A PDF whose page content inflates to `len` bytes.
pub fn zlib_bomb_pdf(len: u64) -> Vec<u8> {
    pdf(
        &page_objects("/Filter /FlateDecode", &zlib_zeros(len), ""),
        "",
    )
}

/// A PDF whose page draws form X<depth>, which draws X<depth-1> twice, and so on: 2^depth forms
/// drawn, from a few kilobytes.
pub fn exponential_forms_pdf(depth: usize) -> Vec<u8> {
    let first_form = 6;
    let top = first_form + depth;
    let mut objects = page_objects("", b"/X Do", &format!("/XObject << /X {top} 0 R >>"));
    let form = "/Type /XObject /Subtype /Form /BBox [0 0 1 1]";
    objects.push(stream(form, b"q Q"));
    for k in 1..=depth {
        let below = first_form + k - 1;
        let dict = format!("{form} /Resources << /XObject << /X {below} 0 R >> >>");
        objects.push(stream(&dict, b"/X Do /X Do"));
    }
    pdf(&objects, "")
}

/// A PDF whose page draws a form that draws itself.
pub fn self_drawing_form_pdf() -> Vec<u8> {
    let mut objects = page_objects("", b"/X Do", "/XObject << /X 6 0 R >>");
    objects.push(stream(
        "/Type /XObject /Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << /X 6 0 R >> >>",
        b"/X Do",
    ));
    pdf(&objects, "")
}

#[test]
fn zlib_bomb_inflates_to_zeros() {
    // Checked against the zlib that pdf-extract uses, through its own document reader.
    let doc = pdf_extract::Document::load_mem(&zlib_bomb_pdf(100_000)).unwrap();
    let stream = doc.get_object((5, 0)).unwrap().as_stream().unwrap();
    let content = stream.decompressed_content().unwrap();
    assert_eq!(content.len(), 100_000);
    assert!(content.iter().all(|&b| b == 0));
}

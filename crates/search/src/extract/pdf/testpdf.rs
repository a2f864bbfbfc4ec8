//! Small PDFs written from scratch for unit tests.

/// A PDF from its objects (numbered from 1; object 1 is the catalog).
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
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
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
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

/// A one-page document: catalog, pages, page (font `font` as /F1), `font`, the page's
/// content stream, then `more` objects (from number 6).
pub fn one_page(font: &str, content: &[u8], more: &[Vec<u8>]) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
           /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
            .to_vec(),
        font.as_bytes().to_vec(),
        stream("", content),
    ];
    objects.extend_from_slice(more);
    pdf(&objects)
}

/// Prose enough for the quality gate to judge (a few hundred words).
pub const PROSE: &str = "Digital preservation keeps records readable for decades while \
    formats, software and storage change around them";

/// A page of [`PROSE`] lines in Helvetica (WinAnsi), well mapped.
pub fn good() -> Vec<u8> {
    let mut content = b"BT /F1 11 Tf 72 720 Td 13 TL\n".to_vec();
    for _ in 0..20 {
        content.extend_from_slice(format!("({PROSE}) Tj T*\n").as_bytes());
    }
    content.extend_from_slice(b"ET");
    one_page(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        &content,
        &[],
    )
}

/// A page of [`PROSE`] lines in a composite (`Identity-H`) font whose `ToUnicode` CMap maps
/// only the letters of "arca", so most glyphs have no Unicode text; the codes are the
/// characters' own code points as two bytes.
pub fn unmapped() -> Vec<u8> {
    let mut content = b"BT /F1 11 Tf 72 720 Td 13 TL\n".to_vec();
    for _ in 0..20 {
        content.push(b'<');
        for c in PROSE.chars() {
            content.extend_from_slice(format!("{:04X}", c as u32).as_bytes());
        }
        content.extend_from_slice(b"> Tj T*\n");
    }
    content.extend_from_slice(b"ET");
    let cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
        1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
        3 beginbfchar <0061> <0061> <0072> <0072> <0063> <0063> endbfchar\n\
        endcmap CMapName currentdict /CMap defineresource pop end end";
    one_page(
        "<< /Type /Font /Subtype /Type0 /BaseFont /Sub+Custom /Encoding /Identity-H \
         /DescendantFonts [7 0 R] /ToUnicode 6 0 R >>",
        &content,
        &[
            stream("", cmap),
            b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Sub+Custom \
               /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> \
               /FontDescriptor 8 0 R /DW 500 >>"
                .to_vec(),
            b"<< /Type /FontDescriptor /FontName /Sub+Custom /Flags 4 \
               /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 800 /Descent -200 \
               /CapHeight 700 /StemV 80 >>"
                .to_vec(),
        ],
    )
}

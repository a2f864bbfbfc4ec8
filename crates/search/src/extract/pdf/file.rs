//! A PDF file's structure: its cross-reference sections (tables and streams, with their
//! `/Prev` chain), objects read lazily by number (from the file or from object streams), and
//! stream data decoded (PDF 32000-1, 7.3.8, 7.4, 7.5).
//!
//! Only what text needs is ever read: images and font programs are never parsed or inflated.
//!
//! A file whose cross-reference sections cannot be read, or whose table puts an object where
//! it is not, is read as other readers read it: from where each `num gen obj` lies in the
//! file (the last one of a number wins, as an incremental update's does), the objects of the
//! object streams found there, and the last `trailer` (else an xref stream's dictionary, else
//! the `/Catalog`).

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::syntax::{is_delimiter, is_white, Dict, Lexer, Obj, Tok};
use super::PdfError;

/// Cross-reference sections followed through `/Prev` at most.
const MAX_SECTIONS: usize = 256;
/// Reference chains (`1 0 obj 2 0 R endobj`…) followed at most.
const MAX_REF_CHAIN: usize = 32;

/// Where an object is.
#[derive(Debug, Clone, Copy)]
enum Entry {
    /// At this byte offset of the file.
    Offset(usize),
    /// The `index`th object of object stream `stream`.
    InStream { stream: u32, index: u32 },
}

/// A parsed object stream: its decoded bytes and the offset of each object in it.
struct ObjStream {
    data: Rc<Vec<u8>>,
    offsets: Vec<(u32, usize)>,
}

/// A PDF file opened for reading.
pub struct File<'a> {
    data: &'a [u8],
    xref: HashMap<u32, Entry>,
    /// The newest trailer.
    pub trailer: Rc<Dict>,
    objects: RefCell<HashMap<u32, Obj>>,
    streams: RefCell<HashMap<u32, Rc<ObjStream>>>,
    /// Where each `num gen obj` of the file is, found by scanning it (only when needed).
    scanned: OnceCell<HashMap<u32, usize>>,
    /// Where each `endstream` is (only when a stream's length is wrong).
    endstreams: OnceCell<Vec<usize>>,
}

impl<'a> File<'a> {
    /// Opens `data`: reads the cross-reference sections, or where they are damaged, finds the
    /// objects by scanning the file. An encrypted file is [`PdfError::Unsupported`].
    pub fn open(data: &'a [u8]) -> Result<Self, PdfError> {
        if !data.starts_with(b"%PDF-") && find(&data[..data.len().min(1024)], b"%PDF-").is_none() {
            return Err(PdfError::corrupt("no PDF header"));
        }
        let file = match Self::open_by_xref(data) {
            Err(PdfError::Corrupt(why)) => Self::open_by_scan(data)
                .map_err(|e| PdfError::corrupt(format!("{why}; scanning the file: {e}")))?,
            other => other?,
        };
        if !matches!(file.trailer.get(b"Encrypt"), Obj::Null) {
            return Err(PdfError::Unsupported("the file is encrypted".into()));
        }
        Ok(file)
    }

    fn empty(data: &'a [u8]) -> Self {
        File {
            data,
            xref: HashMap::new(),
            trailer: Rc::new(Dict::default()),
            objects: RefCell::new(HashMap::new()),
            streams: RefCell::new(HashMap::new()),
            scanned: OnceCell::new(),
            endstreams: OnceCell::new(),
        }
    }

    /// Opens `data` by its cross-reference sections.
    fn open_by_xref(data: &'a [u8]) -> Result<Self, PdfError> {
        let start = startxref(data)?;
        let mut file = Self::empty(data);
        let mut seen = HashSet::new();
        let mut next = Some(start);
        let mut newest: Option<Rc<Dict>> = None;
        while let Some(at) = next.take() {
            if !seen.insert(at) || seen.len() > MAX_SECTIONS {
                break;
            }
            let trailer = file.read_section(at)?;
            if let Some(stm) = trailer.get(b"XRefStm").as_i64() {
                let stm = usize::try_from(stm).map_err(|_| PdfError::corrupt("a bad /XRefStm"))?;
                if seen.insert(stm) {
                    file.read_section(stm)?;
                }
            }
            next = trailer
                .get(b"Prev")
                .as_i64()
                .and_then(|p| usize::try_from(p).ok());
            newest.get_or_insert(trailer);
        }
        file.trailer = newest.ok_or_else(|| PdfError::corrupt("no trailer"))?;
        Ok(file)
    }

    /// Opens `data` from the objects found by scanning it (see the module docs).
    fn open_by_scan(data: &'a [u8]) -> Result<Self, PdfError> {
        let mut file = Self::empty(data);
        let offsets = scan_objects(data);
        file.xref = offsets
            .iter()
            .map(|(&num, &at)| (num, Entry::Offset(at)))
            .collect();
        let mut trailer = None;
        let mut end = data.len();
        let mut tries = 0;
        while let Some(at) = rfind(&data[..end], b"trailer") {
            tries += 1;
            if tries > MAX_SECTIONS {
                break;
            }
            end = at;
            if let Ok(Some(Obj::Dict(d))) = Lexer::new(data, at + 7).object() {
                if !matches!(d.get(b"Root"), Obj::Null) {
                    trailer = Some(d);
                    break;
                }
            }
        }
        // Newest first: the object streams and xref streams of the last update win.
        let mut by_offset: Vec<(u32, usize)> = offsets.into_iter().collect();
        by_offset.sort_unstable_by_key(|&(_, at)| std::cmp::Reverse(at));
        let (mut catalog, mut stream_trailer) = (None, None);
        let mut in_streams = Vec::new();
        for &(num, at) in &by_offset {
            let Ok((_, obj)) = file.parse_indirect(at) else {
                continue;
            };
            let dict = match &obj {
                Obj::Dict(d) | Obj::Stream(d, ..) => d,
                _ => continue,
            };
            match dict.get(b"Type").as_name() {
                Some(b"Catalog") => {
                    catalog.get_or_insert(num);
                }
                Some(b"XRef") if !matches!(dict.get(b"Root"), Obj::Null) => {
                    stream_trailer.get_or_insert_with(|| dict.clone());
                }
                Some(b"ObjStm") => in_streams.push(num),
                _ => {}
            }
        }
        for stream in in_streams {
            let Ok(os) = file.object_stream(stream) else {
                continue;
            };
            for (index, &(num, _)) in os.offsets.iter().enumerate() {
                file.xref.entry(num).or_insert(Entry::InStream {
                    stream,
                    index: index as u32,
                });
            }
        }
        file.trailer = match (trailer.or(stream_trailer), catalog) {
            (Some(t), _) => t,
            (None, Some(n)) => Rc::new(Dict(vec![(b"Root".to_vec(), Obj::Ref(n, 0))])),
            (None, None) => return Err(PdfError::corrupt("no trailer and no catalog")),
        };
        Ok(file)
    }

    /// Where the first `endstream` at or after `from` is: from an index of them all, made
    /// once, so that many streams with wrong lengths cost one pass over the file, not one
    /// each.
    fn next_endstream(&self, from: usize) -> Option<usize> {
        let ends = self
            .endstreams
            .get_or_init(|| memchr::memmem::find_iter(self.data, b"endstream").collect());
        ends.get(ends.partition_point(|&e| e < from)).copied()
    }

    /// Parses `num gen obj <object> [stream…endstream]` at `at`.
    fn parse_indirect(&self, at: usize) -> Result<(u32, Obj), PdfError> {
        parse_indirect(self.data, at, &|n| self.stream_length(n), &|from| {
            self.next_endstream(from)
        })
    }

    /// Where each `num gen obj` of the file is (scanned once, when first needed).
    fn scanned(&self) -> &HashMap<u32, usize> {
        self.scanned.get_or_init(|| scan_objects(self.data))
    }

    /// Reads the cross-reference section at `at` (a table or a stream); entries already known
    /// (from a newer section) are kept. Returns its trailer dictionary.
    fn read_section(&mut self, at: usize) -> Result<Rc<Dict>, PdfError> {
        let data = self.data;
        if at >= data.len() {
            return Err(PdfError::corrupt("startxref points past the end"));
        }
        let mut lx = Lexer::new(data, at);
        lx.skip_white();
        if data[lx.pos..].starts_with(b"xref") {
            lx.pos += 4;
            loop {
                match lx.next_tok()? {
                    Some(Tok::Keyword(b"trailer")) => break,
                    Some(Tok::Int(first)) => {
                        let Some(Tok::Int(count)) = lx.next_tok()? else {
                            return Err(PdfError::corrupt("a bad xref subsection"));
                        };
                        for i in 0..count.max(0) {
                            let (Some(Tok::Int(offset)), Some(Tok::Int(_gen)), Some(kind)) =
                                (lx.next_tok()?, lx.next_tok()?, lx.next_tok()?)
                            else {
                                return Err(PdfError::corrupt("a bad xref entry"));
                            };
                            let Ok(num) = u32::try_from(first + i) else {
                                continue;
                            };
                            if kind == Tok::Keyword(b"n") && offset > 0 {
                                self.xref
                                    .entry(num)
                                    .or_insert(Entry::Offset(offset as usize));
                            }
                        }
                    }
                    _ => return Err(PdfError::corrupt("a bad xref table")),
                }
            }
            return match lx.object()? {
                Some(Obj::Dict(d)) => Ok(d),
                _ => Err(PdfError::corrupt("a bad trailer")),
            };
        }
        // A cross-reference stream.
        let (_, obj) = self.parse_indirect(at)?;
        let Obj::Stream(dict, start, end) = obj else {
            return Err(PdfError::corrupt(
                "startxref points at neither a table nor a stream",
            ));
        };
        if dict.get(b"Type").as_name() != Some(b"XRef") {
            return Err(PdfError::corrupt("the xref stream is not /Type /XRef"));
        }
        let bytes = decode_stream(&dict, &data[start..end])?;
        let w: Vec<usize> = match dict.get(b"W") {
            Obj::Array(a) if a.len() == 3 => a
                .iter()
                .map(|o| {
                    o.as_i64()
                        .and_then(|v| usize::try_from(v).ok())
                        .unwrap_or(0)
                })
                .collect(),
            _ => return Err(PdfError::corrupt("a bad /W")),
        };
        if w.iter().any(|&x| x > 8) {
            return Err(PdfError::corrupt("a bad /W"));
        }
        let size = dict.get(b"Size").as_i64().unwrap_or(0);
        let index: Vec<i64> = match dict.get(b"Index") {
            Obj::Array(a) => a.iter().filter_map(Obj::as_i64).collect(),
            _ => vec![0, size],
        };
        let row = w[0] + w[1] + w[2];
        if row == 0 {
            return Err(PdfError::corrupt("a bad /W"));
        }
        let mut rows = bytes.chunks_exact(row);
        for pair in index.chunks_exact(2) {
            for i in 0..pair[1].max(0) {
                let Some(r) = rows.next() else { break };
                let field = |from: usize, len: usize| {
                    r[from..from + len]
                        .iter()
                        .fold(0u64, |acc, &b| acc << 8 | u64::from(b))
                };
                let kind = if w[0] == 0 { 1 } else { field(0, w[0]) };
                let (a, b) = (field(w[0], w[1]), field(w[0] + w[1], w[2]));
                let Ok(num) = u32::try_from(pair[0] + i) else {
                    continue;
                };
                let entry = match kind {
                    1 if a > 0 => Entry::Offset(a as usize),
                    2 => Entry::InStream {
                        stream: a as u32,
                        index: b as u32,
                    },
                    _ => continue,
                };
                self.xref.entry(num).or_insert(entry);
            }
        }
        Ok(dict)
    }

    /// The `/Length` of a stream given by reference: the integer object `num`, if it sits at
    /// an offset (a stream's length is never in an object stream).
    fn stream_length(&self, num: u32) -> Option<i64> {
        let Entry::Offset(at) = *self.xref.get(&num)? else {
            return None;
        };
        let mut lx = Lexer::new(self.data, at);
        let (Ok(Some(Tok::Int(_))), Ok(Some(Tok::Int(_))), Ok(Some(Tok::Keyword(b"obj")))) =
            (lx.next_tok(), lx.next_tok(), lx.next_tok())
        else {
            return None;
        };
        match lx.next_tok() {
            Ok(Some(Tok::Int(n))) => Some(n),
            _ => None,
        }
    }

    /// Object `num` (`Null` if it does not exist).
    pub fn object(&self, num: u32) -> Result<Obj, PdfError> {
        if let Some(o) = self.objects.borrow().get(&num) {
            return Ok(o.clone());
        }
        let obj = match self.xref.get(&num) {
            None => Obj::Null,
            Some(&Entry::Offset(at)) => {
                match self.parse_indirect(at) {
                    Ok((found, obj)) if found == num => obj,
                    // A table that puts the object elsewhere: where the file has it.
                    wrong => match self.scanned().get(&num) {
                        Some(&real) if real != at => self.parse_indirect(real)?.1,
                        _ => {
                            let found = wrong?.0;
                            return Err(PdfError::corrupt(format!(
                                "the xref says object {num} is at {at}, but object {found} is there"
                            )));
                        }
                    },
                }
            }
            Some(&Entry::InStream { stream, index }) => self.in_stream(stream, index, num)?,
        };
        self.objects.borrow_mut().insert(num, obj.clone());
        Ok(obj)
    }

    fn in_stream(&self, stream: u32, index: u32, num: u32) -> Result<Obj, PdfError> {
        let os = self.object_stream(stream)?;
        let at = match os.offsets.get(index as usize) {
            Some(&(n, at)) if n == num => at,
            _ => match os.offsets.iter().find(|(n, _)| *n == num) {
                Some(&(_, at)) => at,
                None => return Ok(Obj::Null),
            },
        };
        let mut lx = Lexer::new(&os.data, at);
        Ok(lx.object()?.unwrap_or(Obj::Null))
    }

    fn object_stream(&self, stream: u32) -> Result<Rc<ObjStream>, PdfError> {
        if let Some(os) = self.streams.borrow().get(&stream) {
            return Ok(os.clone());
        }
        let Some(&Entry::Offset(_)) = self.xref.get(&stream) else {
            return Err(PdfError::corrupt(
                "an object stream inside an object stream",
            ));
        };
        let Obj::Stream(dict, start, end) = self.object(stream)? else {
            return Err(PdfError::corrupt("an object stream is not a stream"));
        };
        let data = decode_stream(&dict, &self.data[start..end])?;
        let n = dict.get(b"N").as_i64().unwrap_or(0).max(0) as usize;
        let first = dict.get(b"First").as_i64().unwrap_or(0).max(0) as usize;
        let mut lx = Lexer::new(&data, 0);
        let mut offsets = Vec::with_capacity(n.min(100_000));
        for _ in 0..n {
            match (lx.next_tok()?, lx.next_tok()?) {
                (Some(Tok::Int(num)), Some(Tok::Int(off))) if num >= 0 && off >= 0 => {
                    offsets.push((num as u32, first + off as usize));
                }
                _ => break,
            }
        }
        let os = Rc::new(ObjStream {
            data: Rc::new(data),
            offsets,
        });
        self.streams.borrow_mut().insert(stream, os.clone());
        Ok(os)
    }

    /// `obj` with references followed.
    pub fn resolve(&self, obj: &Obj) -> Result<Obj, PdfError> {
        let mut obj = obj.clone();
        for _ in 0..MAX_REF_CHAIN {
            match obj {
                Obj::Ref(num, _) => obj = self.object(num)?,
                other => return Ok(other),
            }
        }
        Err(PdfError::corrupt("references chain too long"))
    }

    /// `dict[key]` with references followed.
    pub fn get(&self, dict: &Dict, key: &[u8]) -> Result<Obj, PdfError> {
        match dict.get(key) {
            r @ Obj::Ref(..) => self.resolve(r),
            other => Ok(other.clone()),
        }
    }

    /// A stream's data, decoded (`Null` or a non-stream give an error).
    pub fn stream_data(&self, obj: &Obj) -> Result<Vec<u8>, PdfError> {
        match self.resolve(obj)? {
            Obj::Stream(dict, start, end) => decode_stream(&dict, &self.data[start..end]),
            _ => Err(PdfError::corrupt("expected a stream")),
        }
    }
}

/// The offset `startxref` names: the last one, looked for in the last 2 KiB and then, as some
/// writers pad files after `%%EOF`, in the whole file.
fn startxref(data: &[u8]) -> Result<usize, PdfError> {
    let tail_start = data.len().saturating_sub(2048);
    let at = rfind(&data[tail_start..], b"startxref")
        .map(|at| tail_start + at)
        .or_else(|| rfind(&data[..tail_start], b"startxref"))
        .ok_or_else(|| PdfError::corrupt("no startxref"))?;
    let mut lx = Lexer::new(data, at + 9);
    match lx.next_tok()? {
        Some(Tok::Int(n)) if n >= 0 => Ok(n as usize),
        _ => Err(PdfError::corrupt("a bad startxref")),
    }
}

/// Where each `num gen obj` of `data` starts, by object number; a later one of a number
/// replaces an earlier one. A `obj` keyword counts when white space or a delimiter follows it
/// and two unsigned integers separated by white space precede it.
fn scan_objects(data: &[u8]) -> HashMap<u32, usize> {
    let mut out = HashMap::new();
    let digits_back = |mut i: usize| {
        let end = i;
        while i > 0 && data[i - 1].is_ascii_digit() {
            i -= 1;
        }
        (i < end).then_some(i)
    };
    let white_back = |mut i: usize| {
        let end = i;
        while i > 0 && is_white(data[i - 1]) {
            i -= 1;
        }
        (i < end).then_some(i)
    };
    for at in memchr::memmem::find_iter(data, b"obj") {
        if data
            .get(at + 3)
            .is_some_and(|&c| !is_white(c) && !is_delimiter(c))
        {
            continue;
        }
        let Some(num_start) = white_back(at)
            .and_then(digits_back)
            .and_then(white_back)
            .and_then(digits_back)
        else {
            continue;
        };
        if num_start > 0 && !is_white(data[num_start - 1]) && !is_delimiter(data[num_start - 1]) {
            continue;
        }
        let digits = &data[num_start..];
        let len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        if let Some(num) = std::str::from_utf8(&digits[..len])
            .ok()
            .and_then(|d| d.parse::<u32>().ok())
        {
            out.insert(num, num_start);
        }
    }
    out
}

/// Parses `num gen obj <object> [stream…endstream]` at `at`; `length` resolves an indirect
/// `/Length`, `next_endstream` finds the first `endstream` from a position (for a stream
/// whose length is wrong).
fn parse_indirect(
    data: &[u8],
    at: usize,
    length: &dyn Fn(u32) -> Option<i64>,
    next_endstream: &dyn Fn(usize) -> Option<usize>,
) -> Result<(u32, Obj), PdfError> {
    let mut lx = Lexer::new(data, at);
    let num = match (lx.next_tok()?, lx.next_tok()?, lx.next_tok()?) {
        (Some(Tok::Int(num)), Some(Tok::Int(_)), Some(Tok::Keyword(b"obj"))) => num,
        _ => return Err(PdfError::corrupt(format!("no object at offset {at}"))),
    };
    let num = u32::try_from(num).map_err(|_| PdfError::corrupt("a bad object number"))?;
    let obj = lx.object()?.unwrap_or(Obj::Null);
    let Obj::Dict(dict) = obj else {
        return Ok((num, obj));
    };
    if !matches!(lx.next_tok()?, Some(Tok::Keyword(b"stream"))) {
        return Ok((num, Obj::Dict(dict)));
    }
    // The data starts after the end of line that follows `stream`.
    let mut start = lx.pos;
    if data.get(start) == Some(&b'\r') {
        start += 1;
    }
    if data.get(start) == Some(&b'\n') {
        start += 1;
    }
    let declared = match dict.get(b"Length") {
        Obj::Int(n) => Some(*n),
        Obj::Ref(n, _) => length(*n),
        _ => None,
    };
    let ends_well = |end: usize| {
        let mut p = end;
        while p < data.len() && is_white(data[p]) {
            p += 1;
        }
        data[p.min(data.len())..].starts_with(b"endstream")
    };
    let end = match declared.and_then(|n| usize::try_from(n).ok()) {
        Some(n) if start + n <= data.len() && ends_well(start + n) => start + n,
        // A wrong or missing length: the data runs to `endstream`.
        _ => {
            let mut end = next_endstream(start)
                .ok_or_else(|| PdfError::corrupt("a stream without endstream"))?;
            if end > start && data[end - 1] == b'\n' {
                end -= 1;
            }
            if end > start && data[end - 1] == b'\r' {
                end -= 1;
            }
            end
        }
    };
    Ok((num, Obj::Stream(dict, start, end)))
}

/// A stream's data through its filters.
pub fn decode_stream(dict: &Dict, raw: &[u8]) -> Result<Vec<u8>, PdfError> {
    let filters: Vec<&[u8]> = match dict.get(b"Filter") {
        Obj::Null => return Ok(raw.to_vec()),
        Obj::Name(n) => vec![n],
        Obj::Array(a) => a.iter().filter_map(Obj::as_name).collect(),
        _ => return Err(PdfError::corrupt("a bad /Filter")),
    };
    let params: Vec<Option<&Dict>> = match dict.get(b"DecodeParms") {
        Obj::Dict(d) => vec![Some(d)],
        Obj::Array(a) => a.iter().map(|o| o.as_dict().map(|d| &**d)).collect(),
        _ => Vec::new(),
    };
    let mut data = Cow::Borrowed(raw);
    for (i, filter) in filters.iter().enumerate() {
        let param = params.get(i).copied().flatten();
        data = Cow::Owned(match *filter {
            b"FlateDecode" | b"Fl" => predict(inflate(&data)?, param)?,
            b"LZWDecode" | b"LZW" => predict(lzw(&data, param), param)?,
            b"ASCIIHexDecode" | b"AHx" => ascii_hex(&data)?,
            b"ASCII85Decode" | b"A85" => ascii85(&data)?,
            other => {
                return Err(PdfError::Unsupported(format!(
                    "the filter {}",
                    String::from_utf8_lossy(other)
                )))
            }
        });
    }
    Ok(data.into_owned())
}

/// LZW data decoded (7.4.4): codes of 9 to 12 bits, most significant bit first; 256 clears
/// the table, 257 ends the data; with `/EarlyChange 1` (the default) codes widen one entry
/// early. Data cut short or damaged yields what was decoded before.
fn lzw(data: &[u8], param: Option<&Dict>) -> Vec<u8> {
    const CLEAR: usize = 256;
    const END: usize = 257;
    let early = param.map_or(1, |p| p.get(b"EarlyChange").as_i64().unwrap_or(1)) != 0;
    // Entry i: (its prefix entry, its last byte, its first byte, its length).
    let mut table: Vec<(u16, u8, u8, u16)> = Vec::with_capacity(4096);
    let reset = |table: &mut Vec<(u16, u8, u8, u16)>| {
        table.clear();
        table.extend((0..=255u8).map(|b| (0, b, b, 1)));
        table.extend([(0, 0, 0, 0), (0, 0, 0, 0)]);
    };
    reset(&mut table);
    let mut out = Vec::with_capacity(data.len().saturating_mul(3));
    let (mut acc, mut bits, mut width) = (0u32, 0u32, 9u32);
    let mut prev: Option<usize> = None;
    let mut bytes = data.iter();
    loop {
        while bits < width {
            let Some(&b) = bytes.next() else {
                return out;
            };
            acc = acc << 8 | u32::from(b);
            bits += 8;
        }
        let code = ((acc >> (bits - width)) & ((1 << width) - 1)) as usize;
        bits -= width;
        acc &= (1 << bits) - 1;
        if code == CLEAR {
            reset(&mut table);
            width = 9;
            prev = None;
            continue;
        }
        if code == END {
            return out;
        }
        let first = match (prev, code.cmp(&table.len())) {
            (_, std::cmp::Ordering::Less) if table[code].3 > 0 => {
                emit(&table, code, &mut out);
                table[code].2
            }
            // The entry being defined: the previous one and its own first byte.
            (Some(p), std::cmp::Ordering::Equal) => {
                let first = table[p].2;
                emit(&table, p, &mut out);
                out.push(first);
                first
            }
            _ => return out,
        };
        if let Some(p) = prev {
            if table.len() < 4096 {
                let (_, _, p_first, p_len) = table[p];
                table.push((p as u16, first, p_first, p_len.saturating_add(1)));
            }
        }
        if table.len() + usize::from(early) >= 1 << width && width < 12 {
            width += 1;
        }
        prev = Some(code);
    }
}

/// Appends the bytes of LZW table entry `code` to `out`.
fn emit(table: &[(u16, u8, u8, u16)], code: usize, out: &mut Vec<u8>) {
    let len = table[code].3 as usize;
    let start = out.len();
    out.resize(start + len, 0);
    let mut at = code;
    for slot in out[start..].iter_mut().rev() {
        let (prefix, byte, _, _) = table[at];
        *slot = byte;
        at = prefix as usize;
    }
}

/// zlib data, inflated; data cut short yields what was inflated before the cut. Data without
/// the zlib header (some writers omit it) is inflated as raw deflate.
fn inflate(data: &[u8]) -> Result<Vec<u8>, PdfError> {
    inflate_as(data, true).or_else(|e| {
        inflate_as(data, false)
            .map_err(|_| PdfError::corrupt(format!("cannot inflate a stream: {e}")))
    })
}

/// Inflates `data` (zlib if `zlib_header`, else raw deflate) straight from the slice into one
/// growing buffer. Damage or a cut after some output yields that output. A buffer that cannot
/// grow fails as any other allocation does: a zlib bomb that hits the worker's address-space
/// limit ends the worker with "memory allocation of N bytes failed", which the parent reports.
fn inflate_as(data: &[u8], zlib_header: bool) -> Result<Vec<u8>, flate2::DecompressError> {
    use flate2::Decompress;
    thread_local! {
        /// A decompressor kept for the thread's next stream: a new one allocates and clears
        /// its 32 KiB window (a document has hundreds of streams).
        static DECOMPRESS: std::cell::RefCell<Option<Decompress>> =
            const { std::cell::RefCell::new(None) };
    }
    DECOMPRESS.with(|cell| {
        let mut kept = cell.borrow_mut();
        let z = match kept.as_mut() {
            Some(z) => {
                z.reset(zlib_header);
                z
            }
            None => kept.insert(Decompress::new(zlib_header)),
        };
        inflate_with(z, data)
    })
}

/// Inflates `data` with `z` (fresh or reset), as [`inflate_as`] says.
fn inflate_with(
    z: &mut flate2::Decompress,
    data: &[u8],
) -> Result<Vec<u8>, flate2::DecompressError> {
    use flate2::{FlushDecompress, Status};
    let mut out = Vec::with_capacity(data.len().saturating_mul(4).max(256));
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity());
        }
        let (read, written) = (z.total_in(), z.total_out());
        let rest = &data[read as usize..];
        match z.decompress_vec(rest, &mut out, FlushDecompress::None) {
            Ok(Status::StreamEnd) => return Ok(out),
            // No progress with room to write: the input ended (or stopped making sense).
            Ok(_) if z.total_in() == read && z.total_out() == written => return Ok(out),
            Ok(_) => {}
            Err(_) if !out.is_empty() => return Ok(out),
            Err(e) => return Err(e),
        }
    }
}

/// Undoes a PNG predictor (`/Predictor` ≥ 10); TIFF's (2) is unsupported.
fn predict(data: Vec<u8>, params: Option<&Dict>) -> Result<Vec<u8>, PdfError> {
    let Some(p) = params else { return Ok(data) };
    let predictor = p.get(b"Predictor").as_i64().unwrap_or(1);
    if predictor < 2 {
        return Ok(data);
    }
    if predictor == 2 {
        return Err(PdfError::Unsupported("the TIFF predictor".into()));
    }
    let colors = p.get(b"Colors").as_i64().unwrap_or(1).clamp(1, 32) as usize;
    let bits = p
        .get(b"BitsPerComponent")
        .as_i64()
        .unwrap_or(8)
        .clamp(1, 16) as usize;
    let columns = p.get(b"Columns").as_i64().unwrap_or(1).clamp(1, 1 << 20) as usize;
    let bpp = (colors * bits).div_ceil(8).max(1);
    let row = (colors * bits * columns).div_ceil(8);
    let mut out = Vec::with_capacity(data.len());
    let mut prev = vec![0u8; row];
    for chunk in data.chunks(row + 1) {
        if chunk.len() < 2 {
            break;
        }
        let kind = chunk[0];
        let mut cur = chunk[1..].to_vec();
        cur.resize(row, 0);
        for i in 0..row {
            let left = if i >= bpp { cur[i - bpp] } else { 0 };
            let up = prev[i];
            let up_left = if i >= bpp { prev[i - bpp] } else { 0 };
            cur[i] = cur[i].wrapping_add(match kind {
                0 => 0,
                1 => left,
                2 => up,
                3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
                4 => paeth(left, up, up_left),
                _ => return Err(PdfError::corrupt("a bad PNG predictor row")),
            });
        }
        out.extend_from_slice(&cur);
        prev = cur;
    }
    Ok(out)
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

fn ascii_hex(data: &[u8]) -> Result<Vec<u8>, PdfError> {
    let mut out = Vec::with_capacity(data.len() / 2);
    let mut high: Option<u8> = None;
    for &c in data {
        if c == b'>' {
            break;
        }
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ if is_white(c) => continue,
            _ => return Err(PdfError::corrupt("bad ASCIIHex data")),
        };
        match high.take() {
            Some(h) => out.push(h << 4 | v),
            None => high = Some(v),
        }
    }
    if let Some(h) = high {
        out.push(h << 4);
    }
    Ok(out)
}

fn ascii85(data: &[u8]) -> Result<Vec<u8>, PdfError> {
    let mut out = Vec::with_capacity(data.len() * 4 / 5);
    let mut group = [0u8; 5];
    let mut n = 0;
    let data = data.strip_prefix(b"<~").unwrap_or(data);
    for &c in data {
        match c {
            b'~' => break,
            b'z' if n == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group[n] = c - b'!';
                n += 1;
                if n == 5 {
                    let v = group.iter().fold(0u64, |acc, &d| acc * 85 + u64::from(d));
                    out.extend_from_slice(&(v as u32).to_be_bytes());
                    n = 0;
                }
            }
            _ if is_white(c) => {}
            _ => return Err(PdfError::corrupt("bad ASCII85 data")),
        }
    }
    if n > 1 {
        for d in group.iter_mut().skip(n) {
            *d = 84;
        }
        let v = group.iter().fold(0u64, |acc, &d| acc * 85 + u64::from(d));
        out.extend_from_slice(&(v as u32).to_be_bytes()[..n - 1]);
    }
    Ok(out)
}

/// The first position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::rfind(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::super::{extract, testpdf};
    use super::*;

    fn first_line(data: &[u8]) -> String {
        let text = extract(data, 1 << 20).unwrap();
        text.lines().next().unwrap_or_default().to_owned()
    }

    #[test]
    fn startxref_is_found_before_long_padding() {
        let mut data = testpdf::good();
        data.extend(std::iter::repeat_n(0u8, 4096));
        assert_eq!(first_line(&data), testpdf::PROSE);
    }

    #[test]
    fn shifted_xref_offsets_are_repaired_by_scanning() {
        // Bytes inserted after the header: startxref and every table offset are 16 bytes off.
        let good = testpdf::good();
        let header = good.iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut data = good[..header].to_vec();
        data.extend_from_slice(b"%arca broken xr\n");
        data.extend_from_slice(&good[header..]);
        assert_eq!(first_line(&data), testpdf::PROSE);
        // No cross-reference table at all, nor a trailer: the catalog is found.
        let cut = find(&good, b"xref\n0 ").unwrap();
        assert_eq!(first_line(&good[..cut]), testpdf::PROSE);
    }

    #[test]
    fn a_table_that_misplaces_one_object_is_repaired_for_it() {
        // The table is read, but it puts object 5 (the content stream) at object 4's offset.
        let good = testpdf::good();
        let offset_of = |num: usize| {
            let at = find(&good, format!("\n{num} 0 obj").as_bytes()).unwrap() + 1;
            format!("{at:010} 00000 n ")
        };
        let (four, five) = (offset_of(4), offset_of(5));
        let table = find(&good, b"xref\n0 ").unwrap();
        let mut data = good.clone();
        let at = table + find(&good[table..], five.as_bytes()).unwrap();
        data[at..at + five.len()].copy_from_slice(four.as_bytes());
        assert_eq!(first_line(&data), testpdf::PROSE);
    }

    /// LZW-encodes `data` as PDF writers do (9–12-bit codes, EarlyChange 1, a clear code
    /// first and when the table is full, an end code).
    fn lzw_encode(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u64, 0u32);
        let mut put = |code: usize, width: u32, out: &mut Vec<u8>| {
            acc = acc << width | code as u64;
            bits += width;
            while bits >= 8 {
                out.push((acc >> (bits - 8)) as u8);
                bits -= 8;
            }
        };
        let mut table: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut width = 9;
        put(256, width, &mut out);
        let mut current: Vec<u8> = Vec::new();
        for &b in data {
            let mut next = current.clone();
            next.push(b);
            if next.len() == 1 || table.contains_key(&next) {
                current = next;
                continue;
            }
            let code = if current.len() == 1 {
                current[0] as usize
            } else {
                table[&current]
            };
            put(code, width, &mut out);
            let size = 258 + table.len();
            if size < 4096 {
                table.insert(next, size);
                if size + 1 >= 1 << width && width < 12 {
                    width += 1;
                }
            } else {
                put(256, width, &mut out);
                table.clear();
                width = 9;
            }
            current = vec![b];
        }
        if !current.is_empty() {
            let code = if current.len() == 1 {
                current[0] as usize
            } else {
                table[&current]
            };
            put(code, width, &mut out);
            if 258 + table.len() + 1 >= 1 << width && width < 12 {
                width += 1;
            }
        }
        put(257, width, &mut out);
        put(0, 7, &mut out);
        out
    }

    #[test]
    fn lzw_decodes_the_specifications_example_and_long_data() {
        // PDF 32000-1, 7.4.4.2.
        let spec = [0x80, 0x0B, 0x60, 0x50, 0x22, 0x0C, 0x0C, 0x85, 0x01];
        assert_eq!(
            lzw(&spec, None),
            b"\x2d\x2d\x2d\x2d\x2d\x41\x2d\x2d\x2d\x42"
        );
        assert_eq!(lzw_encode(b"-----A---B")[..9], spec);
        // Long enough to widen the codes to 12 bits and clear the table.
        let text: Vec<u8> = (0..60_000u32)
            .flat_map(|i| format!("{} ", i * 7919 % 1000).into_bytes())
            .collect();
        assert_eq!(lzw(&lzw_encode(&text), None), text);
        // Cut short: what was decoded before the cut.
        let whole = lzw_encode(&text);
        let part = lzw(&whole[..whole.len() / 2], None);
        assert!(text.starts_with(&part) && part.len() > text.len() / 4);
    }

    #[test]
    fn an_lzw_content_stream_is_read() {
        let content = format!("BT /F1 11 Tf 72 720 Td ({}) Tj ET", testpdf::PROSE);
        let data = testpdf::pdf(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> \
               /Contents 5 0 R >>"
                .to_vec(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
            testpdf::stream("/Filter /LZWDecode", &lzw_encode(content.as_bytes())),
        ]);
        assert_eq!(first_line(&data), testpdf::PROSE);
    }

    #[test]
    fn many_streams_without_endstream_cost_one_pass() {
        // Found by reasoning about the repair, not by the fuzzer (its inputs are too small to
        // time out): each stream's wrong /Length sent a search for `endstream` to the end of
        // the file, once per stream — 100,000 streams over 4 MB took minutes in a debug build.
        let mut data = b"%PDF-1.4\n".to_vec();
        for i in 1..100_000 {
            data.extend_from_slice(
                format!("{i} 0 obj <</Length 99999999>> stream\nxx\n").as_bytes(),
            );
        }
        data.extend_from_slice(b"trailer <</Root 1 0 R>>\n");
        let started = std::time::Instant::now();
        assert!(matches!(extract(&data, 1 << 20), Err(PdfError::Corrupt(_))));
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn scanning_finds_each_objects_last_definition() {
        let data =
            b"%PDF-1.4\n1 0 obj <<>> endobj\n12 0 obj 5 endobj 1 0 obj\n(x)\nendobj x2 0 obj";
        let found = scan_objects(data);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[&12], 29);
        assert_eq!(found[&1], 47);
    }

    #[test]
    fn ascii_filters() {
        assert_eq!(ascii_hex(b"48 65 6c 6C6>").unwrap(), b"Hell`");
        assert_eq!(ascii85(b"<~87cURD]i,\"Ebo80~>").unwrap(), b"Hello World!");
    }

    #[test]
    fn png_up_predictor() {
        let params = Dict(vec![
            (b"Predictor".to_vec(), Obj::Int(12)),
            (b"Columns".to_vec(), Obj::Int(2)),
        ]);
        let data = vec![2, 1, 2, 2, 1, 1];
        assert_eq!(predict(data, Some(&params)).unwrap(), vec![1, 2, 2, 3]);
    }

    /// `len` bytes that compress well but not trivially (a content stream's kind of text).
    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"BT /F1 9 Tf (word) Tj ET 0.5 0 Td "[i % 33] ^ (i / 997) as u8)
            .collect()
    }

    fn compress(data: &[u8], zlib_header: bool) -> Vec<u8> {
        use std::io::Write;
        let level = flate2::Compression::default();
        if zlib_header {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), level);
            z.write_all(data).unwrap();
            z.finish().unwrap()
        } else {
            let mut z = flate2::write::DeflateEncoder::new(Vec::new(), level);
            z.write_all(data).unwrap();
            z.finish().unwrap()
        }
    }

    #[test]
    fn inflates_zlib_and_raw_deflate_of_any_ratio() {
        // From a few bytes to far more than the first guess of four times the input.
        for len in [0, 1, 300, 70_000, 3 << 20] {
            let data = sample(len);
            assert_eq!(
                inflate(&compress(&data, true)).unwrap(),
                data,
                "zlib, {len} bytes"
            );
            assert_eq!(
                inflate(&compress(&data, false)).unwrap(),
                data,
                "raw, {len} bytes"
            );
        }
        let zeros = vec![0u8; 1 << 20];
        assert_eq!(inflate(&compress(&zeros, true)).unwrap(), zeros);
    }

    #[test]
    fn a_cut_stream_yields_what_came_before_the_cut() {
        let data = sample(200_000);
        let packed = compress(&data, true);
        let cut = inflate(&packed[..packed.len() / 2]).unwrap();
        assert!(
            !cut.is_empty() && cut.len() < data.len(),
            "{} bytes",
            cut.len()
        );
        assert_eq!(cut[..], data[..cut.len()]);
    }

    #[test]
    fn what_is_not_deflate_is_corrupt() {
        let err = inflate(b"\xff\xfe this is not compressed data at all").unwrap_err();
        assert!(
            matches!(&err, PdfError::Corrupt(why) if why.starts_with("cannot inflate")),
            "{err:?}"
        );
    }

    #[test]
    fn filters_apply_in_order_and_unfiltered_data_is_kept() {
        let data = sample(5_000);
        let packed: String = compress(&data, true)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let dict = Dict(vec![(
            b"Filter".to_vec(),
            Obj::Array(vec![
                Obj::Name(b"ASCIIHexDecode".to_vec()),
                Obj::Name(b"FlateDecode".to_vec()),
            ]),
        )]);
        assert_eq!(decode_stream(&dict, packed.as_bytes()).unwrap(), data);
        assert_eq!(
            decode_stream(&Dict(Vec::new()), b"as is").unwrap(),
            b"as is"
        );
    }
}

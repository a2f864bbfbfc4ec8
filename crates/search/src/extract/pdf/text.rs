//! The content-stream interpreter: pages in order, the text operators (PDF 32000-1, 9.3–9.4),
//! form XObjects, and where words and lines break.
//!
//! Only what places text is tracked: the text matrix and line matrix, font and size, character
//! and word spacing, horizontal scaling and leading, saved and restored with `q`/`Q`. A string
//! shown after a gap wider than [`WORD_GAP`] of the font size starts a new word; one on another
//! baseline a new line. The current transformation matrix is not tracked: gaps are compared in
//! the text matrix's space, where they keep their proportion to the font size.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::file::{find, File};
use super::font::Font;
use super::quality::Quality;
use super::syntax::{is_white, Dict, Lexer, Obj, Tok};
use super::PdfError;

/// A horizontal gap wider than this share of the font size separates words.
const WORD_GAP: f32 = 0.15;
/// A baseline moved by more than this share of the font size starts a new line.
const LINE_GAP: f32 = 0.5;
/// A baseline moved by more than this share (a superscript, a subscript) separates words.
const RISE_GAP: f32 = 0.2;
/// Form XObjects nested deeper than this make the document unreadable here.
const MAX_FORM_DEPTH: usize = 16;
/// Pages tree nodes visited at most.
const MAX_NODES: usize = 1 << 20;
/// Operands kept before an operator at most (more are dropped).
const MAX_OPERANDS: usize = 256;
/// `q` nesting kept at most.
const MAX_SAVES: usize = 256;
/// Annotations of a page drawn at most.
const MAX_ANNOTS: usize = 4096;

/// An operand of a content-stream operator.
#[derive(Debug)]
enum Operand<'d> {
    Num(f32),
    Str(Cow<'d, [u8]>),
    Name(Cow<'d, [u8]>),
    /// An array: its items are `items[start..end]` of the operator's array items.
    Array(usize, usize),
    /// A dictionary, or anything else text does not need.
    Other,
}

impl Operand<'_> {
    fn num(&self) -> f32 {
        match self {
            Operand::Num(n) => *n,
            _ => 0.0,
        }
    }
}

type Matrix = [f32; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// The state `q` saves that text depends on.
#[derive(Clone)]
struct TextState {
    font: Option<Rc<Font>>,
    size: f32,
    char_spacing: f32,
    word_spacing: f32,
    scale: f32,
    leading: f32,
}

impl Default for TextState {
    fn default() -> Self {
        TextState {
            font: None,
            size: 0.0,
            char_spacing: 0.0,
            word_spacing: 0.0,
            scale: 1.0,
            leading: 0.0,
        }
    }
}

/// Extracts the text of every page of `file` into a string of at most `max` bytes.
pub struct Extraction<'f, 'a> {
    file: &'f File<'a>,
    fonts: HashMap<u32, Rc<Font>>,
    out: String,
    max: usize,
    full: bool,
    forms: Vec<u32>,
    ts: TextState,
    saved: Vec<TextState>,
    tm: Matrix,
    tlm: Matrix,
    /// Where the last glyph ended and the font size there (text matrix space).
    last: Option<(f32, f32, f32)>,
    /// Where the hyphen is when the text ends with a letter, a hyphen and a line break: a
    /// line that starts with a lower-case letter joins the word again.
    hyphen: Option<usize>,
    /// Codes shown and codes without text (the rest of the quality is counted on the text).
    quality: Quality,
}

impl<'f, 'a> Extraction<'f, 'a> {
    /// Text of `file`, at most `max` bytes.
    pub fn new(file: &'f File<'a>, max: usize) -> Self {
        Extraction {
            file,
            fonts: HashMap::new(),
            out: String::new(),
            max,
            full: false,
            forms: Vec::new(),
            ts: TextState::default(),
            saved: Vec::new(),
            tm: IDENTITY,
            tlm: IDENTITY,
            last: None,
            hyphen: None,
            quality: Quality::default(),
        }
    }

    /// Runs every page; returns the text, and how many codes were shown and unmapped.
    pub fn run(mut self) -> Result<(String, Quality), PdfError> {
        let file = self.file;
        let root = match file.get(&file.trailer, b"Root")? {
            Obj::Dict(d) => d,
            _ => return Err(PdfError::corrupt("no document catalog")),
        };
        let pages = file.get(&root, b"Pages")?;
        let Some(pages) = pages.as_dict().cloned() else {
            return Err(PdfError::corrupt("no pages"));
        };
        // Depth first, in order; (node, inherited resources).
        let mut stack: Vec<(Rc<Dict>, Option<Rc<Dict>>)> = vec![(pages, None)];
        let mut seen: HashSet<u32> = HashSet::new();
        let mut nodes = 0;
        while let Some((node, inherited)) = stack.pop() {
            nodes += 1;
            if nodes > MAX_NODES {
                return Err(PdfError::corrupt("too many page tree nodes"));
            }
            let resources = match file.get(&node, b"Resources")? {
                Obj::Dict(d) => Some(d),
                _ => inherited,
            };
            if let Obj::Array(kids) = file.get(&node, b"Kids")? {
                for kid in kids.iter().rev() {
                    if let Obj::Ref(n, _) = kid {
                        if !seen.insert(*n) {
                            continue;
                        }
                    }
                    if let Obj::Dict(d) = file.resolve(kid)? {
                        stack.push((d, resources.clone()));
                    }
                }
                continue;
            }
            self.page(&node, resources)?;
            if self.full {
                break;
            }
        }
        Ok((self.out, self.quality))
    }

    fn page(&mut self, page: &Dict, resources: Option<Rc<Dict>>) -> Result<(), PdfError> {
        let contents = self.file.get(page, b"Contents")?;
        let data = match contents {
            Obj::Array(parts) => {
                let mut data = Vec::new();
                for part in &parts {
                    if let Ok(d) = self.file.stream_data(part) {
                        data.extend_from_slice(&d);
                        data.push(b'\n');
                    }
                }
                data
            }
            s @ Obj::Stream(..) => self.file.stream_data(&s)?,
            // No content: only annotations, if any.
            _ => Vec::new(),
        };
        self.ts = TextState::default();
        self.saved.clear();
        self.run_content(&data, resources.as_deref())?;
        self.newline();
        self.annotations(page, resources.as_deref())
    }

    fn run_content(&mut self, data: &[u8], resources: Option<&Dict>) -> Result<(), PdfError> {
        let mut lx = Lexer::content(data);
        let mut ops: Vec<Operand<'_>> = Vec::with_capacity(16);
        let mut items: Vec<Operand<'_>> = Vec::new();
        loop {
            let tok = match lx.next_tok() {
                Ok(Some(t)) => t,
                Ok(None) => break,
                Err(_) => {
                    // Readers skip what they cannot read; so do we.
                    lx.pos += 1;
                    ops.clear();
                    continue;
                }
            };
            let operand = match tok {
                Tok::Keyword(op) => {
                    self.operator(op, &ops, &items, resources)?;
                    ops.clear();
                    items.clear();
                    if op == b"ID" {
                        skip_inline_image(&mut lx);
                    }
                    if self.full {
                        break;
                    }
                    continue;
                }
                Tok::Int(i) => Operand::Num(i as f32),
                Tok::Real(r) => Operand::Num(r as f32),
                Tok::Str(s) => Operand::Str(s),
                Tok::Name(n) => Operand::Name(n),
                Tok::ArrayOpen => {
                    let start = items.len();
                    if array_items(&mut lx, &mut items).is_err() {
                        ops.clear();
                        items.clear();
                        continue;
                    }
                    Operand::Array(start, items.len())
                }
                Tok::DictOpen => {
                    if lx.dict_body(0).is_err() {
                        ops.clear();
                        items.clear();
                        continue;
                    }
                    Operand::Other
                }
                Tok::ArrayClose | Tok::DictClose | Tok::Brace => continue,
            };
            if ops.len() >= MAX_OPERANDS {
                ops.clear();
                items.clear();
            }
            ops.push(operand);
        }
        Ok(())
    }

    fn operator(
        &mut self,
        op: &[u8],
        ops: &[Operand<'_>],
        items: &[Operand<'_>],
        resources: Option<&Dict>,
    ) -> Result<(), PdfError> {
        let num = |i: usize| ops.get(i).map_or(0.0, Operand::num);
        match op {
            b"TJ" => {
                if let Some(&Operand::Array(start, end)) = ops.first() {
                    for item in &items[start..end] {
                        match item {
                            Operand::Str(s) => self.show(s),
                            Operand::Num(n) => {
                                let tx = -n / 1000.0 * self.ts.size * self.ts.scale;
                                self.advance(tx);
                            }
                            _ => {}
                        }
                        if self.full {
                            break;
                        }
                    }
                }
            }
            b"Tj" => {
                if let Some(Operand::Str(s)) = ops.first() {
                    self.show(s);
                }
            }
            b"Td" => self.move_line(num(0), num(1)),
            b"Tf" => {
                self.ts.size = num(1);
                self.ts.font = match (ops.first(), resources) {
                    (Some(Operand::Name(name)), Some(res)) => self.font(res, name)?,
                    _ => None,
                };
            }
            b"BT" => {
                self.tm = IDENTITY;
                self.tlm = IDENTITY;
            }
            b"Tc" => self.ts.char_spacing = num(0),
            b"Tw" => self.ts.word_spacing = num(0),
            b"Tz" => self.ts.scale = num(0) / 100.0,
            b"TL" => self.ts.leading = num(0),
            b"TD" => {
                self.ts.leading = -num(1);
                self.move_line(num(0), num(1));
            }
            b"Tm" if ops.len() >= 6 => {
                self.tlm = [num(0), num(1), num(2), num(3), num(4), num(5)];
                self.tm = self.tlm;
            }
            b"T*" => self.move_line(0.0, -self.ts.leading),
            b"'" => {
                self.move_line(0.0, -self.ts.leading);
                if let Some(Operand::Str(s)) = ops.first() {
                    self.show(s);
                }
            }
            b"\"" => {
                self.ts.word_spacing = num(0);
                self.ts.char_spacing = num(1);
                self.move_line(0.0, -self.ts.leading);
                if let Some(Operand::Str(s)) = ops.get(2) {
                    self.show(s);
                }
            }
            b"q" if self.saved.len() < MAX_SAVES => self.saved.push(self.ts.clone()),
            b"Q" => {
                if let Some(ts) = self.saved.pop() {
                    self.ts = ts;
                }
            }
            b"Do" => {
                if let (Some(Operand::Name(name)), Some(res)) = (ops.first(), resources) {
                    self.form(res, name)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Font `name` of `resources`, loaded once per font object.
    fn font(&mut self, resources: &Dict, name: &[u8]) -> Result<Option<Rc<Font>>, PdfError> {
        let fonts = self.file.get(resources, b"Font")?;
        let Some(fonts) = fonts.as_dict() else {
            return Ok(None);
        };
        let entry = fonts.get(name);
        let id = match entry {
            Obj::Ref(n, _) => Some(*n),
            _ => None,
        };
        if let Some(font) = id.and_then(|n| self.fonts.get(&n)) {
            return Ok(Some(font.clone()));
        }
        let Obj::Dict(dict) = self.file.resolve(entry)? else {
            return Ok(None);
        };
        let font = Rc::new(Font::load(self.file, &dict)?);
        if let Some(n) = id {
            self.fonts.insert(n, font.clone());
        }
        Ok(Some(font))
    }

    /// Draws form XObject `name` of `resources` (images and others are skipped).
    fn form(&mut self, resources: &Dict, name: &[u8]) -> Result<(), PdfError> {
        let xobjects = self.file.get(resources, b"XObject")?;
        let Some(xobjects) = xobjects.as_dict() else {
            return Ok(());
        };
        let Obj::Ref(id, _) = xobjects.get(name) else {
            return Ok(());
        };
        let id = *id;
        let obj = self.file.object(id)?;
        let Obj::Stream(dict, ..) = &obj else {
            return Ok(());
        };
        if dict.get(b"Subtype").as_name() != Some(b"Form") {
            return Ok(());
        }
        self.draw_form(id, &obj, dict, resources)
    }

    /// Draws the annotations of `page` that have an appearance (form fields' values, free
    /// text, stamps), as viewers and pdftotext do; hidden ones, links and pop-ups are skipped.
    fn annotations(&mut self, page: &Dict, resources: Option<&Dict>) -> Result<(), PdfError> {
        let Obj::Array(annots) = self.file.get(page, b"Annots")? else {
            return Ok(());
        };
        let empty = Dict::default();
        for annot in annots.iter().take(MAX_ANNOTS) {
            if self.full {
                break;
            }
            let Obj::Dict(annot) = self.file.resolve(annot)? else {
                continue;
            };
            if matches!(annot.get(b"Subtype").as_name(), Some(b"Link" | b"Popup")) {
                continue;
            }
            // Flags: 1 invisible, 2 hidden, 32 no view.
            if annot.get(b"F").as_i64().unwrap_or(0) & (2 | 32) != 0 {
                continue;
            }
            let Obj::Dict(ap) = self.file.get(&annot, b"AP")? else {
                continue;
            };
            let normal = ap.get(b"N");
            let appearance = match self.file.resolve(normal)? {
                Obj::Dict(states) => match annot.get(b"AS").as_name() {
                    Some(state) => states.get(state).clone(),
                    None => continue,
                },
                _ => normal.clone(),
            };
            let Obj::Ref(id, _) = appearance else {
                continue;
            };
            let obj = self.file.object(id)?;
            if let Obj::Stream(dict, ..) = &obj {
                let dict = dict.clone();
                self.draw_form(id, &obj, &dict, resources.unwrap_or(&empty))?;
            }
        }
        Ok(())
    }

    /// Draws form `obj` (object `id`, dictionary `dict`); `resources` are the drawing
    /// content's, for a form without its own.
    fn draw_form(
        &mut self,
        id: u32,
        obj: &Obj,
        dict: &Dict,
        resources: &Dict,
    ) -> Result<(), PdfError> {
        if self.forms.contains(&id) {
            return Err(PdfError::corrupt("a form XObject draws itself"));
        }
        if self.forms.len() >= MAX_FORM_DEPTH {
            return Err(PdfError::Unsupported(
                "form XObjects nest too deeply".into(),
            ));
        }
        let data = self.file.stream_data(obj)?;
        if !can_show_text(&data) {
            return Ok(());
        }
        let own = match self.file.get(dict, b"Resources")? {
            Obj::Dict(d) => Some(d),
            _ => None,
        };
        let (tm, tlm, saved) = (self.tm, self.tlm, self.ts.clone());
        self.forms.push(id);
        let result = self.run_content(&data, own.as_deref().or(Some(resources)));
        self.forms.pop();
        self.tm = tm;
        self.tlm = tlm;
        self.ts = saved;
        // What the form drew is placed elsewhere: the next text starts afresh.
        self.last = None;
        self.newline();
        result
    }

    fn move_line(&mut self, tx: f32, ty: f32) {
        let m = self.tlm;
        self.tlm[4] = tx * m[0] + ty * m[2] + m[4];
        self.tlm[5] = tx * m[1] + ty * m[3] + m[5];
        self.tm = self.tlm;
    }

    #[inline]
    fn advance(&mut self, tx: f32) {
        self.tm[4] += tx * self.tm[0];
        self.tm[5] += tx * self.tm[1];
    }

    /// Shows string `s`: a word or line break first if it starts away from where the last
    /// glyph ended, then its codes' text.
    fn show(&mut self, s: &[u8]) {
        let Some(font) = self.ts.font.clone() else {
            return;
        };
        let m = self.tm;
        let size = self.ts.size
            * if m[2] != 0.0 || m[3] != 0.0 {
                (m[2] * m[2] + m[3] * m[3]).sqrt()
            } else {
                (m[0] * m[0] + m[1] * m[1]).sqrt()
            };
        let size = size.abs().max(1e-3);
        if let Some((lx, ly, last_size)) = self.last {
            let (dx, dy) = (m[4] - lx, m[5] - ly);
            let (ux, uy) = if m[1] == 0.0 {
                (m[0].signum(), 0.0)
            } else {
                let norm = (m[0] * m[0] + m[1] * m[1]).sqrt();
                (m[0] / norm, m[1] / norm)
            };
            let along = dx * ux + dy * uy;
            let across = (dy * ux - dx * uy).abs();
            let em = size.max(last_size);
            if across > LINE_GAP * em {
                self.newline();
            } else if along > WORD_GAP * em || along < -em || across > RISE_GAP * em {
                self.space();
            }
        }
        let mut hyphen = self.hyphen.take();
        let out = &mut self.out;
        // The advance is (Σ w·Tfs + n·Tc + spaces·Tw)·Th: summed once after the codes.
        let (mut widths, mut codes, mut spaces, mut unmapped) = (0f32, 0u32, 0u32, 0u32);
        font.each_code(s, |text, width, is_space| {
            unmapped += u32::from(text.is_empty());
            if let Some(at) = hyphen {
                if !text.is_empty() {
                    hyphen = None;
                    if text.starts_with(char::is_lowercase) {
                        out.truncate(at);
                    }
                }
            }
            match text.as_bytes() {
                // Most codes are one ASCII byte: no copy call for them.
                &[b] => out.push(char::from(b)),
                _ => out.push_str(text),
            }
            widths += width;
            codes += 1;
            spaces += u32::from(is_space);
        });
        self.quality.codes += u64::from(codes);
        self.quality.unmapped += u64::from(unmapped);
        let ts = &self.ts;
        let advance =
            (widths * ts.size + codes as f32 * ts.char_spacing + spaces as f32 * ts.word_spacing)
                * ts.scale;
        self.advance(advance);
        self.last = Some((self.tm[4], self.tm[5], size));
        if self.out.len() >= self.max {
            self.cut();
        }
    }

    fn space(&mut self) {
        if !self.full && !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
            self.out.push(' ');
        }
    }

    fn newline(&mut self) {
        if self.full || self.out.is_empty() || self.out.ends_with('\n') {
            return;
        }
        if self.out.ends_with(' ') {
            self.out.pop();
        }
        let mut tail = self.out.chars().rev();
        if let (Some('-'), Some(c)) = (tail.next(), tail.next()) {
            if c.is_alphabetic() {
                self.hyphen = Some(self.out.len() - 1);
            }
        }
        self.out.push('\n');
        if self.out.len() >= self.max {
            self.cut();
        }
    }

    fn cut(&mut self) {
        let mut end = self.max.min(self.out.len());
        while !self.out.is_char_boundary(end) {
            end -= 1;
        }
        self.out.truncate(end);
        self.full = true;
    }
}

/// Whether content stream `data` can show text: text is shown only inside a text object
/// (`BT` … `ET`) or by a form it draws (`Do`). A stream of paths alone (a plot drawn as a
/// form, say) is many thousands of tokens not worth reading; one spelling `BT` or `Do`
/// anywhere, even inside a string or a number, is read as usual.
fn can_show_text(data: &[u8]) -> bool {
    find(data, b"BT").is_some() || find(data, b"Do").is_some()
}

/// Reads an array's items (its `[` read) into `items`: numbers and strings; nested arrays and
/// dictionaries are skipped.
fn array_items<'d>(lx: &mut Lexer<'d>, items: &mut Vec<Operand<'d>>) -> Result<(), PdfError> {
    loop {
        match lx.next_tok()? {
            None => return Err(PdfError::corrupt("an unterminated array")),
            Some(Tok::ArrayClose) => return Ok(()),
            Some(Tok::Int(i)) => items.push(Operand::Num(i as f32)),
            Some(Tok::Real(r)) => items.push(Operand::Num(r as f32)),
            Some(Tok::Str(s)) => items.push(Operand::Str(s)),
            Some(t @ (Tok::ArrayOpen | Tok::DictOpen)) => {
                lx.object_from(t, 1)?;
                items.push(Operand::Other);
            }
            Some(_) => items.push(Operand::Other),
        }
    }
}

/// Skips an inline image's data after `ID`: up to `EI` between white space.
fn skip_inline_image(lx: &mut Lexer<'_>) {
    let s = lx.s;
    let mut p = lx.pos + 1;
    while p + 1 < s.len() {
        if s[p] == b'E'
            && s[p + 1] == b'I'
            && is_white(s[p - 1])
            && s.get(p + 2).is_none_or(|&c| is_white(c))
        {
            lx.pos = p + 2;
            return;
        }
        p += 1;
    }
    lx.pos = s.len();
}

#[cfg(test)]
mod tests {
    use super::super::{extract, testpdf};
    use super::*;

    #[test]
    fn annotation_appearances_are_drawn_after_the_page() {
        let helvetica = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec();
        let field = |text: &str| {
            testpdf::stream(
                "/Type /XObject /Subtype /Form /BBox [0 0 200 20] \
                 /Resources << /Font << /Helv 4 0 R >> >>",
                format!("/Tx BMC BT /Helv 10 Tf 2 5 Td ({text}) Tj ET EMC").as_bytes(),
            )
        };
        let data = testpdf::pdf(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
               /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R \
               /Annots [6 0 R 7 0 R 8 0 R 9 0 R] >>"
                .to_vec(),
            helvetica,
            testpdf::stream("", b"BT /F1 12 Tf 72 720 Td (Name:) Tj ET"),
            // A text field, a check box (its state's appearance), a hidden field, a link.
            b"<< /Type /Annot /Subtype /Widget /FT /Tx /AP << /N 10 0 R >> >>".to_vec(),
            b"<< /Type /Annot /Subtype /Widget /AS /Yes /AP << /N << /Yes 11 0 R /Off 12 0 R >> >> >>"
                .to_vec(),
            b"<< /Type /Annot /Subtype /Widget /F 2 /AP << /N 13 0 R >> >>".to_vec(),
            b"<< /Type /Annot /Subtype /Link /AP << /N 13 0 R >> >>".to_vec(),
            field("Jane Doe"),
            field("checked"),
            field("unchecked"),
            field("secret"),
        ]);
        assert_eq!(
            extract(&data, 1 << 20).unwrap(),
            "Name:\nJane Doe\nchecked\n"
        );
    }

    #[test]
    fn only_streams_without_text_objects_or_forms_are_skipped() {
        assert!(!can_show_text(b"q 1 0 0 1 5 5 cm 0 0 m 10 10 l S Q"));
        assert!(!can_show_text(b""));
        assert!(can_show_text(b"BT /F1 12 Tf (x) Tj ET"));
        assert!(can_show_text(b"q /Fm1 Do Q"));
        // A false alarm is only read as usual.
        assert!(can_show_text(b"(BT) pop"));
    }
}

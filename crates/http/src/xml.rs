//! Text escaped for the XML documents arca writes itself (GSearch's answers, the Fedora 3
//! facade's).

/// Escapes `s` as XML text: `&`, `<` and `>` always; `"` and `'` with `quotes` (for
/// attribute values); with `drop_controls`, the control characters XML 1.0 cannot hold
/// (below U+0020 except tab, newline and return) are left out.
pub(crate) fn escape(s: &str, quotes: bool, drop_controls: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&apos;"),
            c if drop_controls && (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

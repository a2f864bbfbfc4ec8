//! Text escaped for the XML documents arca writes itself (GSearch's answers, the Fedora 3
//! facade's).

use std::borrow::Cow;

/// Escapes `s` as XML text: `&`, `<` and `>` always; `"` and `'` with `quotes` (for
/// attribute values); with `drop_controls`, the control characters XML 1.0 cannot hold
/// (below U+0020 except tab, newline and return) are left out.
pub(crate) fn escape(s: &str, quotes: bool, drop_controls: bool) -> String {
    let refused = |c: char| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r');
    let kept: Cow<'_, str> = if drop_controls && s.contains(refused) {
        s.chars()
            .filter(|&c| !refused(c))
            .collect::<String>()
            .into()
    } else {
        s.into()
    };
    if quotes {
        quick_xml::escape::escape(kept).into_owned()
    } else {
        quick_xml::escape::partial_escape(kept).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_quotes_on_request_and_drops_controls_on_request() {
        let s = "a<b>&\"c\" 'd'\u{1}\t\n\r\u{1f}é";
        assert_eq!(
            escape(s, true, true),
            "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;\t\n\ré"
        );
        assert_eq!(
            escape(s, false, false),
            "a&lt;b&gt;&amp;\"c\" 'd'\u{1}\t\n\r\u{1f}é"
        );
    }
}

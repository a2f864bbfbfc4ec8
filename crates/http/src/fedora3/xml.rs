//! The text helpers every Fedora 3 document shares: escaping as Fedora 3's serializers do,
//! Java's URL encoding, and Fedora 3's date forms.

use std::fmt::Write;

use arca_model::Timestamp;

/// Escapes text for an XML element or attribute as Fedora 3's `StreamUtility.enc` does:
/// `&`, `<`, `>`, `"` and `'` all become entities.
pub(crate) fn enc(s: &str) -> String {
    escape(s, true)
}

/// Escapes text as XSLT's HTML output does (Fedora 3's HTML views): `&`, `<` and `>` only.
pub(crate) fn html(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, quotes: bool) -> String {
    crate::xml::escape(s, quotes, false)
}

/// Appends `<name>text</name>` with the text escaped.
pub(crate) fn element(out: &mut String, name: &str, text: &str) {
    let _ = write!(out, "<{name}>{}</{name}>", enc(text));
}

/// Java's `URLEncoder.encode(s, "UTF-8")`, which Fedora 3 uses for PIDs in URLs: letters,
/// digits and `.-*_` stay, a space becomes `+`, every other byte `%XX`.
pub(crate) fn url_encode(s: &str) -> String {
    // The `application/x-www-form-urlencoded` byte serializer keeps exactly Java's set.
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// An instant in Fedora 3's form: UTC with milliseconds, `2026-11-23T09:22:42.876Z`.
pub(crate) fn date(t: Timestamp) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// A Fedora 3 date as an HTTP date (`Last-Modified`); `None` when it does not parse.
pub(crate) fn http_date(f3_date: &str) -> Option<String> {
    let t = arca_fedora3::view::parse_date(f3_date)?;
    let secs = u64::try_from(t.unix_timestamp()).ok()?;
    Some(httpdate::fmt_http_date(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_fedora_3() {
        assert_eq!(
            enc("Thorny's <a> & \"b\""),
            "Thorny&apos;s &lt;a&gt; &amp; &quot;b&quot;"
        );
        assert_eq!(
            html("Thorny's <a> & \"b\""),
            "Thorny's &lt;a&gt; &amp; \"b\""
        );
    }

    #[test]
    fn urls_encode_as_java() {
        assert_eq!(url_encode("demo:5"), "demo%3A5");
        assert_eq!(url_encode("f3test:a.b-c~d_e"), "f3test%3Aa.b-c%7Ed_e");
        assert_eq!(url_encode("f3test:caf%C3%A9"), "f3test%3Acaf%25C3%25A9");
        assert_eq!(url_encode("a b"), "a+b");
    }

    /// The hand-written encoder `url_encode` replaced, kept as the reference.
    fn java_url_encode(s: &str) -> String {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                b => {
                    let _ = write!(out, "%{b:02X}");
                }
            }
        }
        out
    }

    #[test]
    fn urls_encode_as_the_hand_written_encoder_did() {
        let every_ascii: String = (0u8..0x80).map(char::from).collect();
        for s in [
            every_ascii.as_str(),
            "demo:5 a+b/c?d=e&f#g~h!i'j(k)l*m",
            "f3test:café ☃ 𝄞 \u{0}\t\r\n",
            "%%20%zz++  ",
            "",
        ] {
            assert_eq!(url_encode(s), java_url_encode(s), "{s:?}");
        }
    }

    #[test]
    fn dates() {
        let t = arca_model::parse_instant("2026-11-23T09:22:42.876543Z").unwrap();
        assert_eq!(date(t), "2026-11-23T09:22:42.876Z");
        assert_eq!(
            http_date("2026-11-23T09:13:51.224Z").unwrap(),
            "Mon, 23 Nov 2026 09:13:51 GMT"
        );
    }
}

/// Maps a logical path to the content path suffix ocfl-java's `percentEncodingLinuxMapper`
/// produces: `/` stays the separator; `%`, space, 0x00–0x1F and 0x7F–0xA0 become lowercase
/// `%xx` escapes of their UTF-8 bytes; every other character is kept as it is.
pub fn encode_logical_path(logical: &str) -> String {
    let mut out = String::with_capacity(logical.len());
    for ch in logical.chars() {
        let c = ch as u32;
        if ch == '%' || ch == ' ' || c < 0x20 || (0x7f..=0xa0).contains(&c) {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02x}"));
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_ocfl_java_linux_mapper() {
        assert_eq!(
            encode_logical_path("sub/data file.bin"),
            "sub/data%20file.bin"
        );
        assert_eq!(encode_logical_path("a%b"), "a%25b");
        assert_eq!(encode_logical_path("tab\there"), "tab%09here");
        assert_eq!(encode_logical_path("nbsp\u{a0}x"), "nbsp%c2%a0x");
        assert_eq!(encode_logical_path("del\u{7f}"), "del%7f");
        assert_eq!(encode_logical_path("ümlaut:*?"), "ümlaut:*?");
    }

    #[test]
    fn ids_bound_segments_by_this_encoding() {
        for s in [
            "plain",
            "a b%c",
            "tab\there",
            "nbsp\u{a0}é",
            "\u{7f}\u{1f}",
            "日本",
        ] {
            assert_eq!(
                encode_logical_path(s).len(),
                arca_model::stored_segment_bytes(s),
                "{s:?}"
            );
        }
    }
}

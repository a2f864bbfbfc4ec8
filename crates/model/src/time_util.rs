use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A point in time, always UTC.
pub type Timestamp = OffsetDateTime;

/// The current time in UTC.
pub fn now() -> Timestamp {
    OffsetDateTime::now_utc()
}

/// Formats an instant the way Java's `Instant.toString()` does in Fedora's headers:
/// UTC, `Z`, and as many fractional digits as needed in groups of three (nanoseconds at most).
pub fn format_instant(t: Timestamp) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let nanos = t.nanosecond();
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if nanos == 0 {
        format!("{base}Z")
    } else if nanos.is_multiple_of(1_000_000) {
        format!("{base}.{:03}Z", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1_000) {
        format!("{base}.{:06}Z", nanos / 1_000)
    } else {
        format!("{base}.{nanos:09}Z")
    }
}

/// Parses an RFC 3339 instant such as the dates in Fedora's headers and OCFL inventories.
pub fn parse_instant(s: &str) -> Option<Timestamp> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_java_instant() {
        let t = parse_instant("2026-11-21T20:22:58.115961670Z").unwrap();
        assert_eq!(format_instant(t), "2026-11-21T20:22:58.115961670Z");
        let t = parse_instant("2026-11-21T20:22:58.100Z").unwrap();
        assert_eq!(format_instant(t), "2026-11-21T20:22:58.100Z");
        let t = parse_instant("2026-11-21T20:22:58Z").unwrap();
        assert_eq!(format_instant(t), "2026-11-21T20:22:58Z");
    }
}

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
    // Only an instant that has no UTC form (year 10000 and later, see `parse_instant`) keeps
    // its own offset here; this never panics.
    let t = t.checked_to_offset(time::UtcOffset::UTC).unwrap_or(t);
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

/// Parses an RFC 3339 instant such as the dates in Fedora's headers and OCFL inventories,
/// as UTC. An instant whose UTC form falls outside years 0–9999 is refused.
pub fn parse_instant(s: &str) -> Option<Timestamp> {
    OffsetDateTime::parse(s, &Rfc3339)
        .ok()?
        .checked_to_offset(time::UtcOffset::UTC)
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

    #[test]
    fn instants_without_a_utc_form_are_refused_not_a_panic() {
        assert!(parse_instant("9999-12-31T23:59:59.999999999-23:59").is_none());
        let t = parse_instant("2026-01-01T01:00:00+01:00").unwrap();
        assert_eq!(format_instant(t), "2026-01-01T00:00:00Z");
        let edge = OffsetDateTime::parse("9999-12-31T23:59:59-23:59", &Rfc3339).unwrap();
        assert!(!format_instant(edge).is_empty());
    }
}

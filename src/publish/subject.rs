//! The NATS subject grammar the sites publish on and the range reads, in one place:
//! `foxborne.receipts.<site>.<sysid>`, `foxborne.receipts.<site>.progress` (a site's progress
//! mark) and `foxborne.events.<site>.<kind>`. Builders for the publisher, wildcards for the
//! streams and consumers, parsers for the range.

const ROOT: &str = "foxborne";
const RECEIPTS: &str = "receipts";
const EVENTS: &str = "events";
/// The last token of a progress mark's subject.
pub const PROGRESS_TOKEN: &str = "progress";
/// The event kind the range follows from every site: its receiver clock's state.
const CLOCK_KIND: &str = "clock";

/// Every subject of the receipts stream.
pub const ALL_RECEIPTS: &str = "foxborne.receipts.>";
/// Every subject of the events stream.
pub const ALL_EVENTS: &str = "foxborne.events.>";
/// Every site's `clock` events.
pub const ALL_CLOCK_EVENTS: &str = "foxborne.events.*.clock";
/// Every site's `traffic_proximity` events.
pub const ALL_TRAFFIC_PROXIMITY_EVENTS: &str = "foxborne.events.*.traffic_proximity";
/// The event kind the range merges from every site.
const TRAFFIC_PROXIMITY_KIND: &str = "traffic_proximity";

/// `foxborne.receipts.<site>.<sysid>`.
pub fn receipt(site: &str, sysid: u8) -> String {
    format!("{ROOT}.{RECEIPTS}.{site}.{sysid}")
}

/// `foxborne.receipts.<site>.progress`.
pub fn progress(site: &str) -> String {
    format!("{ROOT}.{RECEIPTS}.{site}.{PROGRESS_TOKEN}")
}

/// `foxborne.events.<site>.<kind>`, or `None` for a kind that is not one subject token.
pub fn event(site: &str, kind: &str) -> Option<String> {
    (!kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| format!("{ROOT}.{EVENTS}.{site}.{kind}"))
}

/// The site of a receipts-stream subject (a receipt or a progress mark).
pub fn receipt_site(subject: &str) -> Option<&str> {
    let mut tokens = subject.split('.');
    match (tokens.next(), tokens.next(), tokens.next()) {
        (Some(ROOT), Some(RECEIPTS), Some(site)) if !site.is_empty() => Some(site),
        _ => None,
    }
}

/// Whether a receipts-stream subject is a site's progress mark.
pub fn is_progress(subject: &str) -> bool {
    subject.rsplit('.').next() == Some(PROGRESS_TOKEN)
}

/// The site of an events-stream subject whose kind is `clock`.
pub fn clock_site(subject: &str) -> Option<&str> {
    event_site(subject, CLOCK_KIND)
}

/// The site of an events-stream subject whose kind is `traffic_proximity`.
pub fn traffic_proximity_site(subject: &str) -> Option<&str> {
    event_site(subject, TRAFFIC_PROXIMITY_KIND)
}

fn event_site<'a>(subject: &'a str, kind: &str) -> Option<&'a str> {
    let mut tokens = subject.split('.');
    match (tokens.next(), tokens.next(), tokens.next(), tokens.next()) {
        (Some(ROOT), Some(EVENTS), Some(site), Some(k)) if !site.is_empty() && k == kind => {
            Some(site)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_built_parses_back_and_the_wildcards_cover_it() {
        assert_eq!(receipt("north", 42), "foxborne.receipts.north.42");
        assert_eq!(receipt_site(&receipt("north", 42)), Some("north"));
        assert_eq!(receipt_site(&progress("north")), Some("north"));
        assert!(is_progress(&progress("north")));
        assert!(!is_progress(&receipt("north", 42)));
        let clock = event("north", "clock").unwrap();
        assert_eq!(clock, "foxborne.events.north.clock");
        assert_eq!(clock_site(&clock), Some("north"));
        assert_eq!(clock_site(&event("north", "link").unwrap()), None);
        assert_eq!(receipt_site(&clock), None);
        assert_eq!(event("north", "a.b"), None);
        assert_eq!(event("north", ""), None);
        // The wildcards are the builders' prefixes.
        let prefix = |wildcard: &str| wildcard.trim_end_matches('>').to_string();
        assert!(receipt("north", 1).starts_with(&prefix(ALL_RECEIPTS)));
        assert!(clock.starts_with(&prefix(ALL_EVENTS)));
        assert_eq!(ALL_CLOCK_EVENTS, format!("{ROOT}.{EVENTS}.*.{CLOCK_KIND}"));
    }
}

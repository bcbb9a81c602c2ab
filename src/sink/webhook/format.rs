//! What a webhook POSTs for an event (pure): the event object itself (`json`), or a chat
//! message (`slack`: `{"text": ...}`, which Slack, Mattermost and Rocket.Chat incoming webhooks
//! all take) that a person on the range reads at a glance: what happened, to which vehicle
//! (name and system id), and the gap's or the traffic's title as the events stream has it.

use crate::config::WebhookFormat;
use crate::monitor::event::{GapEvent, GapState, TrafficProximityEvent};
use crate::monitor::title::TITLE_PREFIX;
use crate::monitor::{format_utc_ms, Event};

/// The request body for `event`, whose JSON line is `line`.
pub fn body(format: WebhookFormat, event: &Event, line: &str) -> String {
    match format {
        WebhookFormat::Json => line.to_string(),
        WebhookFormat::Slack => serde_json::json!({ "text": chat_text(event, line) }).to_string(),
    }
}

/// The chat sentence for an event. Chat markup (`*bold*`) only; `&`, `<` and `>` escaped, as
/// Slack requires of message text.
pub fn chat_text(event: &Event, line: &str) -> String {
    match event {
        Event::TelemetryGap(gap) => gap_text(gap),
        Event::TrafficProximity(p) => traffic_text(p),
        other => format!("*{}*: {}", other.kind(), escape(line)),
    }
}

fn gap_text(gap: &GapEvent) -> String {
    let vehicle = match &gap.name {
        Some(name) => format!("{} (sysid {})", escape(name), gap.sysid),
        None => format!("sysid {}", gap.sysid),
    };
    let links = if gap.links.is_empty() {
        String::new()
    } else {
        format!(" Links: {}.", escape(&gap.links.join(", ")))
    };
    let dropped = match gap.receiver_dropped {
        Some(n) => format!(" The receiver itself dropped {n} datagrams on these links meanwhile."),
        None => String::new(),
    };
    match gap.state {
        GapState::Open => {
            let since = match gap.last_recv_utc {
                Some(last) => format!("last heard {}", format_utc_ms(last.ns())),
                None => "not heard since the receiver started".to_string(),
            };
            format!(
                ":warning: *telemetry_gap open*: {vehicle}: {TITLE_PREFIX} Silent for more than {} s, {since}.{links}{dropped}\n_{}_",
                gap.threshold_s,
                escape(&gap.observed)
            )
        }
        GapState::Closed => {
            let title = gap
                .title
                .clone()
                .unwrap_or_else(|| format!("{TITLE_PREFIX} Heard again"));
            let heard = gap
                .next_recv_utc
                .map(|next| format!(" Heard again {}.", format_utc_ms(next.ns())))
                .unwrap_or_default();
            format!(
                ":white_check_mark: *telemetry_gap closed*: {vehicle}: {}.{heard}{links}{dropped}\n_{}_",
                escape(&title),
                escape(&gap.observed)
            )
        }
    }
}

/// `:airplane: *traffic_proximity open*: UAS-04 (sysid 4): Traffic N123AB 640 m and 45 m above
/// UAS-04. ICAO A1B2C3, ADS-B over radio1; altitude pressure_qnh vs msl.`
fn traffic_text(p: &TrafficProximityEvent) -> String {
    let vehicle = match &p.name {
        Some(name) => format!("{} (sysid {})", escape(name), p.sysid),
        None => format!("sysid {}", p.sysid),
    };
    let id = match (&p.icao, &p.uas_id) {
        (Some(icao), _) => format!("ICAO {icao}"),
        (None, Some(uas)) => format!("UAS ID {}", escape(uas)),
        (None, None) => String::new(),
    };
    let relayed = p
        .source
        .relayed_by
        .map(|s| format!(", relayed by sysid {s}"))
        .unwrap_or_default();
    let basis = match &p.vertical_basis {
        Some(b) => format!("; altitude {}", escape(b)),
        None => "; no altitude reported: judged on the horizontal alone".to_string(),
    };
    let (mark, state) = match p.state {
        GapState::Open => (":airplane:", "open"),
        GapState::Closed => (":white_check_mark:", "closed"),
    };
    format!(
        "{mark} *traffic_proximity {state}*: {vehicle}: {}. {id}, {} over {}{relayed}{basis}.",
        escape(&p.title),
        p.source.kind,
        escape(&p.source.link),
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::event::examples;
    use crate::monitor::OBSERVED;

    /// The design's example gap, of a vehicle whose name needs escaping in chat markup.
    fn gap(state: GapState) -> GapEvent {
        let example = match state {
            GapState::Open => examples::open_gap(),
            GapState::Closed => examples::closed_gap(),
        };
        GapEvent {
            name: Some("UAS-04 <north>".into()),
            ..example
        }
    }

    #[test]
    fn slack_text_of_a_proximity_says_who_how_near_and_on_what_altitudes() {
        let open = Event::from(examples::traffic_proximity());
        let text = chat_text(&open, &open.to_json_line());
        assert_eq!(
            text,
            ":airplane: *traffic_proximity open*: UAS-04 (sysid 4): Traffic N123AB 640 m and 45 m above UAS-04. ICAO A1B2C3, adsb over radio1, relayed by sysid 200; altitude pressure_qnh vs msl."
        );
    }

    #[test]
    fn slack_text_names_the_vehicle_and_carries_the_title() {
        let open = Event::from(gap(GapState::Open));
        let text = chat_text(&open, &open.to_json_line());
        assert!(text.contains("telemetry_gap open"), "{text}");
        assert!(text.contains("UAS-04 &lt;north&gt; (sysid 4)"), "{text}");
        assert!(text.contains("Heartbeat due and not received."), "{text}");
        assert!(text.contains("2026-09-24T14:32:03.912Z"), "{text}");
        assert!(text.contains(OBSERVED), "{text}");
        let closed = Event::from(gap(GapState::Closed));
        let text = chat_text(&closed, &closed.to_json_line());
        assert!(text.contains("telemetry_gap closed"), "{text}");
        assert!(
            text.contains("Heartbeat due and not received. Nothing for 6.96 s"),
            "{text}"
        );
        let posted: serde_json::Value =
            serde_json::from_str(&body(WebhookFormat::Slack, &closed, "")).unwrap();
        assert_eq!(posted["text"], text);
        assert_eq!(posted.as_object().unwrap().len(), 1);
    }

    #[test]
    fn json_is_the_event_line_itself() {
        let open = Event::from(gap(GapState::Open));
        let line = open.to_json_line();
        assert_eq!(body(WebhookFormat::Json, &open, &line), line);
    }
}

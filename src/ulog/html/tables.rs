//! The report's tables: each rule and what it read, messages and PX4 events, each row with
//! the `ulog record` command that shows its evidence.

use crate::ulog::display::esc;
use crate::ulog::report::Report;
use std::fmt::Write as _;

/// Each rule: evaluated or why not, what it read, its thresholds and where they come from.
pub(super) fn rules_table(out: &mut String, report: &Report) {
    if report.rules.is_empty() {
        return;
    }
    out.push_str("<h2>Rules</h2>\n<table><tr><th>rule</th><th>outcome</th><th>read</th><th>thresholds</th></tr>\n");
    for r in &report.rules {
        let outcome = match (&r.reason, r.found) {
            (Some(reason), _) => reason.clone(),
            (None, 0) => "evaluated: nothing found".to_string(),
            (None, n) => format!("evaluated: {n} finding{}", if n == 1 { "" } else { "s" }),
        };
        let mut outcome = esc(&outcome);
        for note in &r.notes {
            let _ = write!(outcome, "<br><span class=\"note\">{}</span>", esc(note));
        }
        let thresholds: Vec<String> = r
            .thresholds
            .iter()
            .map(|t| {
                esc(&format!(
                    "{} {} {}: {}",
                    t.name,
                    crate::ulog::rules::threshold::trim(t.value),
                    t.unit,
                    t.source
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{outcome}</td><td class=\"note\">{}</td><td class=\"note\">{}</td></tr>",
            esc(r.rule),
            esc(&r.read.join(", ")),
            thresholds.join("<br>")
        );
    }
    out.push_str("</table>\n");
}

/// One row of a table of messages: time, level, text and the command that shows it.
pub(super) fn message_row(
    out: &mut String,
    file: &str,
    t: u64,
    level: &str,
    text: &str,
    message: u64,
) {
    let _ = writeln!(
        out,
        "<tr><td>{:.3} s</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
        t as f64 / 1e6,
        esc(level),
        esc(text),
        esc(&record_command(file, message))
    );
}

/// PX4's events, decoded with the log's definitions, each with its evidence command.
pub(super) fn events_table(out: &mut String, report: &Report) {
    let Some(d) = &report.event_definitions else {
        return;
    };
    let _ = writeln!(
        out,
        "<h2>PX4 events</h2>\n<p class=\"note\">{}</p>",
        esc(&d.detail)
    );
    if report.events.is_empty() {
        out.push_str("<p>No events.</p>\n");
        return;
    }
    out.push_str("<table><tr><th>time</th><th>level</th><th>message</th><th>evidence</th></tr>\n");
    for e in report.events.iter().take(500) {
        message_row(
            out,
            &report.file,
            e.timestamp,
            &e.level,
            &e.message,
            e.citation.message,
        );
    }
    out.push_str("</table>\n");
}

/// The `ulog record` command that shows a cited message.
pub fn record_command(file: &str, message: u64) -> String {
    format!(
        "foxborne-receiver ulog record {} --message {message}",
        shell_quote(file)
    )
}

pub(super) fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

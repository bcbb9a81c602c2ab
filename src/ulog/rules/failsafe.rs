//! `failsafe_entered`: `vehicle_status.failsafe` rising, with
//!
//! - the cause: the `failsafe_flags` conditions true at that moment (in releases before
//!   v1.14, the `vehicle_status` ones: `rc_signal_lost`, `data_link_lost`, ...), each with when
//!   it became true and whether it already was before arming;
//! - the reason: the PX4 event that announced it (`commander_failsafe_enter*`), with the
//!   health and arming-check messages reported with it, as a ground station shows them;
//! - the navigation state before and after.
//!
//! The flag falling is its own entry (`Failsafe cleared`). A failsafe event without the flag
//! rising (PX4 warned, and took no action) is an entry too, so a warning-only failsafe is on
//! the time axis with its cause.

use super::{secs, Cause, Context, Rule, RuleFinding, RuleOutcome, Vehicle};
use crate::ulog::events::{Citation, Event, SHOWN_GROUP};
use crate::ulog::modes::nav_state_name;
use crate::ulog::signals::{cite, Kind, Signal, SignalSample, Source};

/// Transitions and flag changes kept at most.
pub const MAX_KEPT: usize = 4096;
/// The event prefix of PX4's failsafe announcements.
pub const FAILSAFE_EVENT_PREFIX: &str = "commander_failsafe_enter";
/// A failsafe event this close to the flag rising is its announcement (PX4 announces on entry;
/// the flag can follow after `COM_FAIL_ACT_T`'s hold, up to [`ANNOUNCED_BEFORE_US`] earlier).
pub const ANNOUNCED_BEFORE_US: u64 = 10_000_000;
pub const ANNOUNCED_AFTER_US: u64 = 1_000_000;
/// Health and arming-check messages within this much before a failsafe event belong to it.
pub const APPENDED_WITHIN_US: u64 = 100_000;
/// The event type whose message the health and arming-check reports complete.
pub const APPENDS_HEALTH: &str = "append_health_and_arming_messages";
/// `failsafe_flags` can be logged a little after the status that acted on it.
pub const FLAGS_GRACE_US: u64 = 100_000;

#[derive(Debug, Clone)]
struct Transition {
    timestamp: u64,
    citation: Citation,
    entered: bool,
    nav_before: Option<u8>,
    nav_after: u8,
}

#[derive(Debug, Default)]
struct FlagHistory {
    source: Option<usize>,
    last: Option<u64>,
    changes: Vec<(u64, u64, Citation)>,
}

impl FlagHistory {
    fn add(&mut self, source: usize, t: u64, mask: u64, citation: Citation) {
        self.source.get_or_insert(source);
        if self.last == Some(mask) || self.changes.len() >= MAX_KEPT {
            return;
        }
        self.last = Some(mask);
        self.changes.push((t, mask, citation));
    }

    /// The flags set at `t`, each with the change where it last became set.
    fn set_at(&self, t: u64) -> Vec<(usize, u64, Citation)> {
        let Some(now) = self.changes.iter().rposition(|c| c.0 <= t) else {
            return Vec::new();
        };
        let mask = self.changes[now].1;
        (0..64)
            .filter(|bit| mask & (1 << bit) != 0)
            .map(|bit| {
                let mut since = now;
                while since > 0 && self.changes[since - 1].1 & (1 << bit) != 0 {
                    since -= 1;
                }
                let (t, _, c) = &self.changes[since];
                (bit, *t, c.clone())
            })
            .collect()
    }
}

#[derive(Debug, Default)]
pub struct FailsafeEntered {
    status: Option<usize>,
    has_flag: bool,
    last_failsafe: Option<bool>,
    last_nav: Option<u8>,
    transitions: Vec<Transition>,
    flags: FlagHistory,
    legacy: FlagHistory,
    first_armed: Option<u64>,
}

impl FailsafeEntered {
    fn causes(&self, sources: &[Source], t: u64) -> Vec<Cause> {
        let history = if self.flags.changes.is_empty() {
            &self.legacy
        } else {
            &self.flags
        };
        let Some(source) = history.source.map(|i| &sources[i]) else {
            return Vec::new();
        };
        let mut causes: Vec<Cause> = history
            .set_at(t + FLAGS_GRACE_US)
            .into_iter()
            .filter_map(|(bit, since, citation)| {
                Some(Cause {
                    flag: format!("{}.{}", source.topic, source.flags.get(bit)?),
                    since,
                    citation,
                    before_arming: self.first_armed.is_none_or(|a| since < a),
                })
            })
            .collect();
        // What became true in flight first; standing conditions last.
        causes.sort_by_key(|c| (c.before_arming, std::cmp::Reverse(c.since)));
        causes
    }
}

/// "fd_critical_failure (since 114.98 s)", standing conditions marked.
fn describe_causes(causes: &[Cause]) -> String {
    if causes.is_empty() {
        return "no failsafe condition flag logged".into();
    }
    causes
        .iter()
        .map(|c| {
            let name = c.flag.rsplit('.').next().unwrap_or(&c.flag);
            if c.before_arming {
                format!("{name} (true since before arming)")
            } else {
                format!("{name} (since {})", secs(c.since))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The event's message, with the health and arming-check messages reported with it when its
/// definition asks for them (as a ground station completes it).
fn announcement(e: &Event, events: &[Event]) -> String {
    if e.kind.as_deref() != Some(APPENDS_HEALTH) {
        return e.message.clone();
    }
    let appended: Vec<&str> = events
        .iter()
        .filter(|x| {
            x.group.as_deref().is_some_and(|g| g != SHOWN_GROUP)
                && x.level_number < 8
                && x.timestamp <= e.timestamp
                && e.timestamp - x.timestamp <= APPENDED_WITHIN_US
        })
        .map(|x| x.message.as_str())
        .collect();
    if appended.is_empty() {
        e.message.clone()
    } else {
        format!("{} {}", e.message, appended.join("; "))
    }
}

fn is_failsafe_event(e: &Event) -> bool {
    e.name
        .as_deref()
        .is_some_and(|n| n.starts_with(FAILSAFE_EVENT_PREFIX))
}

impl Rule for FailsafeEntered {
    fn observe(&mut self, sample: &SignalSample, source: &Source, vehicle: &Vehicle) {
        if self.first_armed.is_none() {
            self.first_armed = vehicle.first_armed;
        }
        match (source.kind, &sample.signal) {
            (Kind::Status, Signal::Status(s)) if source.multi_id == 0 => {
                self.status.get_or_insert(sample.source);
                self.legacy.add(
                    sample.source,
                    sample.timestamp,
                    s.causes,
                    cite(source, sample),
                );
                let Some(failsafe) = s.failsafe else {
                    self.last_nav = Some(s.nav_state);
                    return;
                };
                self.has_flag = true;
                if let Some(before) = self.last_failsafe {
                    if before != failsafe && self.transitions.len() < MAX_KEPT {
                        self.transitions.push(Transition {
                            timestamp: sample.timestamp,
                            citation: cite(source, sample),
                            entered: failsafe,
                            nav_before: self.last_nav,
                            nav_after: s.nav_state,
                        });
                    }
                } else if failsafe && self.transitions.len() < MAX_KEPT {
                    // In failsafe from the first sample on.
                    self.transitions.push(Transition {
                        timestamp: sample.timestamp,
                        citation: cite(source, sample),
                        entered: true,
                        nav_before: None,
                        nav_after: s.nav_state,
                    });
                }
                self.last_failsafe = Some(failsafe);
                self.last_nav = Some(s.nav_state);
            }
            (Kind::FailsafeFlags, Signal::Flags(mask)) if source.multi_id == 0 => {
                self.flags
                    .add(sample.source, sample.timestamp, *mask, cite(source, sample));
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], ctx: &Context<'_>) -> RuleOutcome {
        let rule = "failsafe_entered";
        let Some(status) = self.status else {
            return RuleOutcome::not_evaluated(rule, "not evaluated: no vehicle_status".into());
        };
        if !self.has_flag {
            return RuleOutcome::not_evaluated(
                rule,
                "not evaluated: vehicle_status has no failsafe field".into(),
            );
        }
        let mut read = super::read_from(sources, |s| s.kind == Kind::Status && s.multi_id == 0);
        read.retain(|r| r.ends_with(".failsafe") || r.ends_with(".nav_state"));
        match self.flags.source {
            Some(i) => read.extend(super::read_from(sources, |s| std::ptr::eq(s, &sources[i]))),
            None if !sources[status].flags.is_empty() => read.push(format!(
                "vehicle_status[0]: {} (the failsafe causes before failsafe_flags)",
                sources[status].flags.join(", ")
            )),
            None => {}
        }
        let failsafe_events: Vec<&Event> =
            ctx.events.iter().filter(|e| is_failsafe_event(e)).collect();
        if !failsafe_events.is_empty() {
            read.push("event: commander_failsafe_enter* (PX4's failsafe announcements)".into());
        }
        let mut claimed = vec![false; failsafe_events.len()];
        let mut findings = Vec::new();
        for (k, tr) in self.transitions.iter().enumerate() {
            let nav = |n: Option<u8>| {
                n.map_or("unknown".to_string(), |n| {
                    format!("{n} ({})", nav_state_name(n))
                })
            };
            if !tr.entered {
                let since = self.transitions[..k]
                    .iter()
                    .rev()
                    .find(|t| t.entered)
                    .map(|t| t.timestamp);
                let after = since.map_or(String::new(), |s| {
                    format!(" after {:.1} s", (tr.timestamp - s) as f64 / 1e6)
                });
                findings.push(RuleFinding {
                    rule,
                    title: format!(
                        "Failsafe cleared at {}{after}; nav_state now {}",
                        secs(tr.timestamp),
                        nav(Some(tr.nav_after))
                    ),
                    timestamp: tr.timestamp,
                    citation: tr.citation.clone(),
                    end_timestamp: Some(tr.timestamp),
                    duration_ms: 0.0,
                    values: Vec::new(),
                    reason: None,
                    cause: Vec::new(),
                    nav_state: Some(nav(Some(tr.nav_after))),
                });
                continue;
            }
            let window_start = tr.timestamp.saturating_sub(ANNOUNCED_BEFORE_US);
            let window_end = tr.timestamp + ANNOUNCED_AFTER_US;
            let event = failsafe_events
                .iter()
                .enumerate()
                .filter(|(j, e)| !claimed[*j] && (window_start..=window_end).contains(&e.timestamp))
                .min_by_key(|(_, e)| e.timestamp.abs_diff(tr.timestamp))
                .map(|(j, e)| (j, *e));
            let reason = event.map(|(j, e)| {
                claimed[j] = true;
                announcement(e, ctx.events)
            });
            let causes = self.causes(sources, tr.timestamp);
            let end = self.transitions[k + 1..]
                .iter()
                .find(|t| !t.entered)
                .map(|t| t.timestamp);
            let nav_change = format!("{} → {}", nav(tr.nav_before), nav(Some(tr.nav_after)));
            findings.push(RuleFinding {
                rule,
                title: format!(
                    "Failsafe entered at {}: {}; cause: {}; nav_state {}",
                    secs(tr.timestamp),
                    reason
                        .as_deref()
                        .unwrap_or("no PX4 failsafe event in the log"),
                    describe_causes(&causes),
                    nav_change
                ),
                timestamp: tr.timestamp,
                citation: tr.citation.clone(),
                end_timestamp: end,
                duration_ms: end.unwrap_or(ctx.log_end).saturating_sub(tr.timestamp) as f64
                    / 1000.0,
                values: vec![super::Crossed {
                    field: "vehicle_status.failsafe".into(),
                    comparison: ">",
                    threshold: 0.0,
                    unit: "",
                    first: super::Reading {
                        value: 1.0,
                        timestamp: tr.timestamp,
                        citation: tr.citation.clone(),
                    },
                    extreme: super::Reading {
                        value: 1.0,
                        timestamp: tr.timestamp,
                        citation: tr.citation.clone(),
                    },
                }],
                reason,
                cause: causes,
                nav_state: Some(nav_change),
            });
        }
        // Failsafe announcements with no failsafe action.
        for (j, e) in failsafe_events.iter().enumerate() {
            if claimed[j] {
                continue;
            }
            let reason = announcement(e, ctx.events);
            let causes = self.causes(sources, e.timestamp);
            findings.push(RuleFinding {
                rule,
                title: format!(
                    "Failsafe warning at {} (no failsafe action: vehicle_status.failsafe did not rise): {}; cause: {}",
                    secs(e.timestamp),
                    reason,
                    describe_causes(&causes)
                ),
                timestamp: e.timestamp,
                citation: e.citation.clone(),
                end_timestamp: None,
                duration_ms: 0.0,
                values: Vec::new(),
                reason: Some(reason),
                cause: causes,
                nav_state: None,
            });
        }
        findings.sort_by_key(|f| f.timestamp);
        RuleOutcome::evaluated(rule, read, Vec::new(), findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cite(message: u64) -> Citation {
        Citation {
            topic: "failsafe_flags".into(),
            multi_id: 0,
            message,
            offset: 0,
        }
    }

    #[test]
    fn a_flag_is_dated_from_when_it_last_became_true() {
        let mut h = FlagHistory::default();
        h.add(0, 10, 0b01, cite(1));
        h.add(0, 20, 0b01, cite(2)); // unchanged: not a change
        h.add(0, 30, 0b11, cite(3));
        h.add(0, 40, 0b10, cite(4));
        h.add(0, 50, 0b11, cite(5));
        let set = h.set_at(55);
        assert_eq!(set.len(), 2);
        assert_eq!((set[0].0, set[0].1), (0, 50), "bit 0 rose again at 50");
        assert_eq!((set[1].0, set[1].1), (1, 30), "bit 1 set since 30");
        assert!(h.set_at(5).is_empty());
    }
}

//! Episodes: a condition that holds over a run of samples is one finding, not one per sample.
//! Bad samples less than `merge_gap` after the condition cleared continue the same episode; an
//! episode shorter than `min_duration` is dropped. Each episode keeps where it started, where it
//! was worst for each value that crossed, and when it cleared.

use super::{finding, Crossed, Reading, RuleFinding};
use crate::ulog::events::Citation;

/// Episodes kept per tracker (the rest are counted).
pub const MAX_EPISODES: usize = 256;

/// One value that crossed its threshold in a bad sample.
#[derive(Debug, Clone)]
pub struct Crossing {
    pub field: String,
    /// `>` (too high) or `<` (too low).
    pub comparison: &'static str,
    pub threshold: f64,
    pub unit: &'static str,
    pub value: f64,
}

impl Crossing {
    /// `value` of `field`, bad for being above `threshold` (in `unit`).
    pub fn above(field: String, threshold: f64, unit: &'static str, value: f64) -> Self {
        Crossing {
            field,
            comparison: ">",
            threshold,
            unit,
            value,
        }
    }

    /// `value` of `field`, bad for being below `threshold` (in `unit`).
    pub fn below(field: String, threshold: f64, unit: &'static str, value: f64) -> Self {
        Crossing {
            comparison: "<",
            ..Crossing::above(field, threshold, unit, value)
        }
    }
}

/// A run of bad samples.
#[derive(Debug, Clone)]
pub struct Episode {
    pub start: u64,
    pub citation: Citation,
    /// The last bad sample.
    pub last: u64,
    /// The first good sample after it (`None`: it lasted to the end of the log).
    pub end: Option<u64>,
    pub crossed: Vec<Crossed>,
}

impl Episode {
    /// From the start to the sample that cleared it, or to the last bad sample.
    pub fn duration_us(&self) -> u64 {
        self.end.unwrap_or(self.last).saturating_sub(self.start)
    }
}

#[derive(Debug, Clone)]
pub struct Tracker {
    merge_gap: u64,
    min_duration: u64,
    open: Option<Episode>,
    /// An episode that cleared, kept open to merge a relapse within `merge_gap`.
    cleared: Option<Episode>,
    pub done: Vec<Episode>,
    pub dropped: u64,
}

impl Tracker {
    pub fn new(merge_gap_us: u64, min_duration_us: u64) -> Self {
        Tracker {
            merge_gap: merge_gap_us,
            min_duration: min_duration_us,
            open: None,
            cleared: None,
            done: Vec::new(),
            dropped: 0,
        }
    }

    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// A sample where the condition holds, with the values that crossed.
    pub fn bad(&mut self, t: u64, citation: &Citation, crossings: &[Crossing]) {
        if self.open.is_none() {
            self.open = match self.cleared.take() {
                Some(mut e)
                    if e.end
                        .is_some_and(|end| t.saturating_sub(end) < self.merge_gap) =>
                {
                    e.end = None;
                    Some(e)
                }
                other => {
                    if let Some(e) = other {
                        self.close(e);
                    }
                    Some(Episode {
                        start: t,
                        citation: citation.clone(),
                        last: t,
                        end: None,
                        crossed: Vec::new(),
                    })
                }
            };
        }
        let e = self.open.as_mut().expect("opened above");
        e.last = t;
        for c in crossings {
            let reading = Reading {
                value: c.value,
                timestamp: t,
                citation: citation.clone(),
            };
            match e.crossed.iter_mut().find(|x| x.field == c.field) {
                Some(x) => {
                    let worse = match c.comparison {
                        "<" => c.value < x.extreme.value,
                        _ => c.value > x.extreme.value,
                    };
                    if worse {
                        x.extreme = reading;
                    }
                }
                None => e.crossed.push(Crossed {
                    field: c.field.clone(),
                    comparison: c.comparison,
                    threshold: c.threshold,
                    unit: c.unit,
                    first: reading.clone(),
                    extreme: reading,
                }),
            }
        }
    }

    /// A sample where the condition does not hold.
    pub fn good(&mut self, t: u64) {
        if let Some(mut e) = self.open.take() {
            e.end = Some(t);
            if let Some(old) = self.cleared.replace(e) {
                self.close(old);
            }
        }
    }

    fn close(&mut self, e: Episode) {
        if e.duration_us() < self.min_duration {
            return;
        }
        if self.done.len() < MAX_EPISODES {
            self.done.push(e);
        } else {
            self.dropped += 1;
        }
    }

    /// The episodes, the last one still open if the log ended during it.
    pub fn finish(mut self) -> (Vec<Episode>, u64) {
        if let Some(e) = self.cleared.take() {
            self.close(e);
        }
        if let Some(e) = self.open.take() {
            self.close(e);
        }
        (self.done, self.dropped)
    }

    /// The episodes kept, as findings of `rule` each titled by `title`.
    pub fn findings(
        self,
        rule: &'static str,
        mut title: impl FnMut(&Episode) -> String,
    ) -> impl Iterator<Item = RuleFinding> {
        let (episodes, _) = self.finish();
        episodes
            .into_iter()
            .map(move |e| finding(rule, title(&e), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cite(message: u64) -> Citation {
        Citation {
            topic: "t".into(),
            multi_id: 0,
            message,
            offset: message * 10,
        }
    }

    fn high(v: f64) -> Vec<Crossing> {
        vec![Crossing::above("t.x".into(), 1.0, "", v)]
    }

    #[test]
    fn one_episode_per_run_with_its_worst_value_cited() {
        let mut t = Tracker::new(1_000_000, 0);
        t.good(0);
        t.bad(10, &cite(1), &high(2.0));
        t.bad(20, &cite(2), &high(5.0));
        t.bad(30, &cite(3), &high(3.0));
        t.good(40);
        // A relapse within the merge gap is the same episode.
        t.bad(500_000, &cite(4), &high(4.0));
        t.good(600_000);
        // Later: a new one, still open at the end.
        t.bad(5_000_000, &cite(5), &high(9.0));
        let (episodes, dropped) = t.finish();
        assert_eq!((episodes.len(), dropped), (2, 0));
        assert_eq!(episodes[0].start, 10);
        assert_eq!(episodes[0].end, Some(600_000));
        assert_eq!(episodes[0].crossed[0].first.value, 2.0);
        assert_eq!(episodes[0].crossed[0].extreme.value, 5.0);
        assert_eq!(episodes[0].crossed[0].extreme.citation.message, 2);
        assert_eq!(episodes[1].end, None);
    }

    #[test]
    fn short_episodes_are_dropped() {
        let mut t = Tracker::new(0, 2_000_000);
        t.bad(0, &cite(1), &high(2.0));
        t.good(1_000_000);
        t.bad(5_000_000, &cite(2), &high(2.0));
        t.bad(7_500_000, &cite(3), &high(2.0));
        t.good(8_000_000);
        let (episodes, _) = t.finish();
        assert_eq!(episodes.len(), 1);
        assert_eq!(episodes[0].duration_us(), 3_000_000);
    }
}

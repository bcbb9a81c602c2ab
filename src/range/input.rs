//! How far the range's input from each site is complete, pure. A site's progress marks
//! (`foxborne.receipts.<site>.progress`, see `crate::publish`) say that every receipt it stamped
//! before a time is already in the stream ahead of the mark; the range may judge the vehicles
//! that site hears only that far. A site whose marks stop (NATS away, the site's network down,
//! the range's own consumer behind) is **stalled**: the range says so and waits, judging the
//! backlog by its own times when it comes. A site stalled for [`LOST_AFTER_NS`] is **lost**:
//! the range judges without it rather than go blind to every vehicle. A site that has never
//! sent a mark (a receiver from before the marks) is judged as before: by the range's clock
//! when caught up, by its receipts' times while catching up.

use std::collections::BTreeMap;

/// Marks come every 0.5 s: a site this far behind the range's clock is stalled.
pub const STALL_AFTER_NS: i64 = 2_000_000_000;
/// A stalled site resumes when a mark brings it this close to the range's clock: a site that
/// hovers near the stall line, or works through a backlog of old marks after an outage, is
/// said stalled once and resumed once, not at every mark.
pub const RESUME_WITHIN_NS: i64 = STALL_AFTER_NS / 2;
/// A site stalled this long is judged without.
pub const LOST_AFTER_NS: i64 = 60_000_000_000;

/// What changed in a site's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputChange {
    Stalled {
        behind_ns: i64,
    },
    Lost {
        behind_ns: i64,
    },
    /// Caught up again; `late` receipts came for times already judged without it.
    Resumed {
        late: u64,
    },
}

#[derive(Debug, Clone, Copy, Default)]
struct SiteInput {
    /// Every receipt stamped before this (on the range's corrected time) has come.
    through_ns: Option<i64>,
    stalled: bool,
    lost: bool,
    late: u64,
}

#[derive(Debug, Default)]
pub struct SiteInputs {
    sites: BTreeMap<String, SiteInput>,
}

impl SiteInputs {
    /// A site seen (a receipt, or a mark): known from now on.
    pub fn seen(&mut self, site: &str) {
        if !self.sites.contains_key(site) {
            self.sites.insert(site.to_string(), SiteInput::default());
        }
    }

    /// A progress mark: complete through `through_ns`, read by the range at `read_at_ns` (its
    /// clock). Resumes a stalled site once a mark is within [`RESUME_WITHIN_NS`] of the clock:
    /// the old marks of a backlog, the site's or the range's own, resume nothing.
    pub fn mark(&mut self, site: &str, through_ns: i64, read_at_ns: i64) -> Option<InputChange> {
        self.seen(site);
        let input = self.sites.get_mut(site).expect("seen above");
        let through_ns = input.through_ns.map_or(through_ns, |t| t.max(through_ns));
        input.through_ns = Some(through_ns);
        if !input.stalled || read_at_ns - through_ns > RESUME_WITHIN_NS {
            return None;
        }
        let late = std::mem::take(&mut input.late);
        input.stalled = false;
        input.lost = false;
        Some(InputChange::Resumed { late })
    }

    /// Whether a receipt of `site` stamped `at_ns` still counts, the range having judged up to
    /// `judged_ns`: not when the site is lost and the time is past (counted as late).
    pub fn admit(&mut self, site: &str, at_ns: i64, judged_ns: i64) -> bool {
        self.seen(site);
        let input = self.sites.get_mut(site).expect("seen above");
        if input.lost && at_ns <= judged_ns {
            input.late += 1;
            return false;
        }
        true
    }

    /// Sites stalled or lost at `now_ns`, by the range's clock.
    pub fn poll(&mut self, now_ns: i64) -> Vec<(String, InputChange)> {
        let mut changes = Vec::new();
        for (name, input) in &mut self.sites {
            let Some(through) = input.through_ns else {
                continue;
            };
            let behind_ns = now_ns - through;
            if !input.stalled && behind_ns > STALL_AFTER_NS {
                input.stalled = true;
                changes.push((name.clone(), InputChange::Stalled { behind_ns }));
            }
            if !input.lost && behind_ns > LOST_AFTER_NS {
                input.lost = true;
                changes.push((name.clone(), InputChange::Lost { behind_ns }));
            }
        }
        changes
    }

    /// When the next stall or loss falls due.
    pub fn next_deadline(&self) -> Option<i64> {
        self.sites
            .values()
            .filter_map(|input| {
                let through = input.through_ns?;
                if !input.stalled {
                    Some(through + STALL_AFTER_NS + 1)
                } else if !input.lost {
                    Some(through + LOST_AFTER_NS + 1)
                } else {
                    None
                }
            })
            .min()
    }

    /// Up to when every site's input is complete: the earliest mark among the sites judged by
    /// their marks (not lost), and for a site without marks `legacy_ns` (the range's clock when
    /// caught up). `None` with no site.
    pub fn complete_through(&self, legacy_ns: i64) -> Option<i64> {
        self.sites
            .values()
            .filter(|input| !input.lost)
            .map(|input| input.through_ns.unwrap_or(legacy_ns))
            .min()
    }

    pub fn stalled(&self, site: &str) -> bool {
        self.sites.get(site).is_some_and(|i| i.stalled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_790_000_000 * S;

    #[test]
    fn the_input_is_complete_as_far_as_the_slowest_site() {
        let mut inputs = SiteInputs::default();
        assert_eq!(inputs.complete_through(T0), None);
        inputs.mark("north", T0 + 5 * S, T0 + 9 * S);
        inputs.mark("south", T0 + 3 * S, T0 + 9 * S);
        assert_eq!(inputs.complete_through(T0 + 9 * S), Some(T0 + 3 * S));
        // A mark never moves a site back.
        inputs.mark("south", T0 + S, T0 + 9 * S);
        assert_eq!(inputs.complete_through(T0 + 9 * S), Some(T0 + 3 * S));
        // A site without marks counts as complete to the range's clock.
        inputs.seen("legacy");
        assert_eq!(inputs.complete_through(T0 + 2 * S), Some(T0 + 2 * S));
    }

    #[test]
    fn a_site_stalls_then_is_lost_then_resumes_with_its_late_receipts_counted() {
        let mut inputs = SiteInputs::default();
        inputs.mark("north", T0, T0);
        inputs.mark("south", T0, T0);
        assert!(inputs.poll(T0 + 2 * S).is_empty());
        assert_eq!(inputs.next_deadline(), Some(T0 + STALL_AFTER_NS + 1));
        inputs.mark("south", T0 + 3 * S, T0 + 3 * S);
        let stalled = inputs.poll(T0 + 3 * S);
        assert_eq!(
            stalled,
            [(
                "north".to_string(),
                InputChange::Stalled { behind_ns: 3 * S }
            )]
        );
        assert!(inputs.stalled("north"));
        // Stalled, it still holds the range back: nothing is judged past its last mark.
        assert_eq!(inputs.complete_through(T0 + 3 * S), Some(T0));
        inputs.mark("south", T0 + 60 * S, T0 + 60 * S);
        let lost = inputs.poll(T0 + 61 * S);
        assert!(
            matches!(lost[..], [(_, InputChange::Lost { .. })]),
            "{lost:?}"
        );
        // Lost, it no longer does; its receipts for times already judged are late.
        assert_eq!(inputs.complete_through(T0 + 61 * S), Some(T0 + 60 * S));
        assert!(!inputs.admit("north", T0 + 10 * S, T0 + 30 * S));
        assert!(inputs.admit("north", T0 + 31 * S, T0 + 30 * S));
        assert_eq!(
            inputs.mark("north", T0 + 62 * S, T0 + 62 * S),
            Some(InputChange::Resumed { late: 1 })
        );
        assert!(!inputs.stalled("north"));
    }

    #[test]
    fn a_backlog_of_old_marks_resumes_a_stalled_site_once_it_is_near_the_clock() {
        let mut inputs = SiteInputs::default();
        inputs.mark("north", T0, T0);
        assert!(matches!(
            inputs.poll(T0 + 5 * S)[..],
            [(_, InputChange::Stalled { .. })]
        ));
        // After the outage the site's backlog comes, marks half a second apart, read at once:
        // each is still seconds behind the clock, so the site stays stalled, and no poll says
        // it stalls again.
        let now = T0 + 6 * S;
        for k in 1..=8 {
            let through = T0 + k * S / 2;
            assert_eq!(inputs.mark("north", through, now), None, "mark {k}");
            assert!(inputs.poll(now).is_empty());
        }
        assert!(inputs.stalled("north"));
        // Within a second of the clock: resumed, once.
        assert_eq!(
            inputs.mark("north", now - RESUME_WITHIN_NS, now),
            Some(InputChange::Resumed { late: 0 })
        );
        assert_eq!(inputs.mark("north", now, now), None);
        assert!(!inputs.stalled("north"));
    }
}

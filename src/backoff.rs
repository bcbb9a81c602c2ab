//! Exponential back-off, the one rule for everything that tries again: failing accepts (the HTTP
//! port, TCP links and forwards), a serial device or TCP server coming back, a webhook delivery,
//! publishing to NATS, a forward's unresolvable address. Each failure
//! doubles the wait from `first` up to `max`; a success starts again from `first`. With jitter,
//! each wait is scaled into `[w/2, w)` by a draw the caller passes in (so the rule stays pure and
//! testable with plain numbers; [`draw`] is the shell's source), so many receivers that lost
//! the same endpoint do not come back at it in step.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    jitter: bool,
    failures: u32,
}

impl Backoff {
    pub const fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            jitter: false,
            failures: 0,
        }
    }

    /// The same, with each wait scaled by jitter.
    pub const fn with_jitter(self) -> Self {
        Self {
            jitter: true,
            ..self
        }
    }

    /// One more failure: how long to wait before trying again. `draw` in `[0, 1)` scales the
    /// wait when jitter is on (ignored otherwise).
    pub fn failed(&mut self, draw: f64) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let doubled = self
            .first
            .saturating_mul(1u32 << (self.failures - 1).min(20))
            .min(self.max);
        if self.jitter {
            doubled.mul_f64(0.5 + 0.5 * draw.clamp(0.0, 1.0))
        } else {
            doubled
        }
    }

    /// It worked: the next failure waits `first` again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// A failing accept (no descriptors left, say): 10 ms doubling to 1 s, for every listener (the
/// HTTP port, TCP links, TCP forwards), so none spins and none waits long once it can go on.
pub const fn accept_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(10), Duration::from_secs(1))
}

/// A fresh draw in `[0, 1)` for the jitter.
#[cfg(feature = "full")]
pub fn draw() -> f64 {
    rand::random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn waits_double_to_the_cap_and_a_success_starts_again() {
        let mut b = Backoff::new(10 * MS, Duration::from_secs(1));
        let waits: Vec<u64> = (0..10).map(|_| b.failed(0.7).as_millis() as u64).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        assert_eq!(b.failures(), 10);
        b.succeeded();
        assert_eq!(b.failed(0.0), 10 * MS);
        // Far past any cap it neither overflows nor grows.
        for _ in 0..100 {
            assert!(b.failed(0.0) <= Duration::from_secs(1));
        }
    }

    #[test]
    fn jitter_keeps_each_wait_in_its_upper_half() {
        let mut b = Backoff::new(500 * MS, Duration::from_secs(30)).with_jitter();
        assert_eq!(b.failed(0.0), 250 * MS);
        assert!(b.failed(0.999) < 1000 * MS);
        let mut c = Backoff::new(500 * MS, Duration::from_secs(30)).with_jitter();
        for _ in 0..20 {
            let w = c.failed(0.5);
            assert!(w >= 375 * MS && w <= Duration::from_secs(30));
        }
    }

    #[test]
    fn a_spinning_failure_is_a_few_dozen_tries_a_minute() {
        let mut b = Backoff::new(10 * MS, Duration::from_secs(1));
        let (mut elapsed, mut tries) = (Duration::ZERO, 0);
        while elapsed < Duration::from_secs(60) {
            elapsed += b.failed(0.0);
            tries += 1;
        }
        assert!(tries < 70, "{tries}");
    }
}

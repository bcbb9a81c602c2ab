//! When a webhook delivery is tried again, and after how long (pure). A 2xx is delivered; a
//! 4xx is the endpoint refusing this request (bad URL, bad token, bad body), and sending the
//! same request again cannot change that, so it is given up at once, except 408 (request
//! timeout) and 429 (too many requests), which say "later". 5xx, timeouts and connection
//! failures are tried again with exponential back-off and jitter, so many receivers that lost
//! the same endpoint do not come back at it in step.

use std::time::Duration;

/// How many times one event is tried before it is given up (about a minute of retrying).
pub const ATTEMPTS: u32 = 8;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What one attempt's result means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Delivered,
    /// Worth another attempt after a back-off.
    TryAgain,
    /// Another attempt would get the same answer.
    GiveUp,
}

/// The verdict on an HTTP status.
pub fn judge_status(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        408 | 429 => Verdict::TryAgain,
        400..=499 => Verdict::GiveUp,
        // 5xx, and 1xx/3xx that redirects did not resolve: the endpoint is not well now.
        _ => Verdict::TryAgain,
    }
}

/// The wait before attempt `attempt + 1` (after `attempt` failed, counting from 1): doubling
/// from 0.5 s up to 30 s, scaled by a jitter factor in `[0.5, 1.0)` from `unit` in `[0, 1)`.
pub fn backoff(attempt: u32, unit: f64) -> Duration {
    let doubled = FIRST_BACKOFF.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    doubled
        .min(MAX_BACKOFF)
        .mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
}

/// A fresh number in `[0, 1)` for the jitter. Jitter needs no quality, only independence
/// between processes: std's per-process random hash keys give that without a dependency.
pub fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_success_delivers_and_only_client_errors_give_up() {
        assert_eq!(judge_status(200), Verdict::Delivered);
        assert_eq!(judge_status(204), Verdict::Delivered);
        for status in [400, 401, 403, 404, 410, 413, 422] {
            assert_eq!(judge_status(status), Verdict::GiveUp, "{status}");
        }
        for status in [408, 429, 500, 502, 503, 504, 301] {
            assert_eq!(judge_status(status), Verdict::TryAgain, "{status}");
        }
    }

    #[test]
    fn backoff_doubles_to_a_cap_and_jitter_stays_within_half() {
        assert!(backoff(1, 0.999) < Duration::from_millis(500));
        assert_eq!(backoff(1, 0.0), Duration::from_millis(250));
        assert_eq!(backoff(2, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(3, 0.0), Duration::from_secs(1));
        assert_eq!(backoff(20, 0.0), Duration::from_secs(15));
        assert!(backoff(20, 0.999) < MAX_BACKOFF);
        let total: Duration = (1..ATTEMPTS).map(|a| backoff(a, 0.999)).sum();
        assert!(
            total > Duration::from_secs(45) && total < Duration::from_secs(70),
            "{total:?}"
        );
    }

    #[test]
    fn jitter_is_in_the_unit_interval_and_varies() {
        let draws: Vec<f64> = (0..64).map(|_| jitter_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let first = draws[0];
        assert!(draws.iter().any(|u| *u != first));
    }
}

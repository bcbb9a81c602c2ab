//! When a webhook delivery is tried again, and after how long (pure). A 2xx is delivered; a
//! 4xx is the endpoint refusing this request (bad URL, bad token, bad body), and sending the
//! same request again cannot change that, so it is given up at once, except 408 (request
//! timeout) and 429 (too many requests), which say "later". 5xx, timeouts and connection
//! failures are tried again with exponential back-off and jitter, so many receivers that lost
//! the same endpoint do not come back at it in step.

use crate::backoff::Backoff;
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

/// The waits between one event's attempts: doubling from 0.5 s up to 30 s, with jitter.
pub fn backoff() -> Backoff {
    Backoff::new(FIRST_BACKOFF, MAX_BACKOFF).with_jitter()
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
    fn an_events_attempts_take_about_a_minute_with_jitter() {
        // The slowest draws and the fastest: between 45 s and 70 s of retrying in all.
        for draw in [0.999, 0.0] {
            let mut b = backoff();
            let total: Duration = (1..ATTEMPTS).map(|_| b.failed(draw)).sum();
            if draw > 0.5 {
                assert!(
                    total > Duration::from_secs(45) && total < Duration::from_secs(70),
                    "{total:?}"
                );
            } else {
                assert!(total > Duration::from_secs(22), "{total:?}");
            }
        }
    }
}

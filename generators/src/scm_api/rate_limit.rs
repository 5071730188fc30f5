//! A provider's "too many requests" answer, and when it says to ask again: `Retry-After: N`
//! (GitHub's secondary limits, GitLab), or `X-RateLimit-Remaining: 0` with
//! `X-RateLimit-Reset: <epoch seconds>` (GitHub's primary limit; GitLab's `RateLimit-*` too).
//! The generator fails that pass and the controller asks again once the limit is over.

use std::fmt;
use std::time::Duration;

use crate::source::HttpAnswer;

/// When a rate-limited provider may be asked again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    /// After this many seconds (`Retry-After`).
    Seconds(u64),
    /// At this time, in seconds since the Unix epoch (`X-RateLimit-Reset`).
    ResetAt(u64),
}

impl RetryAfter {
    /// How long to wait from `now` (seconds since the Unix epoch); zero when the reset passed.
    #[must_use]
    pub fn delay(self, now: u64) -> Duration {
        match self {
            Self::Seconds(seconds) => Duration::from_secs(seconds),
            Self::ResetAt(at) => Duration::from_secs(at.saturating_sub(now)),
        }
    }
}

impl fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Seconds(seconds) => write!(f, "asked again after {seconds} s (Retry-After)"),
            Self::ResetAt(at) => {
                let when = i64::try_from(*at)
                    .ok()
                    .and_then(|at| time::OffsetDateTime::from_unix_timestamp(at).ok())
                    .and_then(|at| {
                        at.format(&time::format_description::well_known::Rfc3339)
                            .ok()
                    })
                    .unwrap_or_else(|| at.to_string());
                write!(f, "asked again when the limit resets at {when}")
            }
        }
    }
}

/// When to ask again, if `answer` says the client is rate limited (403 or 429 with
/// `Retry-After`, or with no request remaining and a reset time).
#[must_use]
pub fn rate_limited(answer: &HttpAnswer) -> Option<RetryAfter> {
    if answer.status != 403 && answer.status != 429 {
        return None;
    }
    let number = |name: &str| answer.header(name)?.trim().parse::<u64>().ok();
    if let Some(seconds) = number("retry-after") {
        return Some(RetryAfter::Seconds(seconds));
    }
    for (remaining, reset) in [
        ("x-ratelimit-remaining", "x-ratelimit-reset"),
        ("ratelimit-remaining", "ratelimit-reset"),
    ] {
        if number(remaining) == Some(0)
            && let Some(at) = number(reset)
        {
            return Some(RetryAfter::ResetAt(at));
        }
    }
    (answer.status == 429).then_some(RetryAfter::Seconds(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)]) -> HttpAnswer {
        HttpAnswer {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn reads_when_to_ask_again() {
        let cases = [
            (
                answer(
                    403,
                    &[
                        ("x-ratelimit-remaining", "0"),
                        ("x-ratelimit-reset", "1700000060"),
                    ],
                ),
                Some(RetryAfter::ResetAt(1_700_000_060)),
            ),
            (
                answer(
                    429,
                    &[("retry-after", "30"), ("x-ratelimit-remaining", "0")],
                ),
                Some(RetryAfter::Seconds(30)),
            ),
            (
                answer(
                    429,
                    &[
                        ("ratelimit-remaining", "0"),
                        ("ratelimit-reset", "1700000001"),
                    ],
                ),
                Some(RetryAfter::ResetAt(1_700_000_001)),
            ),
            (answer(429, &[]), Some(RetryAfter::Seconds(60))),
            // A 403 with requests remaining is a permission problem, not a limit.
            (
                answer(
                    403,
                    &[
                        ("x-ratelimit-remaining", "4999"),
                        ("x-ratelimit-reset", "1"),
                    ],
                ),
                None,
            ),
            (answer(200, &[("retry-after", "5")]), None),
        ];
        for (answer, expected) in cases {
            assert_eq!(rate_limited(&answer), expected, "{answer:?}");
        }
    }

    #[test]
    fn the_delay_counts_from_now() {
        assert_eq!(
            RetryAfter::ResetAt(1_000).delay(940),
            Duration::from_secs(60)
        );
        assert_eq!(RetryAfter::ResetAt(1_000).delay(2_000), Duration::ZERO);
        assert_eq!(RetryAfter::Seconds(7).delay(0), Duration::from_secs(7));
        assert_eq!(
            RetryAfter::ResetAt(1_700_000_000).to_string(),
            "asked again when the limit resets at 2023-11-14T22:13:20Z"
        );
    }
}

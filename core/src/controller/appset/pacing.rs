//! How long a reconcile of an ApplicationSet waits before it starts, so that a burst of events
//! (every status change of any of its Applications while they converge) costs a few reconciles
//! instead of one per event: the events that arrive while a reconcile waits or runs are
//! coalesced into the next one by the controller runtime. A reconcile starts at least
//! [`MIN_PAUSE`], and at least twice its predecessor's duration, after its predecessor ended, so
//! a large ApplicationSet reconciles for at most a third of the time — unless it may promote:
//! a change that completes a RollingSync step ([`super::promotion`]) is reconciled at once.
//! Unlike a debounce it never postpones a reconcile indefinitely. Pure.

use std::time::{Duration, Instant};

/// The shortest pause between two reconciles of one ApplicationSet.
pub const MIN_PAUSE: Duration = Duration::from_secs(1);

/// The previous reconcile of one ApplicationSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastReconcile {
    /// When it ended.
    pub ended: Instant,
    /// How long it ran.
    pub took: Duration,
}

/// How long the next reconcile waits at `now` (zero for the first one, once the pause is over,
/// or when it may `promote` the next step of a rollout).
#[must_use]
pub fn wait_before(last: Option<LastReconcile>, now: Instant, promote: bool) -> Duration {
    if promote {
        return Duration::ZERO;
    }
    last.map_or(Duration::ZERO, |last| {
        let pause = last.took.saturating_mul(2).max(MIN_PAUSE);
        (last.ended + pause).saturating_duration_since(now)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_the_longer_of_the_minimum_and_twice_the_last_reconcile() {
        let ended = Instant::now();
        let ms = Duration::from_millis;
        let cases = [
            ("first reconcile", None, ended, ms(0)),
            ("short one just ended", Some(ms(10)), ended, ms(1000)),
            (
                "short one, pause half over",
                Some(ms(10)),
                ended + ms(400),
                ms(600),
            ),
            ("long one just ended", Some(ms(900)), ended, ms(1800)),
            (
                "long one, pause over",
                Some(ms(900)),
                ended + ms(2000),
                ms(0),
            ),
        ];
        for (case, took, now, expected) in cases {
            let last = took.map(|took| LastReconcile { ended, took });
            assert_eq!(wait_before(last, now, false), expected, "{case}");
        }
    }

    #[test]
    fn a_promotion_is_not_delayed_by_the_pause() {
        let ended = Instant::now();
        let last = Some(LastReconcile {
            ended,
            took: Duration::from_millis(900),
        });
        assert_eq!(wait_before(last, ended, false), Duration::from_millis(1800));
        assert_eq!(wait_before(last, ended, true), Duration::ZERO);
    }
}

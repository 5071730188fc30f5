//! How long a reconcile of an ApplicationSet waits before it starts, so that a burst of events
//! (every status change of any of its Applications while they converge) costs a few reconciles
//! instead of one per event: the events that arrive while a reconcile waits or runs are
//! coalesced into the next one by the controller runtime. A reconcile starts at least
//! [`MIN_PAUSE`], and at least twice the CPU time its predecessor spent, after its predecessor
//! ended, so a large ApplicationSet takes at most a third of a core — unless it may promote: a
//! change that completes a RollingSync step ([`super::promotion`]) is reconciled at once. Time a
//! reconcile spends waiting (on the API server's answers to 20,000 creations, on `git`) does not
//! lengthen the pause: that would hold a rollout back for minutes while the machine is idle.
//! Unlike a debounce it never postpones a reconcile indefinitely. Pure.

use std::time::{Duration, Instant};

/// The shortest pause between two reconciles of one ApplicationSet.
pub const MIN_PAUSE: Duration = Duration::from_secs(1);

/// The previous reconcile of one ApplicationSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastReconcile {
    /// When it ended.
    pub ended: Instant,
    /// The CPU time it spent (its own work, not its waits).
    pub cpu: Duration,
}

/// How long the next reconcile waits at `now` (zero for the first one, once the pause is over,
/// or when it may `promote` the next step of a rollout).
#[must_use]
pub fn wait_before(last: Option<LastReconcile>, now: Instant, promote: bool) -> Duration {
    if promote {
        return Duration::ZERO;
    }
    last.map_or(Duration::ZERO, |last| {
        let pause = last.cpu.saturating_mul(2).max(MIN_PAUSE);
        (last.ended + pause).saturating_duration_since(now)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_the_longer_of_the_minimum_and_twice_the_last_reconciles_cpu_time() {
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
        for (case, cpu, now, expected) in cases {
            let last = cpu.map(|cpu| LastReconcile { ended, cpu });
            assert_eq!(wait_before(last, now, false), expected, "{case}");
        }
    }

    #[test]
    fn a_promotion_is_not_delayed_by_the_pause() {
        let ended = Instant::now();
        let last = Some(LastReconcile {
            ended,
            cpu: Duration::from_millis(900),
        });
        assert_eq!(wait_before(last, ended, false), Duration::from_millis(1800));
        assert_eq!(wait_before(last, ended, true), Duration::ZERO);
    }
}

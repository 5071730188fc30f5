//! How many routine Events a controller publishes: the Normal Events every sync of every
//! Application brings (started, succeeded) are drawn from a token bucket — a burst of
//! [`BURST`], refilled at [`PER_SECOND`] — so a fleet converging at hundreds of Applications a
//! second does not double the API server's writes with them; Warnings and the rare Events (a
//! rollout's steps, an ApplicationSet's writes) are always published. Pure: the clock is passed
//! in.

use std::time::Instant;

use super::event_reason::EventReason;

/// How many routine Events may be published at once after a quiet spell.
pub const BURST: u32 = 100;
/// How many routine Events a second are published in a sustained flow.
pub const PER_SECOND: u32 = 5;

/// A token bucket of routine Events.
#[derive(Clone, Debug)]
pub struct EventBudget {
    tokens: f64,
    refilled: Instant,
}

impl EventBudget {
    /// A full bucket at `now`.
    #[must_use]
    pub fn new(now: Instant) -> Self {
        Self {
            tokens: f64::from(BURST),
            refilled: now,
        }
    }

    /// Whether an Event of `reason` is published at `now` (a routine one takes a token).
    pub fn admit(&mut self, reason: EventReason, now: Instant) -> bool {
        if !reason.is_routine() {
            return true;
        }
        let elapsed = now.saturating_duration_since(self.refilled);
        self.tokens =
            (self.tokens + elapsed.as_secs_f64() * f64::from(PER_SECOND)).min(f64::from(BURST));
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// How long a drained bucket takes to admit one routine Event again.
    fn one_token() -> Duration {
        Duration::from_secs_f64(1.0 / f64::from(PER_SECOND))
    }

    #[test]
    fn routine_events_are_limited_after_the_burst_and_refilled_over_time() {
        let start = Instant::now();
        let mut budget = EventBudget::new(start);
        let admitted = (0..1000)
            .filter(|_| budget.admit(EventReason::SyncSucceeded, start))
            .count();
        assert_eq!(admitted, BURST as usize);
        assert!(!budget.admit(EventReason::SyncStarted, start));
        assert!(budget.admit(EventReason::SyncFailed, start), "a Warning");
        assert!(
            budget.admit(EventReason::RolloutStepStarted, start),
            "a rollout's step"
        );
        let later = start + one_token();
        assert!(budget.admit(EventReason::SyncSucceeded, later));
        assert!(!budget.admit(EventReason::SyncSucceeded, later));
        let much_later = start + Duration::from_secs(3600);
        let admitted = (0..1000)
            .filter(|_| budget.admit(EventReason::SyncSucceeded, much_later))
            .count();
        assert_eq!(admitted, BURST as usize, "never more than the burst");
    }
}

//! Whether this replica is ready: the API server answers its Lease reads. Not ready until the
//! first read answers; ready from then on, leading or standing by (a standby is ready too: it
//! takes over when the leader goes); not ready again while its reads go unanswered (the API
//! server stopped, restarting, unreachable), from the first failure until a read answers again.
//! `/readyz` says which, with the time of the first failure and the last error.

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::jiff::Timestamp;

/// Shared between the Lease loop, which marks it, and the HTTP endpoint, which reports it.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<Mutex<State>>);

/// What the Lease reads have found so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum State {
    /// No read has answered yet; the last attempt's error, if one failed.
    #[default]
    NotRead,
    /// The last read answered.
    Ready,
    /// Reads have failed since `since` (the last with `error`) after one had answered.
    Unanswered { since: Timestamp, error: String },
}

impl Readiness {
    /// A Lease read answered.
    pub fn mark_ready(&self) {
        *self.state() = State::Ready;
    }

    /// A Lease read failed at `now` with `error`; a replica that was ready is not any more.
    pub fn mark_unanswered(&self, now: Timestamp, error: &str) {
        let mut state = self.state();
        let since = match &*state {
            State::NotRead => return,
            State::Ready => now,
            State::Unanswered { since, .. } => *since,
        };
        *state = State::Unanswered {
            since,
            error: error.to_owned(),
        };
    }

    /// Whether the last Lease read answered.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        *self.state() == State::Ready
    }

    /// Why the replica is not ready (`None` when it is), as `/readyz` says it.
    #[must_use]
    pub fn not_ready(&self) -> Option<String> {
        match &*self.state() {
            State::Ready => None,
            State::NotRead => Some("the Lease has not been read yet".to_owned()),
            State::Unanswered { since, error } => Some(format!(
                "the API server has not answered a Lease read since {since}: {error}"
            )),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_read_unready_while_reads_fail_and_ready_again() {
        let readiness = Readiness::default();
        let at = |second: i64| Timestamp::from_second(1_800_000_000 + second).unwrap();
        readiness.mark_unanswered(at(0), "connection refused");
        assert_eq!(
            readiness.not_ready().as_deref(),
            Some("the Lease has not been read yet")
        );
        readiness.mark_ready();
        assert!(readiness.is_ready());
        assert_eq!(readiness.not_ready(), None);
        readiness.mark_unanswered(at(10), "no answer within 5s");
        readiness.mark_unanswered(at(12), "connection refused");
        assert!(!readiness.is_ready());
        assert_eq!(
            readiness.not_ready().as_deref(),
            Some(
                "the API server has not answered a Lease read since 2027-01-15T08:00:10Z: \
                 connection refused"
            ),
            "the first failure's time, the last error"
        );
        readiness.mark_ready();
        assert!(readiness.is_ready());
    }
}

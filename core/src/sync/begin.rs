//! Starting an operation: resume the stored one when it is still Running for the same revision
//! (its recorded results keep finished hooks from running again), otherwise start fresh.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::revisions::split_revisions;
use crate::sync::{OperationPhase, OperationState};

/// The operation to carry out, and whether it resumes a stored one.
#[must_use]
pub fn begin(
    stored: Option<OperationState>,
    revision: Option<&str>,
    new_id: &str,
    now: Time,
) -> (OperationState, bool) {
    match stored {
        Some(stored)
            if stored.phase == OperationPhase::Running
                && stored.revision.as_deref() == revision =>
        {
            (stored, true)
        }
        _ => (
            OperationState {
                phase: OperationPhase::Running,
                message: String::new(),
                revision: revision.map(str::to_owned),
                revisions: revision.map(split_revisions).unwrap_or_default(),
                operation_id: new_id.to_owned(),
                failure: None,
                started_at: Some(now),
                finished_at: None,
                resources: Vec::new(),
            },
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn stored(phase: OperationPhase, revision: &str) -> OperationState {
        let (mut state, _) = begin(None, Some(revision), "old", Time(Timestamp::UNIX_EPOCH));
        state.phase = phase;
        state
    }

    #[test]
    fn resumes_only_a_running_operation_of_the_same_revision() {
        let now = Time(Timestamp::UNIX_EPOCH);
        let cases = [
            (Some(stored(OperationPhase::Running, "abc")), "abc", true),
            (Some(stored(OperationPhase::Running, "abc")), "def", false),
            (Some(stored(OperationPhase::Succeeded, "abc")), "abc", false),
            (
                Some(stored(OperationPhase::Terminated, "abc")),
                "abc",
                false,
            ),
            (None, "abc", false),
        ];
        for (previous, revision, resumes) in cases {
            let (state, resumed) = begin(previous, Some(revision), "new", now.clone());
            assert_eq!(resumed, resumes, "{revision}");
            let id = if resumes { "old" } else { "new" };
            assert_eq!(state.operation_id, id);
            assert_eq!(state.phase, OperationPhase::Running);
            assert_eq!(state.revision.as_deref(), Some(revision));
        }
    }
}

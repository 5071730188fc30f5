//! `status.history`: a successful sync appended with an increasing id, once, at most
//! [`HISTORY_LIMIT`] entries, newest last. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::application::{HISTORY_LIMIT, InitiatedBy, RevisionHistory};
use crate::sync::{OperationPhase, OperationState};

/// The history after `state` ended, or None when it did not succeed or is already recorded (the
/// same start and revision: a terminal state saved twice is one entry).
#[must_use]
pub fn after_operation(
    history: &[RevisionHistory],
    state: &OperationState,
    initiated_by: &InitiatedBy,
    now: &Time,
) -> Option<Vec<RevisionHistory>> {
    // A multi-source Application's entry also lists its sources' `revisions`.
    let revision = state.revision.clone().unwrap_or_default();
    let recorded = history
        .iter()
        .any(|entry| entry.deploy_started_at == state.started_at && entry.revision == revision);
    if state.phase != OperationPhase::Succeeded || recorded {
        return None;
    }
    let id = history.last().map_or(0, |last| last.id + 1);
    let mut next: Vec<RevisionHistory> = history.to_vec();
    next.push(RevisionHistory {
        id,
        revision,
        revisions: state.revisions.clone(),
        deploy_started_at: state.started_at.clone(),
        deployed_at: state.finished_at.clone().unwrap_or_else(|| now.clone()),
        initiated_by: initiated_by.clone(),
    });
    let excess = next.len().saturating_sub(HISTORY_LIMIT);
    next.drain(..excess);
    Some(next)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::sync::begin;

    #[test]
    fn keeps_the_last_ten_successes() {
        let now = Time(Timestamp::from_second(5).unwrap());
        let who = InitiatedBy {
            username: String::new(),
            automated: true,
        };
        let mut history = Vec::new();
        for n in 0..12 {
            let (mut state, _) = begin(None, Some(&format!("r{n}")), "op", now.clone());
            assert_eq!(
                after_operation(&history, &state, &who, &now),
                None,
                "running"
            );
            state.phase = OperationPhase::Succeeded;
            history = after_operation(&history, &state, &who, &now).unwrap();
        }
        assert_eq!(history.len(), HISTORY_LIMIT);
        let (mut last, _) = begin(None, Some("r11"), "op", now.clone());
        last.phase = OperationPhase::Succeeded;
        assert_eq!(
            after_operation(&history, &last, &who, &now),
            None,
            "already recorded"
        );
        assert_eq!((history[0].id, history[0].revision.as_str()), (2, "r2"));
        assert_eq!((history[9].id, history[9].revision.as_str()), (11, "r11"));
        assert_eq!(history[9].deployed_at, now);
    }
}

//! `status.history`: a successful sync appended with an increasing id, once, with the sources
//! it synced, keeping the Application's `spec.revisionHistoryLimit` newest entries (default
//! [`crate::api::application::HISTORY_LIMIT`]), newest last. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::application::{ApplicationSpec, InitiatedBy, RevisionHistory};
use crate::sync::{OperationPhase, OperationState};

/// The history after `state` ended, of an Application whose spec is `spec`, or None when it
/// did not succeed or is already recorded (the newest entry has the same start and revision: a
/// terminal state saved twice is one entry). Only the newest entry is compared: start times
/// have a second's precision, and an older sync of the same revision that started in the same
/// second (a rollback right after two quick syncs) is another operation.
#[must_use]
pub fn after_operation(
    history: &[RevisionHistory],
    state: &OperationState,
    (spec, initiated_by): (&ApplicationSpec, &InitiatedBy),
    now: &Time,
) -> Option<Vec<RevisionHistory>> {
    // A multi-source Application's entry also lists its sources' `revisions`.
    let revision = state.revision.clone().unwrap_or_default();
    let recorded = history.last().is_some_and(|entry| {
        entry.deploy_started_at == state.started_at && entry.revision == revision
    });
    if state.phase != OperationPhase::Succeeded || recorded {
        return None;
    }
    let id = history.last().map_or(0, |last| last.id + 1);
    let (source, sources) = spec.deployed_sources();
    let mut next: Vec<RevisionHistory> = history.to_vec();
    next.push(RevisionHistory {
        id,
        revision,
        revisions: state.revisions.clone(),
        deploy_started_at: state.started_at.clone(),
        deployed_at: state.finished_at.clone().unwrap_or_else(|| now.clone()),
        initiated_by: initiated_by.clone(),
        source,
        sources,
    });
    let excess = next.len().saturating_sub(spec.history_limit());
    next.drain(..excess);
    Some(next)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::application::{ApplicationSource, HISTORY_LIMIT};
    use crate::sync::begin;

    /// `count` successful syncs r0, r1, … recorded in turn under `spec`.
    fn synced(spec: &ApplicationSpec, count: usize) -> Vec<RevisionHistory> {
        let now = Time(Timestamp::from_second(5).unwrap());
        let who = InitiatedBy {
            username: String::new(),
            automated: true,
        };
        let mut history = Vec::new();
        for n in 0..count {
            let (mut state, _) = begin(None, Some(&format!("r{n}")), "op", now.clone());
            assert_eq!(
                after_operation(&history, &state, (spec, &who), &now),
                None,
                "running"
            );
            state.phase = OperationPhase::Succeeded;
            history = after_operation(&history, &state, (spec, &who), &now).unwrap();
        }
        history
    }

    #[test]
    fn keeps_the_last_ten_successes_by_default() {
        let now = Time(Timestamp::from_second(5).unwrap());
        let who = InitiatedBy::default();
        let spec = ApplicationSpec {
            source: ApplicationSource {
                repo_url: "https://git.example.com/shop.git".into(),
                path: "web".into(),
                ..ApplicationSource::default()
            },
            ..ApplicationSpec::default()
        };
        let history = synced(&spec, 12);
        assert_eq!(history.len(), HISTORY_LIMIT);
        let (mut last, _) = begin(None, Some("r11"), "op", now.clone());
        last.phase = OperationPhase::Succeeded;
        assert_eq!(
            after_operation(&history, &last, (&spec, &who), &now),
            None,
            "already recorded"
        );
        assert_eq!((history[0].id, history[0].revision.as_str()), (2, "r2"));
        assert_eq!((history[9].id, history[9].revision.as_str()), (11, "r11"));
        assert_eq!(history[9].deployed_at, now);
        assert_eq!(history[9].source.as_ref(), Some(&spec.source));
        assert!(history[9].sources.is_empty());
        // A sync back to an older entry's revision that started in that entry's second (a
        // rollback right after two quick syncs) is a new entry.
        let (mut back, _) = begin(None, Some("r10"), "op", now.clone());
        back.phase = OperationPhase::Succeeded;
        assert_eq!(history[8].revision, "r10");
        assert_eq!(history[8].deploy_started_at, back.started_at);
        let after = after_operation(&history, &back, (&spec, &who), &now).expect("recorded");
        assert_eq!((after[9].id, after[9].revision.as_str()), (12, "r10"));
    }

    #[test]
    fn keeps_revision_history_limit_entries() {
        let spec = ApplicationSpec {
            revision_history_limit: Some(2),
            sources: vec![ApplicationSource {
                repo_url: "https://git.example.com/a.git".into(),
                ..ApplicationSource::default()
            }],
            ..ApplicationSpec::default()
        };
        let history = synced(&spec, 5);
        let kept: Vec<(i64, &str)> = history
            .iter()
            .map(|h| (h.id, h.revision.as_str()))
            .collect();
        assert_eq!(kept, [(3, "r3"), (4, "r4")]);
        assert_eq!(
            (history[1].source.as_ref(), &history[1].sources),
            (None, &spec.sources)
        );
        let none = ApplicationSpec {
            revision_history_limit: Some(0),
            ..ApplicationSpec::default()
        };
        assert!(synced(&none, 3).is_empty());
    }
}

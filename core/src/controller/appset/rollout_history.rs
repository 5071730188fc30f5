//! The history of a RollingSync's rollouts kept in the ApplicationSet's status
//! (`status.rolloutHistory`, newest first, at most [`MAX_ROLLOUT_HISTORY`]): a rollout is the
//! set of target revisions the Applications are brought to; a new set starts a new entry (and
//! ends one still under way as Superseded). Each pass updates the newest entry from the
//! decision — its outcome, the failed step, how many Applications were synced back — and an
//! ended entry stays as it ended, except that a failure rolled back becomes RolledBack. Written
//! with the rest of the status, so nothing changes in status while a rollout stands still. Pure:
//! the clock is an argument.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::application_set_status::{
    ConditionType, RolloutHistoryEntry, RolloutHistoryOutcome,
};
use crate::rollout::conditions::ProgressReason;
use crate::rollout::{RolloutDecision, StepState};

/// How many rollouts `status.rolloutHistory` keeps (the newest).
pub const MAX_ROLLOUT_HISTORY: usize = 10;

/// How many distinct revisions one entry lists (an ApplicationSet whose Applications track many
/// branches counts the rest in `revisionsCount`).
pub const MAX_REVISIONS: usize = 5;

/// `prior` (newest first) after the pass that decided `decision` at `now`; `prior` as it is
/// when no Application has a target revision yet.
#[must_use]
pub fn next_history(
    prior: &[RolloutHistoryEntry],
    decision: &RolloutDecision,
    now: &Time,
) -> Vec<RolloutHistoryEntry> {
    let all: BTreeSet<&str> = decision
        .application_status
        .iter()
        .flat_map(|entry| &entry.target_revisions)
        .map(String::as_str)
        .filter(|revision| !revision.is_empty())
        .collect();
    if all.is_empty() {
        return prior.to_vec();
    }
    let revisions: Vec<String> = all
        .iter()
        .take(MAX_REVISIONS)
        .map(|r| (*r).to_owned())
        .collect();
    let revisions_count = (all.len() > MAX_REVISIONS).then_some(all.len() as u64);
    let seen = observed(decision);
    let mut history = prior.to_vec();
    match history.first_mut() {
        Some(newest)
            if newest.revisions == revisions && newest.revisions_count == revisions_count =>
        {
            let rolled_back_after_failing = newest.outcome == RolloutHistoryOutcome::Failed
                && seen.outcome == RolloutHistoryOutcome::RolledBack;
            if !newest.outcome.ended() || rolled_back_after_failing {
                seen.apply(newest, now);
            }
        }
        newest => {
            if let Some(newest) = newest.filter(|newest| !newest.outcome.ended()) {
                newest.outcome = RolloutHistoryOutcome::Superseded;
                newest.finished_at = Some(now.clone());
            }
            let mut entry = RolloutHistoryEntry {
                revisions,
                revisions_count,
                started_at: now.clone(),
                finished_at: None,
                outcome: RolloutHistoryOutcome::Progressing,
                message: String::new(),
                failed_step: None,
                rollbacks: 0,
            };
            seen.apply(&mut entry, now);
            history.insert(0, entry);
            history.truncate(MAX_ROLLOUT_HISTORY);
        }
    }
    history
}

/// What one pass says of the rollout under way.
struct Observed {
    outcome: RolloutHistoryOutcome,
    message: String,
    failed_step: Option<u64>,
    rollbacks: u32,
}

impl Observed {
    /// `entry` updated: the message only once it ended, the end time when it ends.
    fn apply(self, entry: &mut RolloutHistoryEntry, now: &Time) {
        if self.outcome.ended() && entry.outcome != self.outcome {
            entry.finished_at = Some(now.clone());
            entry.message = self.message;
        }
        entry.outcome = self.outcome;
        entry.failed_step = self.failed_step.or(entry.failed_step);
        entry.rollbacks = self.rollbacks.max(entry.rollbacks);
    }
}

/// The outcome, message, failed step and rollbacks `decision` shows.
fn observed(decision: &RolloutDecision) -> Observed {
    let progressing = decision
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutProgressing);
    let reason = progressing.map_or("", |c| c.reason.as_str());
    let failed_report = decision
        .step_reports
        .iter()
        .find(|report| report.state == StepState::Failed)
        .map(|report| report.step as u64);
    let rollback = decision.rollback.as_ref();
    let outcome = match rollback {
        Some(rollback) if rollback.completed_at.is_some() => RolloutHistoryOutcome::RolledBack,
        Some(_) => RolloutHistoryOutcome::Progressing,
        None if reason == ProgressReason::ApplicationSetRolloutComplete.as_str() => {
            RolloutHistoryOutcome::Complete
        }
        None if failed_report.is_some() => RolloutHistoryOutcome::Failed,
        None => RolloutHistoryOutcome::Progressing,
    };
    Observed {
        outcome,
        message: progressing.map_or_else(String::new, |c| c.message.clone()),
        failed_step: rollback.map(|r| r.failed_step).or(failed_report),
        rollbacks: rollback.map_or(0, |r| {
            let back = r
                .applications
                .iter()
                .filter(|app| app.rolled_back_at.is_some() && !app.revisions.is_empty())
                .count();
            u32::try_from(back).unwrap_or(u32::MAX)
        }),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::application_set_status::{
        ApplicationSetApplicationStatus, ApplicationSetCondition, ConditionStatus,
        RolledBackApplication, RolloutApplicationState, RolloutRollback,
    };

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).expect("a valid time"))
    }

    /// A decision whose Applications target `revisions` (one each), with `reason`.
    fn decided(revisions: &[&str], reason: ProgressReason) -> RolloutDecision {
        RolloutDecision {
            application_status: revisions
                .iter()
                .enumerate()
                .map(|(i, revision)| ApplicationSetApplicationStatus {
                    application: format!("app-{i}"),
                    status: RolloutApplicationState::Healthy,
                    step: "1".to_owned(),
                    target_revisions: vec![(*revision).to_owned()],
                    last_transition_time: None,
                    message: String::new(),
                })
                .collect(),
            conditions: vec![ApplicationSetCondition {
                type_: ConditionType::RolloutProgressing,
                status: ConditionStatus::True,
                reason: reason.as_str().to_owned(),
                message: format!("{} now", reason.as_str()),
                last_transition_time: None,
            }],
            ..RolloutDecision::default()
        }
    }

    fn entry(revision: &str, started: i64, outcome: RolloutHistoryOutcome) -> RolloutHistoryEntry {
        RolloutHistoryEntry {
            revisions: vec![revision.to_owned()],
            revisions_count: None,
            started_at: at(started),
            finished_at: outcome.ended().then(|| at(started + 1)),
            outcome,
            message: String::new(),
            failed_step: None,
            rollbacks: 0,
        }
    }

    #[test]
    fn a_new_revision_starts_an_entry_that_completes_once() {
        let started = next_history(
            &[],
            &decided(&["a1", "a1"], ProgressReason::StepProgressing),
            &at(10),
        );
        assert_eq!(
            started,
            [entry("a1", 10, RolloutHistoryOutcome::Progressing)]
        );
        // Nothing new: the same entry, unchanged (status is not rewritten).
        let same = next_history(
            &started,
            &decided(&["a1"], ProgressReason::StepBaking),
            &at(20),
        );
        assert_eq!(same, started);
        let complete = next_history(
            &same,
            &decided(&["a1"], ProgressReason::ApplicationSetRolloutComplete),
            &at(30),
        );
        let mut expected = entry("a1", 10, RolloutHistoryOutcome::Complete);
        expected.finished_at = Some(at(30));
        expected.message = "ApplicationSetRolloutComplete now".to_owned();
        assert_eq!(complete, [expected.clone()]);
        // Complete stays complete (an Application degraded later is not this rollout's end).
        let later = next_history(
            &complete,
            &decided(&["a1"], ProgressReason::RolloutStalled),
            &at(40),
        );
        assert_eq!(later, [expected]);
        // No target revision yet: nothing to record.
        assert!(next_history(&[], &RolloutDecision::default(), &at(1)).is_empty());
    }

    #[test]
    fn newer_revisions_supersede_a_rollout_under_way_and_the_history_is_bounded() {
        let running = vec![entry("a1", 10, RolloutHistoryOutcome::Progressing)];
        let next = next_history(
            &running,
            &decided(&["b2"], ProgressReason::StepWaiting),
            &at(50),
        );
        let mut superseded = entry("a1", 10, RolloutHistoryOutcome::Superseded);
        superseded.finished_at = Some(at(50));
        assert_eq!(
            next,
            [
                entry("b2", 50, RolloutHistoryOutcome::Progressing),
                superseded
            ]
        );
        let full: Vec<RolloutHistoryEntry> = (0..MAX_ROLLOUT_HISTORY as i64)
            .map(|i| entry(&format!("r{i}"), i, RolloutHistoryOutcome::Complete))
            .collect();
        let next = next_history(
            &full,
            &decided(&["new"], ProgressReason::StepWaiting),
            &at(99),
        );
        assert_eq!(next.len(), MAX_ROLLOUT_HISTORY);
        assert_eq!(next[0].revisions, ["new"]);
        assert_eq!(next[1], full[0]);
        // Many branches: the first few listed, all counted.
        let many: Vec<String> = (0..8).map(|i| format!("rev{i}")).collect();
        let names: Vec<&str> = many.iter().map(String::as_str).collect();
        let wide = next_history(&[], &decided(&names, ProgressReason::StepWaiting), &at(1));
        assert_eq!(wide[0].revisions.len(), MAX_REVISIONS);
        assert_eq!(wide[0].revisions_count, Some(8));
    }

    #[test]
    fn a_failed_step_then_its_rollback_are_recorded_with_the_applications_synced_back() {
        let running = vec![entry("b2", 10, RolloutHistoryOutcome::Progressing)];
        let mut failing = decided(&["b2"], ProgressReason::StepFailed);
        failing.step_reports = vec![crate::rollout::StepReport {
            step: 2,
            name: None,
            depends_on: None,
            state: StepState::Failed,
            max_update: "100%".to_owned(),
            limit: None,
            in_flight: 0,
            progress_deadline: None,
            bake_time: None,
            analysis: None,
            next: String::new(),
            after_application_sets: Vec::new(),
        }];
        let failed = next_history(&running, &failing, &at(20));
        assert_eq!(failed[0].outcome, RolloutHistoryOutcome::Failed);
        assert_eq!(
            (failed[0].failed_step, failed[0].finished_at.clone()),
            (Some(2), Some(at(20)))
        );
        let mut rolled_back = decided(&["b2"], ProgressReason::RolloutRolledBack);
        let back = |app: &str, revisions: &[&str]| RolledBackApplication {
            application: app.to_owned(),
            step: 2,
            revisions: revisions.iter().map(|r| (*r).to_owned()).collect(),
            from_revisions: vec!["b2".to_owned()],
            rolled_back_at: Some(at(25)),
        };
        rolled_back.rollback = Some(RolloutRollback {
            failed_step: 2,
            failure: "backend left Healthy".to_owned(),
            started_at: at(21),
            completed_at: Some(at(30)),
            applications: vec![back("backend", &["a1"]), back("frontend", &[])],
        });
        let history = next_history(&failed, &rolled_back, &at(30));
        assert_eq!(history[0].outcome, RolloutHistoryOutcome::RolledBack);
        assert_eq!(history[0].finished_at, Some(at(30)));
        assert_eq!((history[0].failed_step, history[0].rollbacks), (Some(2), 1));
        assert_eq!(history[0].message, "RolloutRolledBack now");
    }
}

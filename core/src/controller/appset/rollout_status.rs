//! What a rollout pass writes into the ApplicationSet's status (`applicationStatus` and the
//! rollout's conditions, merged with the rest so status is still written once) and the Events
//! that mark its transitions: a step starting, the rollout completing, stalling (or a step
//! failing its bake), being paused, resumed or misconfigured. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::rollout_history::next_history;
use super::rollout_history_events::{ended, ended_note};
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ApplicationSetStatus, ConditionType, RolloutApplicationState,
};
use crate::controller::event_reason::EventReason;
use crate::rollout::conditions::ProgressReason;
use crate::rollout::{RolloutDecision, merge_conditions};

/// What the rollout contributes to this reconcile's status.
#[derive(Clone, Copy, Debug)]
pub enum RolloutOutcome<'a> {
    /// The ApplicationSet does not use RollingSync: no rollout status at all.
    Off,
    /// The rollout could not run this time: its status stays as it was.
    Kept,
    /// A pass decided this.
    Decided(&'a RolloutDecision),
}

/// `status` with the rollout's part replaced as `outcome` says (a decision at `now` also moves
/// the history of rollouts along, [`super::rollout_history`]).
#[must_use]
pub fn with_rollout(
    mut status: ApplicationSetStatus,
    outcome: RolloutOutcome<'_>,
    now: &Time,
) -> ApplicationSetStatus {
    match outcome {
        RolloutOutcome::Kept => {}
        RolloutOutcome::Off => {
            status.application_status.clear();
            status.rollout_steps.clear();
            status.rollout_rollback = None;
            status.rollout_history.clear();
            status.conditions = merge_conditions(&status.conditions, &[]);
        }
        RolloutOutcome::Decided(decision) => {
            status
                .application_status
                .clone_from(&decision.application_status);
            status.rollout_steps.clone_from(&decision.step_status);
            status.rollout_rollback.clone_from(&decision.rollback);
            status.rollout_history = next_history(&status.rollout_history, decision, now);
            status.conditions = merge_conditions(&status.conditions, &decision.conditions);
        }
    }
    status
}

/// A Kubernetes Event about the rollout, on its ApplicationSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutEvent {
    pub reason: EventReason,
    pub note: String,
}

/// The Events for going from `old` to `new` status, with a `RolloutEnded` for each rollout of
/// the history that ended ([`super::rollout_history_events`]).
#[must_use]
pub fn rollout_events(
    old: Option<&ApplicationSetStatus>,
    new: &ApplicationSetStatus,
    decision: &RolloutDecision,
) -> Vec<RolloutEvent> {
    let progress = |s: Option<&ApplicationSetStatus>| {
        s.and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == ConditionType::RolloutProgressing)
        })
        .map(|c| (c.reason.clone(), c.message.clone()))
    };
    let (old_reason, _) = progress(old).unzip();
    let Some((reason, message)) = progress(Some(new)) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    let old_entries = old.map_or(&[][..], |s| s.application_status.as_slice());
    let before = current_step(old_entries);
    let now = current_step(&new.application_status);
    let started = |step: usize| {
        let report = decision.step_reports.iter().find(|r| r.step == step);
        let name = report
            .and_then(|r| r.name.as_deref())
            .map_or_else(String::new, |name| format!(" ({name})"));
        let next = report.map_or_else(String::new, |r| format!(": {}", r.next));
        RolloutEvent {
            reason: EventReason::RolloutStepStarted,
            note: format!("step {step} of {}{name}{next}", decision.steps.len()),
        }
    };
    if decision.step_reports.iter().any(|r| r.depends_on.is_some()) {
        // A graph: each step whose first Application left Waiting in this pass started, the
        // parallel ones together.
        events.extend(
            decision
                .step_reports
                .iter()
                .filter(|r| {
                    under_way(&new.application_status, r.step) && !under_way(old_entries, r.step)
                })
                .map(|r| started(r.step)),
        );
        if now.is_none()
            && before.is_some()
            && reason == ProgressReason::ApplicationSetRolloutComplete.as_str()
        {
            events.push(RolloutEvent {
                reason: EventReason::RolloutComplete,
                note: message.clone(),
            });
        }
    } else if before != now && !decision.steps.is_empty() {
        match now {
            Some(step) => events.push(started(step)),
            None if reason == ProgressReason::ApplicationSetRolloutComplete.as_str() => {
                events.push(RolloutEvent {
                    reason: EventReason::RolloutComplete,
                    note: message.clone(),
                });
            }
            None => {}
        }
    }
    if old_reason.as_deref() != Some(reason.as_str()) {
        let flagged = [
            (ProgressReason::RolloutStalled, EventReason::RolloutStalled),
            (ProgressReason::StepFailed, EventReason::RolloutStalled),
            (
                ProgressReason::RolloutRolledBack,
                EventReason::RolloutRolledBack,
            ),
            (
                ProgressReason::InvalidRolloutConfig,
                EventReason::InvalidRolloutConfig,
            ),
            (ProgressReason::RolloutPaused, EventReason::RolloutPaused),
        ];
        if let Some((_, event)) = flagged.iter().find(|(r, _)| r.as_str() == reason) {
            events.push(RolloutEvent {
                reason: *event,
                note: message.clone(),
            });
        } else if old_reason.as_deref() == Some(ProgressReason::RolloutPaused.as_str()) {
            events.push(RolloutEvent {
                reason: EventReason::RolloutResumed,
                note: message,
            });
        }
    }
    let prior_history = old.map_or(&[][..], |s| s.rollout_history.as_slice());
    events.extend(
        ended(prior_history, &new.rollout_history)
            .into_iter()
            .map(|entry| RolloutEvent {
                reason: EventReason::RolloutEnded,
                note: ended_note(entry),
            }),
    );
    events
}

/// Whether an Application of `step` is Pending or Progressing.
fn under_way(entries: &[ApplicationSetApplicationStatus], step: usize) -> bool {
    let step = step.to_string();
    entries.iter().any(|e| {
        e.step == step
            && matches!(
                e.status,
                RolloutApplicationState::Pending | RolloutApplicationState::Progressing
            )
    })
}

/// The lowest step with an Application not yet Healthy (steps `-1` do not count).
fn current_step(entries: &[ApplicationSetApplicationStatus]) -> Option<usize> {
    entries
        .iter()
        .filter(|e| e.status != RolloutApplicationState::Healthy)
        .filter_map(|e| e.step.parse::<usize>().ok())
        .filter(|step| *step >= 1)
        .min()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::application_set_status::ApplicationSetCondition;
    use crate::rollout::conditions::{holds, progressing};
    use crate::rollout::decision::{StepReport, StepState};

    fn now() -> Timestamp {
        Timestamp::from_second(100).unwrap()
    }

    fn entry(
        app: &str,
        step: &str,
        state: RolloutApplicationState,
    ) -> ApplicationSetApplicationStatus {
        ApplicationSetApplicationStatus {
            application: app.into(),
            status: state,
            step: step.into(),
            target_revisions: vec![],
            last_transition_time: None,
            message: String::new(),
        }
    }

    fn status(
        entries: Vec<ApplicationSetApplicationStatus>,
        reason: ProgressReason,
    ) -> ApplicationSetStatus {
        ApplicationSetStatus {
            conditions: vec![progressing(reason, format!("{reason:?} message"), now())],
            application_status: entries,
            ..ApplicationSetStatus::default()
        }
    }

    /// A Progressing step's report with one Application in flight.
    fn report(
        step: usize,
        name: Option<&str>,
        depends_on: Option<Vec<usize>>,
        next: &str,
    ) -> StepReport {
        StepReport {
            step,
            name: name.map(str::to_owned),
            depends_on,
            after_application_sets: Vec::new(),
            state: StepState::Progressing,
            max_update: "unlimited".into(),
            limit: None,
            in_flight: 1,
            progress_deadline: None,
            bake_time: None,
            analysis: None,
            next: next.into(),
        }
    }

    fn decision() -> RolloutDecision {
        RolloutDecision {
            steps: [(1, vec!["db".into()]), (2, vec!["web".into()])].into(),
            step_reports: vec![report(2, None, None, "syncs web now")],
            ..RolloutDecision::default()
        }
    }

    /// (old status, new status, expected (reason, warning, note)).
    type Case<'a> = (
        Option<&'a ApplicationSetStatus>,
        &'a ApplicationSetStatus,
        &'a [(&'a str, bool, &'a str)],
    );

    #[test]
    fn events_mark_step_starts_completion_stalls_pauses_and_resumes() {
        use ProgressReason::{
            ApplicationSetRolloutComplete, RolloutPaused, RolloutStalled, StepProgressing,
        };
        use RolloutApplicationState::{Healthy, Pending, Waiting};
        let db_done = || entry("db", "1", Healthy);
        let step1 = status(
            vec![entry("db", "1", Pending), entry("web", "2", Waiting)],
            StepProgressing,
        );
        let step2 = status(vec![db_done(), entry("web", "2", Pending)], StepProgressing);
        let stalled = status(vec![db_done(), entry("web", "2", Pending)], RolloutStalled);
        let paused = status(vec![db_done(), entry("web", "2", Pending)], RolloutPaused);
        let done = status(
            vec![
                db_done(),
                entry("web", "2", Healthy),
                entry("x", "-1", Waiting),
            ],
            ApplicationSetRolloutComplete,
        );
        let cases: [Case<'_>; 7] = [
            (
                None,
                &step1,
                &[("RolloutStepStarted", false, "step 1 of 2")],
            ),
            (Some(&step1), &step1, &[]),
            (
                Some(&step1),
                &step2,
                &[("RolloutStepStarted", false, "step 2 of 2: syncs web now")],
            ),
            (
                Some(&step2),
                &stalled,
                &[("RolloutStalled", true, "RolloutStalled message")],
            ),
            (
                Some(&step2),
                &paused,
                &[("RolloutPaused", false, "RolloutPaused message")],
            ),
            (
                Some(&paused),
                &step2,
                &[("RolloutResumed", false, "StepProgressing message")],
            ),
            (
                Some(&step2),
                &done,
                &[(
                    "RolloutComplete",
                    false,
                    "ApplicationSetRolloutComplete message",
                )],
            ),
        ];
        for (index, (old, new, expected)) in cases.into_iter().enumerate() {
            let events = rollout_events(old, new, &decision());
            let summary: Vec<(&str, bool, &str)> = events
                .iter()
                .map(|e| (e.reason.as_str(), e.reason.is_warning(), e.note.as_str()))
                .collect();
            assert_eq!(summary, expected, "case {index}");
        }
    }

    #[test]
    fn parallel_steps_of_a_graph_start_together_each_named() {
        use RolloutApplicationState::{Healthy, Pending, Waiting};
        let report = |step: usize, name: &str, depends_on: Vec<usize>| {
            report(
                step,
                Some(name),
                Some(depends_on),
                &format!("syncs {name} now"),
            )
        };
        let graph = RolloutDecision {
            steps: [
                (1, vec!["db".into()]),
                (2, vec!["eu".into()]),
                (3, vec!["us".into()]),
            ]
            .into(),
            step_reports: vec![
                report(1, "db", vec![]),
                report(2, "eu", vec![1]),
                report(3, "us", vec![1]),
            ],
            ..RolloutDecision::default()
        };
        let db_done = status(
            vec![
                entry("db", "1", Healthy),
                entry("eu", "2", Waiting),
                entry("us", "3", Waiting),
            ],
            ProgressReason::StepProgressing,
        );
        let both = status(
            vec![
                entry("db", "1", Healthy),
                entry("eu", "2", Pending),
                entry("us", "3", Pending),
            ],
            ProgressReason::StepProgressing,
        );
        let notes: Vec<String> = rollout_events(Some(&db_done), &both, &graph)
            .into_iter()
            .map(|e| format!("{}: {}", e.reason.as_str(), e.note))
            .collect();
        assert_eq!(
            notes,
            [
                "RolloutStepStarted: step 2 of 3 (eu): syncs eu now",
                "RolloutStepStarted: step 3 of 3 (us): syncs us now"
            ]
        );
        assert!(rollout_events(Some(&both), &both, &graph).is_empty());
    }

    #[test]
    fn status_takes_the_decision_or_drops_the_rollout() {
        let other = holds(
            ConditionType::ResourcesUpToDate,
            "UpToDate",
            "ok".into(),
            now(),
        );
        let mut old = status(
            vec![entry("db", "1", RolloutApplicationState::Pending)],
            ProgressReason::StepWaiting,
        );
        old.conditions.insert(0, other.clone());
        let decided = RolloutDecision {
            application_status: vec![entry("db", "1", RolloutApplicationState::Healthy)],
            conditions: vec![progressing(
                ProgressReason::ApplicationSetRolloutComplete,
                "done".into(),
                now(),
            )],
            ..RolloutDecision::default()
        };
        let new = with_rollout(old.clone(), RolloutOutcome::Decided(&decided), &Time(now()));
        assert_eq!(new.application_status, decided.application_status);
        let types: Vec<(ConditionType, &str)> = new
            .conditions
            .iter()
            .map(|c: &ApplicationSetCondition| (c.type_, c.reason.as_str()))
            .collect();
        assert_eq!(
            types,
            [
                (ConditionType::ResourcesUpToDate, "UpToDate"),
                (
                    ConditionType::RolloutProgressing,
                    "ApplicationSetRolloutComplete"
                )
            ]
        );
        assert_eq!(
            with_rollout(old.clone(), RolloutOutcome::Kept, &Time(now())),
            old
        );
        let off = with_rollout(old, RolloutOutcome::Off, &Time(now()));
        assert!(off.application_status.is_empty());
        assert_eq!(off.conditions, [other]);
    }
}

//! Table-driven tests of the step function, one per rule of issue 6.

use std::collections::BTreeMap;

use flotilla_generators::selector::LabelSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::api::application::ApplicationDestination;
use crate::api::application_set::{
    OnFailure, RollingSync, RollingSyncStep, RolloutStrategy, StrategyType,
};
use crate::api::application_set_status::{
    AnalysisCluster, ApplicationSetApplicationStatus, ConditionStatus, ConditionType,
    RolloutApplicationState as State, RolloutStepStatus, SyncStatusCode,
};
use crate::api::operation_state::OperationPhase;
use crate::health::HealthStatus;

pub(super) const R1: &str = "r1";
const R2: &str = "r2";

/// `12:00:00` on a fixed day.
pub(super) fn at(time: &str) -> Timestamp {
    format!("2025-03-01T{time}Z").parse().unwrap()
}

pub(super) fn tier_step(tier: &str, max_update: Option<&str>) -> RollingSyncStep {
    RollingSyncStep {
        match_expressions: vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "In".into(),
            values: vec![tier.into()],
        }],
        max_update: max_update.map(|m| IntOrString::String(m.into())),
        ..RollingSyncStep::default()
    }
}

/// A RollingSync strategy with a 10-minute progress deadline (shared with the config tests).
pub(super) fn strategy(steps: Vec<RollingSyncStep>) -> RolloutStrategy {
    RolloutStrategy {
        type_: StrategyType::RollingSync,
        rolling_sync: Some(RollingSync {
            steps,
            progress_deadline: Some("10m".into()),
            ..RollingSync::default()
        }),
        paused: false,
        deletion_order: None,
        removal_order: None,
    }
}

fn three_tiers() -> RolloutStrategy {
    strategy(vec![
        tier_step("db", Some("100%")),
        tier_step("backend", Some("100%")),
        tier_step("frontend", Some("100%")),
    ])
}

/// An existing Application, Healthy but OutOfSync with target `r1`.
pub(super) fn app(name: &str, tier: &str) -> ApplicationState {
    ApplicationState {
        name: name.into(),
        labels: BTreeMap::from([("tier".to_string(), tier.to_string())]),
        exists: true,
        spec_changed: false,
        target_revisions: vec![R1.into()],
        status: ObservedStatus {
            health: HealthStatus::Healthy,
            sync: SyncStatusCode::OutOfSync,
            revisions: vec![R1.into()],
            ..ObservedStatus::default()
        },
        sync_blocked_by: None,
        previous_revisions: Vec::new(),
        destination: ApplicationDestination::default(),
    }
}

/// Healthy and Synced on `r1` after a sync that started at `started`.
pub(super) fn done(mut app: ApplicationState, started: &str) -> ApplicationState {
    app.status.sync = SyncStatusCode::Synced;
    app.status.health = HealthStatus::Healthy;
    app.status.operation_state = Some(OperationState {
        phase: OperationPhase::Succeeded,
        started_at: at(started),
        message: String::new(),
        revisions: Vec::new(),
    });
    app.status.reconciled_at = Some(
        at(started)
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(30))
            .unwrap(),
    );
    app
}

/// A sync in `phase` started at `started`, health Progressing with `message`.
pub(super) fn syncing(
    mut app: ApplicationState,
    phase: OperationPhase,
    started: &str,
    message: &str,
) -> ApplicationState {
    app.status.health = HealthStatus::Progressing;
    app.status.health_message = message.into();
    app.status.operation_state = Some(OperationState {
        phase,
        started_at: at(started),
        message: String::new(),
        revisions: Vec::new(),
    });
    app
}

fn entry(name: &str, status: State, step: &str, since: &str) -> ApplicationSetApplicationStatus {
    ApplicationSetApplicationStatus {
        application: name.into(),
        status,
        step: step.into(),
        target_revisions: vec![R1.into()],
        last_transition_time: Some(Time(at(since))),
        message: "prior".into(),
    }
}

pub(super) fn run(
    strategy: RolloutStrategy,
    applications: Vec<ApplicationState>,
    prior: Vec<ApplicationSetApplicationStatus>,
    now: &str,
) -> RolloutDecision {
    advance(&RolloutInput {
        now: at(now),
        strategy,
        applications,
        prior_application_status: prior,
        prior_step_status: Vec::new(),
        promote: None,
        prior_rollback: None,
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    })
}

/// The next pass after `prior` (its statuses and step records), at `now`.
pub(super) fn replay(
    strategy: &RolloutStrategy,
    applications: Vec<ApplicationState>,
    prior: &RolloutDecision,
    now: &str,
) -> RolloutDecision {
    advance(&RolloutInput {
        now: at(now),
        strategy: strategy.clone(),
        applications,
        prior_application_status: prior.application_status.clone(),
        prior_step_status: prior.step_status.clone(),
        promote: None,
        prior_rollback: prior.rollback.clone(),
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    })
}

pub(super) fn states(decision: &RolloutDecision) -> Vec<(String, State)> {
    decision
        .application_status
        .iter()
        .map(|e| (e.application.clone(), e.status))
        .collect()
}

pub(super) fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

pub(super) fn progress(decision: &RolloutDecision) -> (ConditionStatus, String, String) {
    let c = decision
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutProgressing)
        .expect("RolloutProgressing is always set");
    (c.status, c.reason.clone(), c.message.clone())
}

pub(super) fn pairs(list: &[(&str, State)]) -> Vec<(String, State)> {
    list.iter().map(|(n, s)| ((*n).to_string(), *s)).collect()
}

#[test]
fn first_pass_promotes_only_the_first_step() {
    let d = run(
        three_tiers(),
        vec![
            app("frontend", "frontend"),
            app("db", "db"),
            app("backend", "backend"),
        ],
        vec![],
        "12:00:00",
    );
    assert_eq!(
        states(&d),
        pairs(&[
            ("backend", State::Waiting),
            ("db", State::Pending),
            ("frontend", State::Waiting)
        ])
    );
    assert_eq!(
        d.steps,
        BTreeMap::from([
            (1, names(&["db"])),
            (2, names(&["backend"])),
            (3, names(&["frontend"]))
        ])
    );
    assert_eq!(d.apps_to_sync, names(&["db"]));
    assert_eq!(d.sync_triggered, names(&["db"]));
    assert_eq!(d.application_status[1].step, "1");
    assert_eq!(d.application_status[0].step, "2");
    let states: Vec<StepState> = d.step_reports.iter().map(|r| r.state).collect();
    assert_eq!(
        states,
        [StepState::Progressing, StepState::Closed, StepState::Closed]
    );
    assert_eq!(progress(&d).1, "StepProgressing");
}

#[test]
fn pending_moves_to_progressing_only_for_a_sync_started_after_promotion() {
    // (operation start, expected status, still triggered)
    let cases = [
        (None, State::Pending, true),
        (Some("11:59:00"), State::Pending, true), // an older sync does not count
        (Some("12:00:30"), State::Progressing, false),
    ];
    for (started, expected, triggered) in cases {
        let mut db = app("db", "db");
        if let Some(started) = started {
            db = syncing(db, OperationPhase::Succeeded, started, "");
        }
        let d = run(
            three_tiers(),
            vec![db],
            vec![entry("db", State::Pending, "1", "12:00:00")],
            "12:01:00",
        );
        assert_eq!(d.application_status[0].status, expected, "{started:?}");
        assert_eq!(
            d.sync_triggered.contains(&"db".to_string()),
            triggered,
            "{started:?}"
        );
    }
}

#[test]
fn a_sync_of_another_revision_in_the_second_of_promotion_is_not_the_one_requested() {
    // Times have whole seconds: the previous revision's sync started in the second the entry
    // became Pending, which a comparison of times alone took for the requested sync.
    let mut db = syncing(app("db", "db"), OperationPhase::Succeeded, "12:00:00", "");
    db.target_revisions = vec![R2.into()];
    let mut pending = entry("db", State::Pending, "1", "12:00:00");
    pending.target_revisions = vec![R2.into()];
    for (synced, expected) in [(R1, State::Pending), (R2, State::Progressing)] {
        let mut db = db.clone();
        db.status.operation_state.as_mut().unwrap().revisions = vec![synced.into()];
        let d = run(three_tiers(), vec![db], vec![pending.clone()], "12:00:01");
        assert_eq!(d.application_status[0].status, expected, "synced {synced}");
    }
}

#[test]
fn a_pending_app_with_an_older_sync_still_running_is_not_triggered_again() {
    let db = syncing(app("db", "db"), OperationPhase::Running, "11:59:00", "");
    let d = run(
        three_tiers(),
        vec![db],
        vec![entry("db", State::Pending, "1", "12:00:00")],
        "12:01:00",
    );
    assert_eq!(d.application_status[0].status, State::Pending);
    assert!(d.sync_triggered.is_empty());
}

#[test]
fn progressing_becomes_healthy_only_when_healthy_synced_on_target_and_reconciled() {
    let mut stale = done(app("db", "db"), "12:00:10");
    stale.status.reconciled_at = Some(at("12:00:00"));
    let mut wrong_revision = done(app("db", "db"), "12:00:10");
    wrong_revision.status.revisions = vec![R2.into()];
    let cases = [
        (done(app("db", "db"), "12:00:10"), State::Healthy),
        (
            syncing(
                app("db", "db"),
                OperationPhase::Running,
                "12:00:10",
                "1/3 pods ready",
            ),
            State::Progressing,
        ),
        (stale, State::Progressing),
        (wrong_revision, State::Progressing),
    ];
    for (db, expected) in cases {
        let d = run(
            three_tiers(),
            vec![db.clone()],
            vec![entry("db", State::Progressing, "1", "12:00:20")],
            "12:02:00",
        );
        assert_eq!(d.application_status[0].status, expected, "{db:?}");
    }
}

#[test]
fn the_next_step_opens_only_when_every_app_before_it_is_healthy() {
    let prior = vec![
        entry("db", State::Progressing, "1", "12:00:20"),
        entry("backend", State::Waiting, "2", "12:00:00"),
        entry("frontend", State::Waiting, "3", "12:00:00"),
    ];
    let apps = vec![
        done(app("db", "db"), "12:00:10"),
        app("backend", "backend"),
        app("frontend", "frontend"),
    ];
    let d = run(three_tiers(), apps, prior, "12:03:00");
    assert_eq!(
        states(&d),
        pairs(&[
            ("backend", State::Pending),
            ("db", State::Healthy),
            ("frontend", State::Waiting)
        ])
    );
    assert_eq!(d.sync_triggered, names(&["backend"]));
    assert_eq!(d.apps_to_sync, names(&["backend", "db"]));
    assert_eq!(d.step_reports[0].state, StepState::Complete);
}

#[test]
fn max_update_25_percent_of_eight_keeps_at_most_two_in_flight() {
    let strategy = strategy(vec![tier_step("web", Some("25%"))]);
    let mut apps: Vec<ApplicationState> = (0..8).map(|i| app(&format!("web-{i}"), "web")).collect();
    let mut prior = vec![];
    let mut max_in_flight = 0;
    for minute in 0..30 {
        let now = format!("12:{minute:02}:00");
        let d = run(strategy.clone(), apps.clone(), prior, &now);
        let in_flight = d
            .application_status
            .iter()
            .filter(|e| matches!(e.status, State::Pending | State::Progressing))
            .count();
        max_in_flight = max_in_flight.max(in_flight);
        // The cluster reacts: triggered syncs start now; syncs started a minute ago finish.
        for app in &mut apps {
            if d.sync_triggered.contains(&app.name) {
                *app = syncing(
                    app.clone(),
                    OperationPhase::Running,
                    &format!("12:{minute:02}:10"),
                    "",
                );
            } else if let Some(op) = &app.status.operation_state
                && op.phase == OperationPhase::Running
            {
                let started = op.started_at.strftime("%H:%M:%S").to_string();
                *app = done(app.clone(), &started);
            }
        }
        prior = d.application_status;
    }
    assert_eq!(max_in_flight, 2);
    assert!(
        prior.iter().all(|e| e.status == State::Healthy),
        "{prior:?}"
    );
}

#[test]
fn max_update_budgets() {
    // (maxUpdate, apps in step, promoted on the first pass)
    let cases = [
        (None, 5, 5),
        (Some("3"), 5, 3),
        (Some("25%"), 8, 2),
        (Some("10%"), 5, 1),
        (Some("0"), 5, 0),
        (Some("0%"), 5, 0),
    ];
    for (max_update, count, expected) in cases {
        let apps = (0..count).map(|i| app(&format!("a{i}"), "web")).collect();
        let d = run(
            strategy(vec![tier_step("web", max_update)]),
            apps,
            vec![],
            "12:00:00",
        );
        assert_eq!(
            d.sync_triggered.len(),
            expected,
            "{max_update:?} of {count}"
        );
        let expected_names: Vec<String> = (0..expected).map(|i| format!("a{i}")).collect();
        assert_eq!(d.sync_triggered, expected_names, "promoted in name order");
    }
}

#[test]
fn zero_max_update_holds_the_step_and_everything_after_it() {
    let d = run(
        strategy(vec![tier_step("db", Some("0%")), tier_step("web", None)]),
        vec![app("db", "db"), app("web", "web")],
        vec![],
        "12:00:00",
    );
    assert_eq!(
        states(&d),
        pairs(&[("db", State::Waiting), ("web", State::Waiting)])
    );
    assert!(d.sync_triggered.is_empty());
    assert_eq!(d.step_reports[0].state, StepState::Held);
    assert_eq!(d.step_reports[1].state, StepState::Closed);
    let (status, reason, message) = progress(&d);
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::True, "StepHeld")
    );
    assert!(
        message.contains("maxUpdate 0% lets nothing sync"),
        "{message}"
    );
}

#[test]
fn a_waiting_app_already_synced_and_healthy_becomes_healthy_without_a_sync() {
    let mut db = app("db", "db");
    db.status.sync = SyncStatusCode::Synced;
    let d = run(
        three_tiers(),
        vec![db, app("backend", "backend")],
        vec![],
        "12:00:00",
    );
    assert_eq!(
        states(&d),
        pairs(&[("backend", State::Pending), ("db", State::Healthy)])
    );
    assert_eq!(d.sync_triggered, names(&["backend"]));
    assert!(d.application_status[1].message.contains("no sync needed"));
}

#[test]
fn a_new_revision_a_changed_spec_or_drift_sends_an_app_back_to_waiting() {
    let healthy_db = || {
        let mut db = app("db", "db");
        db.status.sync = SyncStatusCode::Synced;
        db
    };
    let mut new_revision = healthy_db();
    new_revision.target_revisions = vec![R2.into()];
    let mut spec_changed = healthy_db();
    spec_changed.spec_changed = true;
    let mut drifted = healthy_db();
    drifted.status.sync = SyncStatusCode::OutOfSync;
    let cases = [
        (new_revision, "target revision changed from r1 to r2"),
        (spec_changed, "generated spec changed"),
        (drifted, "OutOfSync again"),
    ];
    let paused = RolloutStrategy {
        paused: true,
        ..three_tiers()
    };
    for (db, message) in cases {
        let d = run(
            paused.clone(),
            vec![db],
            vec![entry("db", State::Healthy, "1", "11:00:00")],
            "12:00:00",
        );
        let e = &d.application_status[0];
        assert_eq!(e.status, State::Waiting, "{message}");
        assert!(e.message.contains(message), "{} !~ {message}", e.message);
        assert_eq!(e.last_transition_time, Some(Time(at("12:00:00"))));
    }
}

#[test]
fn no_stale_gates_a_new_revision_mid_rollout_closes_later_steps() {
    // Step 1 was Healthy on r1; r2 lands while step 2 is Pending. The db app has not been
    // refreshed yet (still Synced and Healthy on r1), so only the resolved target shows r2.
    let mut db = app("db", "db");
    db.status.sync = SyncStatusCode::Synced;
    db.target_revisions = vec![R2.into()];
    let mut backend = app("backend", "backend");
    backend.target_revisions = vec![R2.into()];
    let prior = vec![
        entry("db", State::Healthy, "1", "11:00:00"),
        ApplicationSetApplicationStatus {
            target_revisions: vec![R2.into()],
            ..entry("backend", State::Pending, "2", "11:59:00")
        },
    ];
    let d = run(three_tiers(), vec![db, backend], prior, "12:00:00");
    assert_eq!(
        states(&d),
        pairs(&[("backend", State::Waiting), ("db", State::Pending)])
    );
    assert_eq!(d.sync_triggered, names(&["db"]), "only step 1 syncs r2");
    assert_eq!(d.apps_to_sync, names(&["db"]));
    assert_eq!(d.application_status[1].target_revisions, names(&[R2]));
    assert_eq!(d.step_reports[1].state, StepState::Closed);
}

#[test]
fn stalls_name_the_app_and_why_and_keep_later_steps_closed() {
    let mut degraded = syncing(app("db-a", "db"), OperationPhase::Succeeded, "12:00:10", "");
    degraded.status.health = HealthStatus::Degraded;
    degraded.status.health_message = "Back-off pulling image".into();
    let mut failed = syncing(app("db-a", "db"), OperationPhase::Failed, "12:00:10", "");
    failed.status.operation_state.as_mut().unwrap().message =
        "one or more objects failed to apply".into();
    let slow = syncing(
        app("db-a", "db"),
        OperationPhase::Running,
        "12:00:10",
        "1/3 pods ready",
    );
    let cases = [
        (
            degraded,
            "12:01:00",
            "db-a Degraded: Back-off pulling image",
        ),
        (
            failed,
            "12:01:00",
            "db-a sync Failed: one or more objects failed to apply",
        ),
        (
            slow,
            "12:15:00",
            "db-a Progressing for 14m50s, over the 10m0s progressDeadline (Progressing: 1/3 pods ready)",
        ),
    ];
    let one_at_a_time = strategy(vec![tier_step("db", Some("1")), tier_step("web", None)]);
    for (db_a, now, cause) in cases {
        let apps = vec![db_a, app("db-b", "db"), app("web", "web")];
        let prior = vec![entry("db-a", State::Progressing, "1", "12:00:20")];
        let d = run(one_at_a_time.clone(), apps, prior, now);
        let (status, reason, message) = progress(&d);
        assert_eq!(
            (status, reason.as_str()),
            (ConditionStatus::False, "RolloutStalled"),
            "{cause}"
        );
        assert!(message.contains(cause), "{message} !~ {cause}");
        assert_eq!(d.step_reports[0].state, StepState::Stalled);
        assert_eq!(d.step_reports[1].state, StepState::Closed);
        assert!(d.sync_triggered.is_empty(), "{cause}");
    }
    // Within the deadline the same slow sync is just progressing.
    let slow = syncing(
        app("db-a", "db"),
        OperationPhase::Running,
        "12:00:10",
        "1/3 pods ready",
    );
    let d = run(
        one_at_a_time,
        vec![slow],
        vec![entry("db-a", State::Progressing, "1", "12:00:20")],
        "12:05:00",
    );
    assert_eq!(progress(&d).1, "StepProgressing");
    assert_eq!(
        d.step_reports[0].next,
        "waits: db-a Progressing 1/3 pods ready"
    );
}

#[test]
fn a_step_deadline_overrides_the_rollout_default() {
    let mut strategy = strategy(vec![tier_step("db", None)]);
    strategy.rolling_sync.as_mut().unwrap().steps[0].progress_deadline = Some("1h".into());
    let slow = syncing(app("db", "db"), OperationPhase::Running, "12:00:10", "");
    let d = run(
        strategy,
        vec![slow],
        vec![entry("db", State::Progressing, "1", "12:00:20")],
        "12:30:00",
    );
    assert_eq!(progress(&d).1, "StepProgressing");
    assert_eq!(
        d.step_reports[0].progress_deadline.as_deref(),
        Some("1h0m0s")
    );
}

#[test]
fn paused_promotes_nothing_while_running_syncs_finish() {
    let paused = RolloutStrategy {
        paused: true,
        ..strategy(vec![tier_step("web", Some("1"))])
    };
    let running = syncing(app("a", "web"), OperationPhase::Running, "12:00:10", "");
    let d = run(
        paused.clone(),
        vec![running, app("b", "web")],
        vec![entry("a", State::Pending, "1", "12:00:00")],
        "12:01:00",
    );
    assert_eq!(
        states(&d),
        pairs(&[("a", State::Progressing), ("b", State::Waiting)])
    );
    let (status, reason, _) = progress(&d);
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::True, "RolloutPaused")
    );
    // Finished while paused: still nothing new is promoted.
    let d2 = run(
        paused,
        vec![done(app("a", "web"), "12:00:10"), app("b", "web")],
        d.application_status,
        "12:02:00",
    );
    assert_eq!(
        states(&d2),
        pairs(&[("a", State::Healthy), ("b", State::Waiting)])
    );
    assert!(d2.sync_triggered.is_empty());
}

#[test]
fn unselected_apps_get_step_minus_one_never_sync_and_use_no_budget() {
    let d = run(
        strategy(vec![tier_step("web", Some("1"))]),
        vec![app("web", "web"), app("stray", "batch")],
        vec![
            entry("web", State::Waiting, "1", "11:00:00"),
            entry("deleted", State::Healthy, "1", "11:00:00"),
        ],
        "12:00:00",
    );
    assert_eq!(
        states(&d),
        pairs(&[("stray", State::Waiting), ("web", State::Pending)]),
        "deleted apps leave the status"
    );
    assert_eq!(d.application_status[0].step, "-1");
    assert_eq!(d.unselected, names(&["stray"]));
    assert_eq!(d.apps_to_sync, names(&["web"]));
    assert_eq!(d.sync_triggered, names(&["web"]));
    let unselected = d
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::UnselectedApplications)
        .unwrap();
    assert_eq!(
        unselected.message,
        "1 Application(s) match no step and are never synced by the rollout: stray"
    );
}

#[test]
fn invalid_configs_name_the_step_and_do_not_advance() {
    let bad = |step: RollingSyncStep| strategy(vec![tier_step("db", None), step]);
    let cases = [
        (strategy(vec![]), "NoSteps", "steps is empty"),
        (
            bad(RollingSyncStep {
                match_expressions: vec![LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "Equals".into(),
                    values: vec!["x".into()],
                }],
                ..RollingSyncStep::default()
            }),
            "InvalidMatchExpression",
            "step 2: matchExpressions: unknown operator \"Equals\"",
        ),
        (
            bad(tier_step("web", Some("abc"))),
            "InvalidMaxUpdate",
            "step 2: maxUpdate \"abc\"",
        ),
        (
            bad(tier_step("web", Some("150%"))),
            "InvalidMaxUpdate",
            "step 2: maxUpdate \"150%\" must not exceed 100%",
        ),
        (
            bad(RollingSyncStep {
                max_update: Some(IntOrString::Int(-2)),
                ..tier_step("web", None)
            }),
            "InvalidMaxUpdate",
            "step 2: maxUpdate \"-2\" must not be negative",
        ),
        (
            bad(RollingSyncStep {
                match_expressions: vec![],
                ..tier_step("web", None)
            }),
            "ApplicationInTwoSteps",
            "step 2: Application \"db\" is also selected by step 1",
        ),
    ];
    let prior = vec![entry("db", State::Pending, "1", "11:00:00")];
    for (strategy, reason, message) in cases {
        let d = run(strategy, vec![app("db", "db")], prior.clone(), "12:00:00");
        assert_eq!(d.application_status, prior, "{reason}");
        assert!(d.sync_triggered.is_empty() && d.apps_to_sync.is_empty() && d.steps.is_empty());
        let invalid = d
            .conditions
            .iter()
            .find(|c| c.type_ == ConditionType::InvalidRolloutConfig)
            .unwrap();
        assert_eq!(invalid.reason, reason);
        assert!(
            invalid.message.contains(message),
            "{} !~ {message}",
            invalid.message
        );
        assert_eq!(progress(&d).0, ConditionStatus::False);
    }
}

#[test]
fn last_transition_time_is_kept_while_nothing_changes() {
    let apps = vec![app("backend", "backend"), app("db", "db")];
    let first = run(three_tiers(), apps.clone(), vec![], "12:00:00");
    let second = run(
        three_tiers(),
        apps.clone(),
        first.application_status.clone(),
        "12:00:05",
    );
    assert_eq!(
        second.application_status, first.application_status,
        "nothing new observed"
    );
    assert_eq!(
        second.sync_triggered,
        names(&["db"]),
        "not started yet: triggered again"
    );
    // db's sync starts at 12:00:10, after its promotion at 12:00:00.
    let started = vec![
        apps[0].clone(),
        syncing(app("db", "db"), OperationPhase::Running, "12:00:10", ""),
    ];
    let third = run(
        three_tiers(),
        started,
        second.application_status,
        "12:00:20",
    );
    assert_eq!(third.application_status[1].status, State::Progressing);
    assert_eq!(
        third.application_status[1].last_transition_time,
        Some(Time(at("12:00:20")))
    );
    assert_eq!(
        third.application_status[0], first.application_status[0],
        "backend untouched"
    );
}

#[test]
fn empty_steps_are_complete_and_missing_apps_block_their_step() {
    let mut missing = app("db-new", "db");
    missing.exists = false;
    let d = run(
        strategy(vec![
            tier_step("cache", None),
            tier_step("db", None),
            tier_step("web", None),
        ]),
        vec![
            missing,
            done(app("db-old", "db"), "11:00:00"),
            app("web", "web"),
        ],
        vec![entry("db-old", State::Healthy, "2", "11:00:00")],
        "12:00:00",
    );
    let states: Vec<StepState> = d.step_reports.iter().map(|r| r.state).collect();
    assert_eq!(
        states,
        [StepState::Complete, StepState::Waiting, StepState::Closed]
    );
    assert_eq!(d.step_reports[0].next, "complete: no Applications");
    assert_eq!(d.step_reports[1].next, "waits: db-new not created yet");
    assert!(d.sync_triggered.is_empty());
}

#[test]
fn rollout_complete_when_every_step_is_healthy() {
    let apps = vec![
        done(app("db", "db"), "11:00:00"),
        done(app("web", "backend"), "11:00:00"),
    ];
    let prior = vec![
        entry("db", State::Healthy, "1", "11:00:00"),
        entry("web", State::Progressing, "2", "11:00:30"),
    ];
    let d = run(three_tiers(), apps, prior, "12:00:00");
    let (status, reason, message) = progress(&d);
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "ApplicationSetRolloutComplete")
    );
    assert!(
        message.contains("all 2 Application(s) in 3 step(s)"),
        "{message}"
    );
    assert_eq!(d.apps_to_sync, names(&["db", "web"]));
}

/// `app` held back by the window `prod freeze` until `opens` (a time of the test day).
fn frozen(mut app: ApplicationState, opens: &str) -> ApplicationState {
    app.sync_blocked_by = Some(crate::project::windows::WindowBlock {
        window: "prod freeze".into(),
        summary: "deny 0 16 * * 5 for 64h, Europe/Berlin".into(),
        opens_at: Some(at(opens)),
        opens: format!("Sat {} UTC", &opens[..5]),
    });
    app
}

#[test]
fn a_sync_window_holds_a_step_while_started_syncs_finish() {
    let db_done = || done(app("db", "db"), "12:00:10");
    // (case, applications, prior, expected states, step 2's state, triggered, message)
    let prior = vec![
        entry("db", State::Healthy, "1", "12:01:00"),
        entry("backend-a", State::Waiting, "2", "12:00:00"),
        entry("backend-b", State::Waiting, "2", "12:00:00"),
    ];
    // Step 2 would promote both; one is held back: neither is promoted.
    let d = run(
        three_tiers(),
        vec![
            db_done(),
            app("backend-a", "backend"),
            frozen(app("backend-b", "backend"), "14:00:00"),
        ],
        prior.clone(),
        "12:05:00",
    );
    assert_eq!(
        states(&d),
        pairs(&[
            ("backend-a", State::Waiting),
            ("backend-b", State::Waiting),
            ("db", State::Healthy)
        ])
    );
    assert!(d.sync_triggered.is_empty());
    assert_eq!(d.step_reports[1].state, StepState::WindowClosed);
    let (status, reason, message) = progress(&d);
    assert_eq!(
        (status, reason.as_str(), message.as_str()),
        (
            ConditionStatus::True,
            "StepWaitingForWindow",
            "step 2 of 3 waits for window 'prod freeze' (opens Sat 14:00 UTC); held back: backend-b"
        )
    );
    assert_eq!(
        d.application_status[1].message,
        "waits for window 'prod freeze' (opens Sat 14:00 UTC)"
    );
    assert_eq!(
        d.application_status[1].last_transition_time,
        Some(Time(at("12:00:00"))),
        "a held Application does not transition"
    );
    // The window opens: both are promoted and synced.
    let d2 = run(
        three_tiers(),
        vec![
            db_done(),
            app("backend-a", "backend"),
            app("backend-b", "backend"),
        ],
        d.application_status.clone(),
        "14:00:00",
    );
    assert_eq!(d2.sync_triggered, names(&["backend-a", "backend-b"]));
    assert_eq!(d2.step_reports[1].state, StepState::Progressing);

    // A step already syncing when the window closes: the started sync finishes, the Pending
    // one whose sync has not started is not triggered, the Waiting one is not promoted.
    let started = syncing(
        app("backend-a", "backend"),
        OperationPhase::Running,
        "12:03:00",
        "1/2 pods ready",
    );
    let d3 = run(
        strategy(vec![tier_step("db", None), tier_step("backend", Some("2"))]),
        vec![
            db_done(),
            frozen(started, "14:00:00"),
            frozen(app("backend-b", "backend"), "14:00:00"),
            frozen(app("backend-c", "backend"), "15:30:00"),
        ],
        vec![
            entry("db", State::Healthy, "1", "12:01:00"),
            entry("backend-a", State::Pending, "2", "12:02:00"),
            entry("backend-b", State::Pending, "2", "12:02:00"),
            entry("backend-c", State::Waiting, "2", "12:02:00"),
        ],
        "12:05:00",
    );
    assert_eq!(
        states(&d3),
        pairs(&[
            ("backend-a", State::Progressing),
            ("backend-b", State::Pending),
            ("backend-c", State::Waiting),
            ("db", State::Healthy)
        ])
    );
    assert!(d3.sync_triggered.is_empty());
    assert_eq!(
        d3.step_reports[1].next,
        "waits for window 'prod freeze' (opens Sat 15:30 UTC); held back: backend-b, backend-c; in flight finish: backend-a Progressing 1/2 pods ready"
    );
    let input = RolloutInput {
        now: at("12:05:00"),
        strategy: three_tiers(),
        applications: vec![
            frozen(app("a", "db"), "15:30:00"),
            frozen(app("b", "db"), "14:00:00"),
        ],
        prior_application_status: Vec::new(),
        prior_step_status: Vec::new(),
        promote: None,
        prior_rollback: None,
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    };
    assert_eq!(input.next_window_opening(), Some(at("14:00:00")));
}

#[test]
fn an_all_at_once_application_set_has_no_rollout_and_its_old_statuses_are_cleared() {
    let prior = vec![entry("a-frontend", State::Healthy, "1", "12:00:00")];
    let decision = run(
        RolloutStrategy::default(),
        vec![app("a-frontend", "frontend")],
        prior,
        "12:01:00",
    );
    assert_eq!(decision, RolloutDecision::default());
}

// ---------------------------------------------------------------------------------------------
// bakeTime (issue 33)

/// The three tiers with a 20 s bake on step 1.
fn baked_tiers() -> RolloutStrategy {
    let mut strategy = three_tiers();
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.steps[0].bake_time = Some("20s".into());
    }
    strategy
}

/// The db synced at 12:00:00 and Healthy; backend and frontend OutOfSync.
fn db_synced() -> Vec<ApplicationState> {
    vec![
        app("backend", "backend"),
        done(app("db", "db"), "12:00:00"),
        app("frontend", "frontend"),
    ]
}

fn step_states(decision: &RolloutDecision) -> Vec<StepState> {
    decision.step_reports.iter().map(|r| r.state).collect()
}

/// The first pass that sees the db Healthy after its sync: the step starts baking.
fn bake_started() -> RolloutDecision {
    let strategy = baked_tiers();
    let mut out_of_sync = db_synced();
    out_of_sync[1] = app("db", "db");
    let first = run(strategy.clone(), out_of_sync, vec![], "11:59:50");
    assert_eq!(first.sync_triggered, names(&["db"]));
    let mut running = db_synced();
    running[1] = syncing(app("db", "db"), OperationPhase::Running, "12:00:00", "");
    let progressing = replay(&strategy, running, &first, "12:00:01");
    replay(&strategy, db_synced(), &progressing, "12:00:40")
}

#[test]
fn a_step_bakes_before_the_next_opens_and_a_replay_resumes_the_bake() {
    let strategy = baked_tiers();
    let baking = bake_started();
    assert_eq!(
        step_states(&baking),
        [StepState::Baking, StepState::Closed, StepState::Closed]
    );
    assert!(baking.sync_triggered.is_empty(), "step 2 stays closed");
    assert_eq!(
        baking.step_status,
        [RolloutStepStatus {
            step: 1,
            bake_started_at: Some(Time(at("12:00:40"))),
            ..RolloutStepStatus::default()
        }]
    );
    assert_eq!(baking.wake_at, Some(at("12:01:01")));
    assert_eq!(
        progress(&baking),
        (
            ConditionStatus::True,
            "StepBaking".into(),
            "step 1 of 3 bakes until 2025-03-01T12:01:00Z: all 1 Healthy on their target revisions since 2025-03-01T12:00:40Z".into()
        )
    );
    assert_eq!(
        baking.step_reports[0].budget(),
        "maxUpdate 100%: 0/1 in flight, progressDeadline 10m0s, bakeTime 20s"
    );
    // A pass replayed from status (a restarted controller) resumes the bake: same start.
    let resumed = replay(&strategy, db_synced(), &baking, "12:00:55");
    assert_eq!(resumed.step_status, baking.step_status);
    assert_eq!(resumed.wake_at, baking.wake_at);
    assert!(resumed.sync_triggered.is_empty());
    // The bake's last second: still baking.
    let last = replay(&strategy, db_synced(), &resumed, "12:01:00");
    assert_eq!(last.step_reports[0].state, StepState::Baking);
    // Once it is over, the step completes, once, and step 2 syncs.
    let baked = replay(&strategy, db_synced(), &last, "12:01:01");
    assert_eq!(
        step_states(&baked),
        [
            StepState::Complete,
            StepState::Progressing,
            StepState::Closed
        ]
    );
    assert_eq!(baked.sync_triggered, names(&["backend"]));
    assert_eq!(baked.wake_at, None);
    assert_eq!(
        baked.step_status[0].baked_at,
        Some(Time(at("12:01:01"))),
        "{baked:#?}"
    );
    assert_eq!(
        baked.step_reports[0].next,
        "complete: all 1 Healthy on their target revisions, baked until 2025-03-01T12:01:01Z"
    );
    let later = replay(&strategy, db_synced(), &baked, "12:01:06");
    assert_eq!(later.step_status, baked.step_status);
    assert_eq!(later.step_reports[0].state, StepState::Complete);
}

#[test]
fn leaving_healthy_during_the_bake_fails_the_step_until_a_new_revision() {
    let strategy = baked_tiers();
    let baking = bake_started();
    for (health, message, shown) in [
        (
            HealthStatus::Progressing,
            "0/1 pods ready",
            "db Progressing 0/1 pods ready, Synced on r1 (target r1)",
        ),
        (
            HealthStatus::Degraded,
            "Back-off restarting failed container",
            "db Degraded Back-off restarting failed container, Synced on r1 (target r1)",
        ),
    ] {
        let mut unready = db_synced();
        unready[1].status.health = health;
        unready[1].status.health_message = message.into();
        let failed = replay(&strategy, unready, &baking, "12:00:50");
        assert_eq!(
            step_states(&failed),
            [StepState::Failed, StepState::Closed, StepState::Closed]
        );
        let failure =
            format!("{shown} left Healthy during the 20s bake started at 2025-03-01T12:00:40Z");
        assert_eq!(
            failed.step_status,
            [RolloutStepStatus {
                step: 1,
                bake_started_at: Some(Time(at("12:00:40"))),
                failed_at: Some(Time(at("12:00:50"))),
                failure: failure.clone(),
                ..RolloutStepStatus::default()
            }]
        );
        assert_eq!(
            progress(&failed),
            (
                ConditionStatus::False,
                "StepFailed".into(),
                format!(
                    "step 1 of 3 failed: {failure}; later steps stay closed until a new revision reaches the step"
                )
            )
        );
        assert!(failed.sync_triggered.is_empty() && failed.wake_at.is_none());
        // Healthy again: still failed; the bake is not retried.
        let recovered = replay(&strategy, db_synced(), &failed, "12:02:00");
        assert_eq!(recovered.step_status, failed.step_status);
        assert_eq!(recovered.step_reports[0].state, StepState::Failed);
        assert!(recovered.sync_triggered.is_empty());
        // A new revision starts a fresh rollout of the step.
        let mut fixed = db_synced();
        for app in &mut fixed {
            app.target_revisions = vec![R2.into()];
        }
        let fresh = replay(&strategy, fixed, &recovered, "12:03:00");
        assert!(fresh.step_status.is_empty(), "{:#?}", fresh.step_status);
        assert_eq!(fresh.sync_triggered, names(&["db"]));
        assert_eq!(fresh.step_reports[0].state, StepState::Progressing);
    }
}

#[test]
fn a_step_without_applications_or_bake_completes_at_once_and_bad_bake_times_are_refused() {
    // The bake of step 1 has nothing to bake: step 2 opens at once.
    let d = run(
        baked_tiers(),
        vec![app("backend", "backend")],
        vec![],
        "12:00:00",
    );
    assert_eq!(
        step_states(&d),
        [
            StepState::Complete,
            StepState::Progressing,
            StepState::Closed
        ]
    );
    assert!(d.step_status.is_empty());
    let mut bad = baked_tiers();
    if let Some(rolling) = bad.rolling_sync.as_mut() {
        rolling.steps[1].bake_time = Some("-5s".into());
    }
    let d = run(bad, db_synced(), vec![], "12:00:00");
    let invalid = d
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::InvalidRolloutConfig)
        .unwrap();
    assert_eq!(invalid.reason, "InvalidBakeTime");
    assert!(
        invalid
            .message
            .starts_with("step 2: bakeTime: invalid duration \"-5s\""),
        "{}",
        invalid.message
    );
}

// ---------------------------------------------------------------------------------------------
// approval: manual (issue 33)

#[test]
fn a_manual_step_waits_for_its_approval_then_syncs_and_a_new_revision_asks_again() {
    use crate::api::application_set::Approval;
    let mut strategy = three_tiers();
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.steps[1].approval = Some(Approval::Manual);
    }
    let pass =
        |apps: Vec<ApplicationState>, prior: &RolloutDecision, promote: Option<&str>, now| {
            advance(&RolloutInput {
                now: at(now),
                strategy: strategy.clone(),
                applications: apps,
                prior_application_status: prior.application_status.clone(),
                prior_step_status: prior.step_status.clone(),
                promote: promote.map(str::to_owned),
                prior_rollback: None,
                application_set: String::new(),
                analysis: Vec::new(),
                namespace: String::new(),
                external: Vec::new(),
            })
        };
    let waiting = pass(db_synced(), &RolloutDecision::default(), None, "12:00:00");
    assert_eq!(
        step_states(&waiting),
        [
            StepState::Complete,
            StepState::WaitingForApproval,
            StepState::Closed
        ]
    );
    assert!(waiting.sync_triggered.is_empty());
    let record = RolloutStepStatus {
        step: 2,
        waiting_for_approval_since: Some(Time(at("12:00:00"))),
        ..RolloutStepStatus::default()
    };
    assert_eq!(waiting.step_status, std::slice::from_ref(&record));
    assert_eq!(
        progress(&waiting),
        (
            ConditionStatus::True,
            "StepWaitingForApproval".into(),
            "step 2 of 3 waits for approval since 2025-03-01T12:00:00Z: 1 Application(s) to sync; approve with flotilla rollout promote --step 2 (annotation flotilla.dev/promote: \"2\")".into()
        )
    );
    // Still waiting a minute later (replayed from status), the same since; another step's
    // approval or an unreadable annotation does not approve it.
    for promote in [None, Some("3"), Some("two")] {
        let later = pass(db_synced(), &waiting, promote, "12:01:00");
        assert_eq!(
            later.step_status,
            std::slice::from_ref(&record),
            "{promote:?}"
        );
        assert!(later.sync_triggered.is_empty() && later.approved.is_none());
    }
    let unreadable = pass(db_synced(), &waiting, Some("two"), "12:01:00");
    assert!(
        unreadable.step_reports[1]
            .next
            .ends_with("; the annotation flotilla.dev/promote \"two\" is not a step number"),
        "{}",
        unreadable.step_reports[1].next
    );
    // Approved: the step syncs at once, and the controller is told to remove the annotation.
    let approved = pass(db_synced(), &waiting, Some("2"), "12:02:00");
    assert_eq!(approved.approved, Some(2));
    assert_eq!(approved.sync_triggered, names(&["backend"]));
    assert_eq!(
        approved.step_status,
        [RolloutStepStatus {
            step: 2,
            approved_at: Some(Time(at("12:02:00"))),
            ..RolloutStepStatus::default()
        }]
    );
    let mut running = db_synced();
    running[0] = syncing(
        app("backend", "backend"),
        OperationPhase::Running,
        "12:02:01",
        "",
    );
    let progressing = pass(running, &approved, None, "12:02:05");
    assert_eq!(progressing.step_status, approved.step_status);
    assert_eq!(progressing.step_reports[1].state, StepState::Progressing);
    assert_eq!(progressing.approved, None);
    // A new revision sends the backend back: its next rollout asks again.
    let mut next = db_synced();
    for app in &mut next {
        app.target_revisions = vec![R2.into()];
    }
    let fresh = pass(next, &progressing, None, "12:03:00");
    assert!(fresh.step_status.is_empty(), "{:#?}", fresh.step_status);
}

// onFailure: rollback (issue 33)

pub(super) const R0: &str = "r0";

/// The three tiers rolling back failures, earlier steps too.
fn rolling_back_tiers() -> RolloutStrategy {
    let mut strategy = three_tiers();
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.on_failure = Some(OnFailure::Rollback);
        rolling.rollback_completed_steps = true;
    }
    strategy
}

/// `app` whose last operation, started at `started`, is in `phase` at `revision`; its history
/// has `r0` before `r1`.
pub(super) fn operated(
    mut app: ApplicationState,
    phase: OperationPhase,
    started: &str,
    revision: &str,
) -> ApplicationState {
    app.previous_revisions = vec![R0.into()];
    app.status.operation_state = Some(OperationState {
        phase,
        started_at: at(started),
        message: String::new(),
        revisions: vec![revision.into()],
    });
    app
}

/// db synced to r1 and Healthy; backend synced to r1 and now Degraded; frontend not synced.
fn backend_degraded() -> Vec<ApplicationState> {
    let mut db = operated(
        done(app("db", "db"), "12:00:00"),
        OperationPhase::Succeeded,
        "12:00:00",
        R1,
    );
    db.status.sync = SyncStatusCode::Synced;
    let mut backend = operated(
        done(app("backend", "backend"), "12:01:00"),
        OperationPhase::Succeeded,
        "12:01:00",
        R1,
    );
    backend.status.health = HealthStatus::Degraded;
    backend.status.health_message = "Back-off restarting failed container".into();
    vec![backend, db, app("frontend", "frontend")]
}

/// `apps` with the operation of `name` replaced by one in `phase` at `revision`.
fn with_operation(
    mut apps: Vec<ApplicationState>,
    name: &str,
    phase: OperationPhase,
    started: &str,
    revision: &str,
) -> Vec<ApplicationState> {
    for app in &mut apps {
        if app.name == name {
            *app = operated(app.clone(), phase, started, revision);
            app.status.sync = SyncStatusCode::OutOfSync;
            app.status.health = HealthStatus::Healthy;
        }
    }
    apps
}

fn rollback_replay(
    applications: Vec<ApplicationState>,
    prior: &RolloutDecision,
    now: &str,
) -> RolloutDecision {
    advance(&RolloutInput {
        now: at(now),
        strategy: rolling_back_tiers(),
        applications,
        prior_application_status: prior.application_status.clone(),
        prior_step_status: prior.step_status.clone(),
        promote: None,
        prior_rollback: prior.rollback.clone(),
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    })
}

fn rolled_back_condition(decision: &RolloutDecision) -> (String, String) {
    let c = decision
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutRolledBack)
        .expect("RolloutRolledBack");
    (c.reason.clone(), c.message.clone())
}

#[test]
fn a_degraded_step_rolls_back_latest_step_first_once_and_holds_until_a_new_revision() {
    let prior = vec![
        entry("backend", State::Progressing, "2", "12:01:00"),
        entry("db", State::Healthy, "1", "12:00:30"),
        entry("frontend", State::Waiting, "3", "12:00:00"),
    ];
    let failed = advance(&RolloutInput {
        now: at("12:02:00"),
        strategy: rolling_back_tiers(),
        applications: backend_degraded(),
        prior_application_status: prior,
        prior_step_status: Vec::new(),
        promote: None,
        prior_rollback: None,
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    });
    // The failed step (2) goes back first; db (step 1) waits for it.
    assert_eq!(
        failed.rollback_syncs,
        [RollbackSync {
            application: "backend".into(),
            revisions: vec![R0.into()]
        }]
    );
    assert!(failed.sync_triggered.is_empty());
    let record = failed.rollback.clone().expect("the rollback is recorded");
    assert_eq!(
        (record.failed_step, record.started_at.clone()),
        (2, Time(at("12:02:00")))
    );
    let order: Vec<(&str, u64, &[String])> = record
        .applications
        .iter()
        .map(|a| (a.application.as_str(), a.step, a.revisions.as_slice()))
        .collect();
    assert_eq!(
        order,
        [
            ("backend", 2, &[R0.to_string()][..]),
            ("db", 1, &[R0.to_string()][..])
        ]
    );
    assert_eq!(
        step_states(&failed),
        [
            StepState::RolledBack,
            StepState::RolledBack,
            StepState::Closed
        ]
    );
    let (reason, message) = rolled_back_condition(&failed);
    assert_eq!(reason, "RollingBack");
    assert_eq!(
        message,
        "step 2 of 3 failed (backend Degraded: Back-off restarting failed container); rolling back: backend (step 2) rolling back to r0 from r1, db (step 1) rolling back to r0 from r1; nothing of the failed revision syncs again until a new revision reaches them"
    );
    assert_eq!(
        progress(&failed),
        (ConditionStatus::False, "RolloutRolledBack".into(), message)
    );
    assert_eq!(
        states(&failed),
        pairs(&[
            ("backend", State::Waiting),
            ("db", State::Waiting),
            ("frontend", State::Waiting)
        ])
    );

    // A pass replayed from status (a restarted controller) resumes the same rollback; the
    // request written before the restart is not written again (the shell skips an Application
    // whose spec.operation is set), and once its sync runs nothing is requested.
    let replayed = rollback_replay(backend_degraded(), &failed, "12:02:05");
    assert_eq!(replayed.rollback, failed.rollback);
    let running = with_operation(
        backend_degraded(),
        "backend",
        OperationPhase::Running,
        "12:02:06",
        R0,
    );
    let waiting = rollback_replay(running, &replayed, "12:02:07");
    assert!(
        waiting.rollback_syncs.is_empty(),
        "{:?}",
        waiting.rollback_syncs
    );

    // The backend is back on r0: now db, step 1.
    let backend_back = with_operation(
        backend_degraded(),
        "backend",
        OperationPhase::Succeeded,
        "12:02:06",
        R0,
    );
    let next = rollback_replay(backend_back.clone(), &waiting, "12:02:20");
    assert_eq!(
        next.rollback_syncs,
        [RollbackSync {
            application: "db".into(),
            revisions: vec![R0.into()]
        }]
    );
    let rolled = next.rollback.clone().unwrap();
    assert_eq!(
        rolled.applications[0].rolled_back_at,
        Some(Time(at("12:02:20")))
    );
    assert_eq!(rolled.applications[1].rolled_back_at, None);

    // db back too: the rollback is complete, and it holds: nothing syncs r1 again.
    let all_back = with_operation(
        backend_back,
        "db",
        OperationPhase::Succeeded,
        "12:02:21",
        R0,
    );
    let done = rollback_replay(all_back.clone(), &next, "12:02:40");
    assert!(done.rollback_syncs.is_empty() && done.sync_triggered.is_empty());
    assert_eq!(
        done.rollback.as_ref().unwrap().completed_at,
        Some(Time(at("12:02:40")))
    );
    let (reason, message) = rolled_back_condition(&done);
    assert_eq!(reason, "RolledBack");
    assert!(
        message.contains(
            "rolled back: backend (step 2) back on r0 from r1, db (step 1) back on r0 from r1"
        ),
        "{message}"
    );
    let held = rollback_replay(all_back.clone(), &done, "12:10:00");
    assert_eq!(held.rollback, done.rollback);
    assert!(held.rollback_syncs.is_empty() && held.sync_triggered.is_empty());
    assert_eq!(
        held.application_status[1].message,
        "rolled back to r0 after step 2 failed; waits for a new revision"
    );

    // A new revision ends the rollback: a fresh rollout starts at step 1.
    let mut fixed = all_back;
    for app in &mut fixed {
        app.target_revisions = vec![R2.into()];
    }
    let fresh = rollback_replay(fixed, &held, "12:11:00");
    assert_eq!(fresh.rollback, None);
    assert_eq!(fresh.sync_triggered, names(&["db"]));
    assert_eq!(fresh.step_reports[0].state, StepState::Progressing);
    assert!(
        !fresh
            .conditions
            .iter()
            .any(|c| c.type_ == ConditionType::RolloutRolledBack)
    );
}

#[test]
fn a_failed_bake_rolls_back_only_its_step_without_rollback_completed_steps() {
    let mut strategy = baked_tiers();
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.on_failure = Some(OnFailure::Rollback);
    }
    let baking = bake_started();
    let mut unready = db_synced();
    unready[1] = operated(
        unready[1].clone(),
        OperationPhase::Succeeded,
        "12:00:00",
        R1,
    );
    unready[1].status.health = HealthStatus::Degraded;
    let failed = advance(&RolloutInput {
        now: at("12:00:50"),
        strategy: strategy.clone(),
        applications: unready.clone(),
        prior_application_status: baking.application_status.clone(),
        prior_step_status: baking.step_status.clone(),
        promote: None,
        prior_rollback: None,
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    });
    assert_eq!(
        failed.rollback_syncs,
        [RollbackSync {
            application: "db".into(),
            revisions: vec![R0.into()]
        }]
    );
    let record = failed.rollback.unwrap();
    assert_eq!(record.failed_step, 1);
    assert!(
        record.failure.contains("left Healthy during the 20s bake"),
        "{}",
        record.failure
    );
    // With onFailure: pause (the default) the same failure stops the rollout, as before.
    let paused = replay(&baked_tiers(), unready, &baking, "12:00:50");
    assert_eq!(paused.step_reports[0].state, StepState::Failed);
    assert!(paused.rollback.is_none() && paused.rollback_syncs.is_empty());
}

#[test]
fn rollback_completed_steps_needs_on_failure_rollback() {
    let mut strategy = three_tiers();
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.rollback_completed_steps = true;
    }
    assert_eq!(
        RolloutConfig::from_strategy(&strategy)
            .unwrap_err()
            .to_string(),
        "rollingSync.rollbackCompletedSteps: true needs onFailure: rollback"
    );
}

// Analysis (issue 33): a Job or an HTTP check after the step is Healthy.

use super::analysis::{AnalysisObservation, AnalysisOutcome, Probe, job_name, probes};
use crate::api::application_set::{HttpAnalysis, JobAnalysis, StepAnalysis};

/// The three tiers with `analysis` on step 1 (the db), `onFailure` as given.
fn analysed_tiers(analysis: StepAnalysis, on_failure: Option<OnFailure>) -> RolloutStrategy {
    let mut strategy = three_tiers();
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.steps[0].analysis = Some(analysis);
        rolling.on_failure = on_failure;
    }
    strategy
}

fn job_analysis() -> StepAnalysis {
    StepAnalysis {
        job: Some(JobAnalysis::default()),
        http: None,
    }
}

fn http_analysis(failure_limit: u32) -> StepAnalysis {
    StepAnalysis {
        job: None,
        http: Some(HttpAnalysis {
            url: "http://127.0.0.1:8080/ready".into(),
            interval: Some("10s".into()),
            failure_limit: Some(failure_limit),
            ..HttpAnalysis::default()
        }),
    }
}

/// The db synced and Healthy in namespace `shop`, the others OutOfSync.
fn db_synced_in_shop() -> Vec<ApplicationState> {
    let mut apps = db_synced();
    for app in &mut apps {
        app.destination.namespace = Some("shop".into());
    }
    apps
}

/// A pass of the ApplicationSet `stack` after `prior` with what was `observed`.
fn observed_pass(
    strategy: &RolloutStrategy,
    applications: Vec<ApplicationState>,
    prior: &RolloutDecision,
    now: &str,
    observed: Vec<AnalysisObservation>,
) -> (RolloutInput, RolloutDecision) {
    let input = RolloutInput {
        now: at(now),
        strategy: strategy.clone(),
        applications,
        prior_application_status: prior.application_status.clone(),
        prior_step_status: prior.step_status.clone(),
        promote: None,
        prior_rollback: prior.rollback.clone(),
        application_set: "stack".into(),
        analysis: observed,
        namespace: String::new(),
        external: Vec::new(),
    };
    let decision = advance(&input);
    (input, decision)
}

fn seen(outcome: AnalysisOutcome, message: &str) -> Vec<AnalysisObservation> {
    vec![AnalysisObservation {
        step: 1,
        outcome,
        message: message.into(),
        cluster: Some(AnalysisCluster::default()),
    }]
}

#[test]
fn a_job_analysis_starts_once_the_step_is_healthy_and_holds_the_next_step() {
    let strategy = analysed_tiers(job_analysis(), None);
    let none = RolloutDecision::default();
    let (_, started) = observed_pass(&strategy, db_synced_in_shop(), &none, "12:01:00", vec![]);
    let name = job_name("stack", 1, &["r1"]);
    assert!(
        name.starts_with("stack-analysis-1-") && name.len() <= 63,
        "{name}"
    );
    assert_eq!(started.analysis_jobs.len(), 1);
    assert_eq!(
        (
            started.analysis_jobs[0].namespace.as_str(),
            started.analysis_jobs[0].name.as_str()
        ),
        ("shop", name.as_str())
    );
    assert_eq!(
        step_states(&started),
        [StepState::Analysing, StepState::Closed, StepState::Closed]
    );
    assert!(
        started.sync_triggered.is_empty(),
        "{:?}",
        started.sync_triggered
    );
    let (status, reason, message) = progress(&started);
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::True, "StepAnalysing")
    );
    assert!(
        message.contains(&format!("Job shop/{name} created")),
        "{message}"
    );
    let record = &started.step_status[0];
    assert_eq!(
        record.analysis.as_ref().map(|a| a.job.clone()),
        Some(format!("shop/{name}"))
    );
    let db = started
        .application_status
        .iter()
        .find(|e| e.application == "db")
        .unwrap();
    assert!(
        db.message.starts_with("step 1 analysis: Job shop/"),
        "{}",
        db.message
    );

    // Replayed: the controller reads the Job it recorded, and creates it only when absent.
    let (input, running) = observed_pass(
        &strategy,
        db_synced_in_shop(),
        &started,
        "12:01:05",
        seen(AnalysisOutcome::Running, "1 active"),
    );
    assert_eq!(
        probes(&input),
        [Probe::Job {
            step: 1,
            cluster: AnalysisCluster::default(),
            namespace: "shop".into(),
            name: name.clone()
        }]
    );
    assert!(running.analysis_jobs.is_empty());
    assert_eq!(running.step_reports[0].state, StepState::Analysing);
    let (_, absent) = observed_pass(&strategy, db_synced_in_shop(), &running, "12:01:10", vec![]);
    assert_eq!(
        absent.analysis_jobs.len(),
        1,
        "recreated only when not seen"
    );
    assert_eq!(
        absent.step_status[0].analysis.as_ref().unwrap().started_at,
        Time(at("12:01:00")),
        "the same analysis"
    );

    // The Job succeeded: the backend opens.
    let (_, passed) = observed_pass(
        &strategy,
        db_synced_in_shop(),
        &running,
        "12:01:30",
        seen(AnalysisOutcome::Passed, ""),
    );
    assert_eq!(
        step_states(&passed),
        [
            StepState::Complete,
            StepState::Progressing,
            StepState::Closed
        ]
    );
    assert_eq!(passed.sync_triggered, names(&["backend"]));
    let (input, later) = observed_pass(&strategy, db_synced_in_shop(), &passed, "12:01:35", vec![]);
    assert!(
        probes(&input).is_empty(),
        "a passed analysis is not looked at again"
    );
    assert_eq!(later.step_reports[0].state, StepState::Complete);
}

/// Step 1 with two databases in `shop`, on the clusters `https://east` and `https://west`.
fn db_on_two_clusters() -> Vec<ApplicationState> {
    let mut apps = db_synced_in_shop();
    let mut west = apps[1].clone();
    west.name = "db-west".into();
    west.destination.server = Some("https://west".into());
    apps[1].destination.server = Some("https://east".into());
    apps.push(west);
    apps
}

fn server(url: &str) -> AnalysisCluster {
    AnalysisCluster {
        server: url.into(),
        name: String::new(),
    }
}

/// What was seen of the step-1 Job on each cluster.
fn seen_on(seen: &[(&str, AnalysisOutcome, &str)]) -> Vec<AnalysisObservation> {
    seen.iter()
        .map(|&(url, outcome, message)| AnalysisObservation {
            step: 1,
            outcome,
            message: message.into(),
            cluster: Some(server(url)),
        })
        .collect()
}

#[test]
fn a_job_analysis_runs_on_each_destination_cluster_and_needs_every_job_to_pass() {
    use AnalysisOutcome::{Failed, Passed, Running};
    let strategy = analysed_tiers(job_analysis(), None);
    let none = RolloutDecision::default();
    let (_, started) = observed_pass(&strategy, db_on_two_clusters(), &none, "12:01:00", vec![]);
    let name = job_name("stack", 1, &["r1"]);
    let jobs: Vec<(AnalysisCluster, &str, &str)> = started
        .analysis_jobs
        .iter()
        .map(|j| (j.cluster.clone(), j.namespace.as_str(), j.name.as_str()))
        .collect();
    assert_eq!(
        jobs,
        [
            (server("https://east"), "shop", name.as_str()),
            (server("https://west"), "shop", name.as_str())
        ]
    );
    assert_eq!(
        started.step_status[0].analysis.as_ref().unwrap().clusters,
        [server("https://east"), server("https://west")]
    );

    // One per cluster is read; one not found is created again (the other is kept).
    let (input, one_absent) = observed_pass(
        &strategy,
        db_on_two_clusters(),
        &started,
        "12:01:05",
        seen_on(&[("https://east", Passed, "")]),
    );
    let probed: Vec<AnalysisCluster> = probes(&input)
        .into_iter()
        .map(|p| match p {
            Probe::Job { cluster, .. } => cluster,
            Probe::Http { .. } => panic!("a Job analysis"),
        })
        .collect();
    assert_eq!(probed, [server("https://east"), server("https://west")]);
    assert_eq!(one_absent.analysis_jobs.len(), 2);
    assert_eq!(one_absent.step_reports[0].state, StepState::Analysing);

    // One passed, one running: still analysing, nothing created.
    let (_, half) = observed_pass(
        &strategy,
        db_on_two_clusters(),
        &started,
        "12:01:10",
        seen_on(&[
            ("https://east", Passed, ""),
            ("https://west", Running, "1 active, 0 failed"),
        ]),
    );
    assert!(half.analysis_jobs.is_empty());
    assert_eq!(half.step_reports[0].state, StepState::Analysing);
    let message = &half.step_status[0].analysis.as_ref().unwrap().message;
    assert!(message.contains("on https://west: 1 active"), "{message}");

    // Both passed: step 2 opens.
    let (_, passed) = observed_pass(
        &strategy,
        db_on_two_clusters(),
        &half,
        "12:01:20",
        seen_on(&[("https://east", Passed, ""), ("https://west", Passed, "")]),
    );
    assert_eq!(passed.step_reports[0].state, StepState::Complete);
    assert_eq!(passed.sync_triggered, names(&["backend"]));

    // One failed: the step fails, naming the cluster.
    let (_, failed) = observed_pass(
        &strategy,
        db_on_two_clusters(),
        &half,
        "12:01:20",
        seen_on(&[
            ("https://east", Passed, ""),
            ("https://west", Failed, "BackoffLimitExceeded"),
        ]),
    );
    assert_eq!(failed.step_reports[0].state, StepState::Failed);
    assert!(
        failed.step_status[0]
            .failure
            .contains("on https://west: BackoffLimitExceeded"),
        "{}",
        failed.step_status[0].failure
    );
}

#[test]
fn a_failed_analysis_job_fails_the_step_and_pauses_or_rolls_back() {
    for (on_failure, state) in [
        (None, StepState::Failed),
        (Some(OnFailure::Rollback), StepState::RolledBack),
    ] {
        let strategy = analysed_tiers(job_analysis(), on_failure);
        let none = RolloutDecision::default();
        let mut apps = db_synced_in_shop();
        apps[1].previous_revisions = vec![R0.into()];
        let (_, started) = observed_pass(&strategy, apps.clone(), &none, "12:01:00", vec![]);
        let (_, failed) = observed_pass(
            &strategy,
            apps.clone(),
            &started,
            "12:01:40",
            seen(AnalysisOutcome::Failed, "BackoffLimitExceeded"),
        );
        assert_eq!(failed.step_reports[0].state, state, "{on_failure:?}");
        assert!(failed.sync_triggered.is_empty());
        assert!(failed.analysis_jobs.is_empty());
        let record = &failed.step_status[0];
        assert!(
            record
                .failure
                .starts_with("analysis Job shop/stack-analysis-1-")
                && record.failure.ends_with("failed: BackoffLimitExceeded"),
            "{}",
            record.failure
        );
        match on_failure {
            None => {
                let (_, reason, _) = progress(&failed);
                assert_eq!(reason, "StepFailed");
                // It stays failed: nothing opens on later passes.
                let (_, again) =
                    observed_pass(&strategy, apps.clone(), &failed, "12:02:00", vec![]);
                assert_eq!(again.step_reports[0].state, StepState::Failed);
            }
            Some(_) => {
                assert_eq!(
                    failed.rollback_syncs,
                    [RollbackSync {
                        application: "db".into(),
                        revisions: vec![R0.into()],
                    }]
                );
            }
        }
    }
}

#[test]
fn an_http_analysis_retries_on_its_interval_and_fails_at_its_limit() {
    let strategy = analysed_tiers(http_analysis(2), None);
    let none = RolloutDecision::default();
    let (_, started) = observed_pass(&strategy, db_synced_in_shop(), &none, "12:01:00", vec![]);
    assert!(started.analysis_jobs.is_empty());
    assert_eq!(
        started.wake_at,
        Some(at("12:01:00")),
        "the first GET is due at once"
    );
    let (input, first) = observed_pass(
        &strategy,
        db_synced_in_shop(),
        &started,
        "12:01:01",
        seen(AnalysisOutcome::Failed, "HTTP 500: not yet"),
    );
    assert!(matches!(&probes(&input)[..], [Probe::Http { step: 1, .. }]));
    assert_eq!(first.step_reports[0].state, StepState::Analysing);
    assert_eq!(first.wake_at, Some(at("12:01:11")));
    assert!(
        first.step_reports[0]
            .next
            .contains("GET http://127.0.0.1:8080/ready failed (1/2): HTTP 500: not yet"),
        "{}",
        first.step_reports[0].next
    );
    // Not due yet: no probe, and an observation would not count.
    let (input, early) = observed_pass(
        &strategy,
        db_synced_in_shop(),
        &first,
        "12:01:05",
        seen(AnalysisOutcome::Failed, "HTTP 500"),
    );
    assert!(probes(&input).is_empty());
    assert_eq!(early.step_status[0].analysis.as_ref().unwrap().failures, 1);
    // Passes on the retry.
    let (_, passed) = observed_pass(
        &strategy,
        db_synced_in_shop(),
        &first,
        "12:01:11",
        seen(AnalysisOutcome::Passed, "HTTP 200"),
    );
    assert_eq!(passed.step_reports[0].state, StepState::Complete);
    assert_eq!(passed.sync_triggered, names(&["backend"]));
    // Or fails a second time: the limit.
    let (_, failed) = observed_pass(
        &strategy,
        db_synced_in_shop(),
        &first,
        "12:01:11",
        seen(AnalysisOutcome::Failed, "HTTP 503"),
    );
    assert_eq!(failed.step_reports[0].state, StepState::Failed);
    assert!(
        failed.step_status[0]
            .failure
            .contains("failed (2/2): HTTP 503")
    );
}

#[test]
fn an_analysis_waits_for_the_bake_and_a_new_revision_starts_a_new_one() {
    let mut strategy = analysed_tiers(job_analysis(), None);
    if let Some(rolling) = strategy.rolling_sync.as_mut() {
        rolling.steps[0].bake_time = Some("20s".into());
    }
    let none = RolloutDecision::default();
    let (_, baking) = observed_pass(&strategy, db_synced_in_shop(), &none, "12:01:00", vec![]);
    assert_eq!(baking.step_reports[0].state, StepState::Baking);
    assert!(baking.analysis_jobs.is_empty());
    let (_, started) = observed_pass(&strategy, db_synced_in_shop(), &baking, "12:01:21", vec![]);
    assert_eq!(started.step_reports[0].state, StepState::Analysing);
    let first = started.analysis_jobs[0].name.clone();
    // r2 arrives: the step rolls out again, and its analysis is a new Job.
    let mut r2 = db_synced_in_shop();
    for app in &mut r2 {
        app.target_revisions = vec![R2.into()];
    }
    let (_, sent_back) = observed_pass(&strategy, r2, &started, "12:02:00", vec![]);
    assert!(sent_back.step_status.iter().all(|r| r.analysis.is_none()));
    assert_ne!(job_name("stack", 1, &[R2]), first);
}

#[test]
fn an_invalid_analysis_is_refused_by_name() {
    let bad = StepAnalysis {
        job: Some(JobAnalysis::default()),
        http: Some(HttpAnalysis::default()),
    };
    let decision = run(
        analysed_tiers(bad, None),
        db_synced_in_shop(),
        vec![],
        "12:00:00",
    );
    let (_, reason, message) = progress(&decision);
    assert_eq!(reason, "InvalidRolloutConfig");
    assert!(
        message.starts_with("step 1: analysis: set exactly one of job and http"),
        "{message}"
    );
}

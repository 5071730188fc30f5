//! Table-driven passes of the step function over a step graph (issue 50): parallel steps open
//! together once what they wait for is complete, a failure closes only what waits for it, and
//! a rollback goes back along the graph.

use super::tests::{
    R0, R1, app, at, done, names, operated, pairs, progress, replay, run, states, strategy,
    syncing, tier_step,
};
use super::*;
use crate::api::application_set::{
    Approval, OnFailure, RollingSyncStep, RolloutStrategy, StepDependency,
};
use crate::api::application_set_status::{ConditionStatus, RolloutApplicationState as State};
use crate::api::operation_state::OperationPhase;
use crate::health::HealthStatus;

/// A step of the Applications labelled `tier: name`, named `name`, waiting for `depends_on`
/// (unset when `None`).
fn named(name: &str, depends_on: Option<&[&str]>) -> RollingSyncStep {
    RollingSyncStep {
        name: Some(name.into()),
        depends_on: depends_on.map(|d| d.iter().map(|s| StepDependency::from(*s)).collect()),
        ..tier_step(name, None)
    }
}

/// `db → (backend-eu ∥ backend-us) → frontend`, and `docs` beside all of them.
fn diamond() -> RolloutStrategy {
    strategy(vec![
        named("db", None),
        named("backend-eu", Some(&["db"])),
        named("backend-us", Some(&["db"])),
        named("frontend", Some(&["backend-eu", "backend-us"])),
        named("docs", Some(&[])),
    ])
}

fn fleet() -> Vec<ApplicationState> {
    vec![
        app("api-eu", "backend-eu"),
        app("api-us", "backend-us"),
        app("db", "db"),
        app("docs", "docs"),
        app("web", "frontend"),
    ]
}

/// `fleet()` with the named Applications done and those in `running` syncing, their syncs
/// started at `started`.
fn observed(finished: &[&str], running: &[&str], started: &str) -> Vec<ApplicationState> {
    fleet()
        .into_iter()
        .map(|a| {
            if finished.contains(&a.name.as_str()) {
                done(a, started)
            } else if running.contains(&a.name.as_str()) {
                syncing(a, OperationPhase::Running, started, "0/1 pods ready")
            } else {
                a
            }
        })
        .collect()
}

/// The pass at 12:00:10 that promotes both backends, the database and docs done.
fn backends_promoted(graph: &RolloutStrategy) -> RolloutDecision {
    let first = run(graph.clone(), fleet(), Vec::new(), "12:00:00");
    let done = observed(&["db", "docs"], &[], "12:00:01");
    replay(graph, done, &first, "12:00:10")
}

fn step_states(decision: &RolloutDecision) -> Vec<StepState> {
    decision.step_reports.iter().map(|r| r.state).collect()
}

#[test]
fn parallel_steps_open_together_and_the_join_waits_for_both() {
    use State::{Healthy, Pending, Progressing, Waiting};
    use StepState::{Closed, Complete};
    let graph = diamond();
    // (finished, running, their syncs' start (after the pass that promoted them), now,
    // Application states, step states, syncs triggered, progress)
    type Case = (
        &'static [&'static str],
        &'static [&'static str],
        &'static str,
        &'static str,
        &'static [(&'static str, State)],
        [StepState; 5],
        &'static [&'static str],
        &'static str,
    );
    let cases: &[Case] = &[
        (
            &[],
            &[],
            "11:59:59",
            "12:00:00",
            &[
                ("api-eu", Waiting),
                ("api-us", Waiting),
                ("db", Pending),
                ("docs", Pending),
                ("web", Waiting),
            ],
            [
                StepState::Progressing,
                Closed,
                Closed,
                Closed,
                StepState::Progressing,
            ],
            &["db", "docs"],
            "step 1 of 5 (db) syncs db now; step 5 of 5 (docs) syncs docs now",
        ),
        (
            &["db"],
            &["docs"],
            "12:00:01",
            "12:00:10",
            &[
                ("api-eu", Pending),
                ("api-us", Pending),
                ("db", Healthy),
                ("docs", Progressing),
                ("web", Waiting),
            ],
            [
                Complete,
                StepState::Progressing,
                StepState::Progressing,
                Closed,
                StepState::Progressing,
            ],
            &["api-eu", "api-us"],
            "step 2 of 5 (backend-eu) syncs api-eu now; step 3 of 5 (backend-us) syncs api-us now; step 5 of 5 (docs) waits: docs Progressing 0/1 pods ready",
        ),
        (
            &["db", "api-eu", "docs"],
            &["api-us"],
            "12:00:11",
            "12:00:20",
            &[
                ("api-eu", Healthy),
                ("api-us", Progressing),
                ("db", Healthy),
                ("docs", Healthy),
                ("web", Waiting),
            ],
            [Complete, Complete, StepState::Progressing, Closed, Complete],
            &[],
            "step 3 of 5 (backend-us) waits: api-us Progressing 0/1 pods ready",
        ),
        (
            &["db", "api-eu", "api-us", "docs"],
            &[],
            "12:00:11",
            "12:00:30",
            &[
                ("api-eu", Healthy),
                ("api-us", Healthy),
                ("db", Healthy),
                ("docs", Healthy),
                ("web", Pending),
            ],
            [
                Complete,
                Complete,
                Complete,
                StepState::Progressing,
                Complete,
            ],
            &["web"],
            "step 4 of 5 (frontend) syncs web now",
        ),
    ];
    let mut prior = run(graph.clone(), Vec::new(), Vec::new(), "11:59:00");
    for (finished, running, started, now, apps, steps, triggered, message) in cases {
        let d = replay(&graph, observed(finished, running, started), &prior, now);
        assert_eq!(states(&d), pairs(apps), "{now}");
        assert_eq!(step_states(&d), steps, "{now}");
        assert_eq!(d.sync_triggered, names(triggered), "{now}");
        assert_eq!(progress(&d).2, *message, "{now}");
        prior = d;
    }
    // The join names what it waits for; the reports carry the graph.
    let first = run(graph.clone(), fleet(), Vec::new(), "12:00:00");
    assert_eq!(
        first.step_reports[3].next,
        "closed until step 1 (db) completes"
    );
    let both = replay(
        &graph,
        observed(&["db"], &[], "12:00:01"),
        &first,
        "12:00:10",
    );
    assert_eq!(
        both.step_reports[3].next,
        "closed until step 2 (backend-eu), step 3 (backend-us) complete"
    );
    assert_eq!(both.step_reports[3].depends_on, Some(vec![2, 3]));
    assert_eq!(
        both.step_reports[3].title(),
        "Step 4 (frontend, after steps 2, 3)"
    );
    assert_eq!(both.step_reports[3].name.as_deref(), Some("frontend"));
    assert_eq!(
        both.apps_to_sync,
        names(&["api-eu", "api-us", "db", "docs"])
    );
}

#[test]
fn a_stalled_step_closes_only_what_waits_for_it() {
    let graph = diamond();
    let both = backends_promoted(&graph);
    let mut apps = observed(&["db", "docs", "api-us"], &["api-eu"], "12:00:11");
    apps[0].status.health = HealthStatus::Degraded;
    apps[0].status.health_message = "crash loop".into();
    let stalled = replay(&graph, apps, &both, "12:00:20");
    assert_eq!(
        step_states(&stalled),
        [
            StepState::Complete,
            StepState::Stalled,
            StepState::Complete,
            StepState::Closed,
            StepState::Complete
        ]
    );
    assert_eq!(
        stalled.step_reports[3].next,
        "closed until step 2 (backend-eu) completes"
    );
    assert_eq!(
        progress(&stalled),
        (
            ConditionStatus::False,
            "RolloutStalled".into(),
            "step 2 of 5 (backend-eu) stalled: api-eu Degraded: crash loop; the steps waiting for it stay closed"
                .into()
        )
    );
    // The independent step still runs when another stalls: docs waits for nothing.
    let mut db_stalls = observed(&[], &["db"], "12:00:01");
    db_stalls[2].status.health = HealthStatus::Degraded;
    let first = run(graph.clone(), fleet(), Vec::new(), "12:00:00");
    let early = replay(&graph, db_stalls, &first, "12:00:10");
    assert_eq!(early.step_reports[0].state, StepState::Stalled);
    assert_eq!(early.step_reports[4].state, StepState::Progressing);
}

#[test]
fn a_rollback_goes_back_along_the_graph_latest_first() {
    let mut graph = diamond();
    if let Some(rolling) = graph.rolling_sync.as_mut() {
        rolling.on_failure = Some(OnFailure::Rollback);
        rolling.rollback_completed_steps = true;
    }
    let both = backends_promoted(&graph);
    let mut apps: Vec<ApplicationState> =
        observed(&["db", "docs", "api-us", "api-eu"], &[], "12:00:11")
            .into_iter()
            .map(|a| {
                let phase = a
                    .status
                    .operation_state
                    .as_ref()
                    .map_or(OperationPhase::Succeeded, |op| op.phase);
                operated(a, phase, "12:00:11", R1)
            })
            .collect();
    apps[0].status.health = HealthStatus::Degraded;
    let failed = replay(&graph, apps, &both, "12:00:20");
    let rollback = failed.rollback.as_ref().expect("rolling back");
    assert_eq!(rollback.failed_step, 2);
    let order: Vec<(&str, u64, bool)> = rollback
        .applications
        .iter()
        .map(|e| (e.application.as_str(), e.step, e.revisions.is_empty()))
        .collect();
    // The failed step first, then the other open steps in reverse dependency order: docs
    // (listed last, waits for nothing), backend-us, db; the closed frontend not at all.
    assert_eq!(
        order,
        [
            ("api-eu", 2, false),
            ("docs", 5, false),
            ("api-us", 3, false),
            ("db", 1, false)
        ]
    );
    assert_eq!(
        failed
            .rollback_syncs
            .iter()
            .map(|s| (s.application.as_str(), s.revisions.clone()))
            .collect::<Vec<_>>(),
        [("api-eu", vec![R0.to_owned()])]
    );
    assert_eq!(failed.step_reports[3].state, StepState::Closed);
    assert!(failed.sync_triggered.is_empty());
}

#[test]
fn a_named_step_is_approved_by_its_name() {
    let mut graph = diamond();
    if let Some(rolling) = graph.rolling_sync.as_mut() {
        rolling.steps[4].approval = Some(Approval::Manual);
    }
    let waiting = run(graph.clone(), fleet(), Vec::new(), "12:00:00");
    assert_eq!(waiting.step_reports[4].state, StepState::WaitingForApproval);
    assert!(!waiting.sync_triggered.contains(&"docs".to_owned()));
    let approved = advance(&RolloutInput {
        now: at("12:00:10"),
        strategy: graph,
        applications: fleet(),
        prior_application_status: waiting.application_status.clone(),
        prior_step_status: waiting.step_status.clone(),
        promote: Some("docs".into()),
        prior_rollback: None,
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    });
    assert_eq!(approved.approved, Some(5));
    assert!(approved.sync_triggered.contains(&"docs".to_owned()));
}

#[test]
fn a_list_without_names_reports_as_before() {
    let list = strategy(vec![tier_step("db", None), tier_step("web", None)]);
    let d = run(
        list,
        vec![app("db", "db"), app("web", "web")],
        Vec::new(),
        "12:00:00",
    );
    assert_eq!(d.step_reports[1].next, "closed until step 1 completes");
    assert!(
        d.step_reports
            .iter()
            .all(|r| r.depends_on.is_none() && r.name.is_none())
    );
    assert_eq!(progress(&d).2, "step 1 of 2 syncs db now");
}

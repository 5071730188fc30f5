//! Cross-ApplicationSet gates (issue 50): a step of `services` waits for step `database` of
//! `platform`, judged from what the controller read of `platform` (its strategy and rollout
//! status), with the named conditions for what can never be met.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::external::{ExternalApplicationSet, ExternalRollout, Lookup};
use super::tests::{R1, app, at, done, names, progress, tier_step};
use super::*;
use crate::api::application_set::{
    ApplicationSetStep, RollingSyncStep, RolloutStrategy, StepDependency,
};
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ConditionStatus, ConditionType, RevisionCount,
    RolloutApplicationState as State, RolloutStepStatus, StepRolloutSummary,
};

const R2: &str = "r2";

/// A step of the Applications labelled `tier: name`, named `name`, waiting for `depends_on`.
fn named(name: &str, depends_on: Vec<StepDependency>) -> RollingSyncStep {
    RollingSyncStep {
        name: Some(name.into()),
        depends_on: Some(depends_on),
        ..tier_step(name, None)
    }
}

/// `{applicationSet: platform, step: step}`.
fn platform(step: &str) -> ApplicationSetStep {
    ApplicationSetStep {
        application_set: "platform".into(),
        step: step.into(),
        ..ApplicationSetStep::default()
    }
}

/// `services`: `api` waits for `dependency`, then `web` for `api`.
fn services(dependency: ApplicationSetStep) -> RolloutStrategy {
    super::tests::strategy(vec![
        named("api", vec![StepDependency::ApplicationSet(dependency)]),
        named("web", vec!["api".into()]),
    ])
}

/// `platform`: `database`, then `rest` after it and after `services` step `back` (a step
/// `services` may not have).
fn platform_strategy(back: Option<&str>) -> RolloutStrategy {
    let mut rest = vec![StepDependency::from("database")];
    if let Some(back) = back {
        rest.push(StepDependency::ApplicationSet(ApplicationSetStep {
            application_set: "services".into(),
            step: back.into(),
            ..ApplicationSetStep::default()
        }));
    }
    super::tests::strategy(vec![named("database", vec![]), named("rest", rest)])
}

/// `platform` as read, its `database` Application `db` in `state` on `revision`, `cache` in
/// `rest` Healthy on it.
fn read(state: State, revision: &str, back: Option<&str>) -> ExternalApplicationSet {
    let entry = |application: &str, step: &str, status: State| ApplicationSetApplicationStatus {
        application: application.into(),
        status,
        step: step.into(),
        target_revisions: vec![revision.into()],
        last_transition_time: Some(Time(at("11:00:00"))),
        message: String::new(),
    };
    ExternalApplicationSet {
        namespace: "team".into(),
        name: "platform".into(),
        lookup: Lookup::Found(Box::new(ExternalRollout {
            strategy: Some(platform_strategy(back)),
            reported: true,
            application_status: vec![entry("db", "1", state), entry("cache", "2", State::Healthy)],
            labels: BTreeMap::from([(
                "db".to_owned(),
                BTreeMap::from([("region".to_owned(), "eu".to_owned())]),
            )]),
            ..ExternalRollout::default()
        })),
        watched: false,
    }
}

/// `services`' Applications on `revision`, the `api` one done when `api_done`.
fn fleet(revision: &str, api_done: bool) -> Vec<ApplicationState> {
    let on = |mut a: ApplicationState| {
        a.target_revisions = vec![revision.into()];
        a
    };
    let api = on(app("api", "api"));
    vec![
        if api_done { done(api, "11:59:00") } else { api },
        on(app("web", "web")),
    ]
}

fn pass(
    strategy: &RolloutStrategy,
    applications: Vec<ApplicationState>,
    external: Vec<ExternalApplicationSet>,
    prior: Option<&RolloutDecision>,
    now: &str,
) -> RolloutDecision {
    advance(&RolloutInput {
        now: at(now),
        strategy: strategy.clone(),
        applications,
        prior_application_status: prior
            .map(|p| p.application_status.clone())
            .unwrap_or_default(),
        prior_step_status: prior.map(|p| p.step_status.clone()).unwrap_or_default(),
        promote: None,
        prior_rollback: None,
        application_set: "services".into(),
        analysis: Vec::new(),
        namespace: "team".into(),
        external,
    })
}

/// The `InvalidRolloutDependency` condition's reason and message, if it holds.
fn broken(decision: &RolloutDecision) -> Option<(String, String)> {
    decision
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::InvalidRolloutDependency)
        .map(|c| (c.reason.clone(), c.message.clone()))
}

#[test]
fn a_step_waits_for_the_other_application_sets_step_then_goes_on_whatever_it_does_next() {
    let strategy = services(platform("database"));
    let waiting = pass(
        &strategy,
        fleet(R1, false),
        vec![read(State::Progressing, R1, None)],
        None,
        "12:00:00",
    );
    assert_eq!(
        waiting.step_reports[0].state,
        StepState::WaitingForApplicationSet
    );
    assert_eq!(waiting.step_reports[1].state, StepState::Closed);
    assert!(waiting.sync_triggered.is_empty());
    let said = "waits for ApplicationSet platform step database: step 1 (database): 1 of 1 not Healthy yet (db Progressing)";
    assert_eq!(waiting.step_reports[0].next, said);
    assert_eq!(waiting.application_status[0].message, said);
    assert_eq!(
        progress(&waiting),
        (
            ConditionStatus::True,
            "StepWaitingForApplicationSet".to_owned(),
            format!("step 1 of 2 (api) {said}")
        )
    );
    assert_eq!(broken(&waiting), None);
    assert!(waiting.step_status.is_empty(), "nothing recorded yet");

    // The database is Healthy: `api` syncs, and records that its dependencies were met.
    let met = pass(
        &strategy,
        fleet(R1, false),
        vec![read(State::Healthy, R1, None)],
        Some(&waiting),
        "12:00:10",
    );
    assert_eq!(met.sync_triggered, names(&["api"]));
    assert_eq!(
        met.step_status,
        [RolloutStepStatus {
            step: 1,
            dependencies_met_at: Some(Time(at("12:00:10"))),
            ..RolloutStepStatus::default()
        }]
    );
    // Replayed from status with the database rolling again (or its ApplicationSet gone): this
    // rollout of `api` goes on.
    for other in [vec![read(State::Waiting, R2, None)], Vec::new()] {
        let on = pass(&strategy, fleet(R1, false), other, Some(&met), "12:00:20");
        assert_eq!(on.step_reports[0].state, StepState::Progressing, "{on:#?}");
        assert_eq!(broken(&on), None);
    }
    // A step whose Applications are all Healthy on their target needs nothing of platform.
    let complete = pass(
        &strategy,
        fleet(R1, true),
        vec![read(State::Waiting, R2, None)],
        None,
        "12:00:30",
    );
    assert_eq!(complete.step_reports[0].state, StepState::Complete);
}

/// The step that waits for `platform` step `database`, judged against `platform` as `read`.
fn waits_for(dependency: ApplicationSetStep, read: ExternalApplicationSet) -> String {
    let decision = pass(
        &services(dependency),
        fleet(R1, false),
        vec![read],
        None,
        "12:00:00",
    );
    match decision.step_reports[0].state {
        StepState::WaitingForApplicationSet => decision.step_reports[0].next.clone(),
        other => format!("{other:?}"),
    }
}

/// `platform` as read with its Applications only counted: `database` with `waiting` of them
/// not Healthy yet and `healthy` Healthy, counted by revision as `revisions` (revision, how
/// many).
fn counted(waiting: u32, healthy: u32, revisions: &[(&str, u32)]) -> ExternalApplicationSet {
    let mut platform = read(State::Healthy, R1, None);
    let Lookup::Found(rollout) = &mut platform.lookup else {
        unreachable!("read finds it")
    };
    rollout.application_status.clear();
    rollout.summary = vec![
        StepRolloutSummary {
            step: "1".into(),
            waiting,
            healthy,
            revisions: revisions
                .iter()
                .map(|(revision, applications)| RevisionCount {
                    target_revisions: vec![(*revision).into()],
                    applications: *applications,
                })
                .collect(),
            ..StepRolloutSummary::default()
        },
        StepRolloutSummary {
            step: "2".into(),
            healthy: 1,
            ..StepRolloutSummary::default()
        },
    ];
    platform
}

#[test]
fn an_application_set_that_has_not_reported_a_rollout_completes_no_step() {
    let mut created = read(State::Healthy, R1, None);
    let Lookup::Found(rollout) = &mut created.lookup else {
        unreachable!("read finds it")
    };
    rollout.reported = false;
    rollout.application_status.clear();
    assert_eq!(
        waits_for(platform("database"), created),
        "waits for ApplicationSet platform step database: it has not reported a rollout yet"
    );
}

#[test]
fn a_rollout_only_counted_past_the_status_limit_is_judged_by_its_counts() {
    assert_eq!(
        waits_for(platform("database"), counted(3, 997, &[(R1, 1000)])),
        "waits for ApplicationSet platform step database: step 1 (database): 3 of 1000 not Healthy yet"
    );
    assert_eq!(
        waits_for(platform("database"), counted(0, 1000, &[(R1, 1000)])),
        "Progressing",
        "every counted Application Healthy: the step is complete"
    );
    let labelled = ApplicationSetStep {
        match_labels: BTreeMap::from([("region".into(), "eu".into())]),
        ..platform("database")
    };
    assert_eq!(
        waits_for(labelled, counted(0, 1000, &[(R1, 1000)])),
        "waits for ApplicationSet platform step database: step 1 (database): none of its \
         Applications holds its rollout state yet, so a label condition cannot be checked",
        "a label condition is judged from the Applications' entries, read with their labels"
    );
}

#[test]
fn a_revision_condition_on_a_counted_rollout_is_judged_by_its_counts_per_revision() {
    let on_revision = || ApplicationSetStep {
        revision: Some(R1.into()),
        ..platform("database")
    };
    let same_revision = || ApplicationSetStep {
        same_revision: true,
        ..platform("database")
    };
    for dependency in [on_revision(), same_revision()] {
        assert_eq!(
            waits_for(dependency, counted(0, 1000, &[(R1, 1000)])),
            "Progressing",
            "all 1,000 counted on r1, this step's revision"
        );
    }
    assert_eq!(
        waits_for(on_revision(), counted(0, 1000, &[(R1, 999), (R2, 1)])),
        "waits for ApplicationSet platform step database: step 1 (database) is not on revision \
         r1 yet (1 Application on r2)"
    );
    assert_eq!(
        waits_for(same_revision(), counted(0, 1000, &[(R2, 1000)])),
        "waits for ApplicationSet platform step database: step 1 (database) is not on this \
         step's revision r1 yet (1000 Applications on r2)"
    );
    assert_eq!(
        waits_for(on_revision(), counted(0, 1000, &[])),
        "waits for ApplicationSet platform step database: step 1 (database): its Applications \
         are only counted, not by revision (they target more than 16 sets of revisions), so a \
         revision condition cannot be checked",
        "not counted by revision: waits, saying why"
    );
}

#[test]
fn revision_same_revision_labels_and_the_steps_before_it_must_hold_too() {
    let wait = |dependency: ApplicationSetStep, db: State, revision: &str, ours: &str| {
        let decision = pass(
            &services(dependency),
            fleet(ours, false),
            vec![read(db, revision, None)],
            None,
            "12:00:00",
        );
        let report = &decision.step_reports[0];
        (report.state == StepState::WaitingForApplicationSet).then(|| report.next.clone())
    };
    let with = |f: fn(&mut ApplicationSetStep)| {
        let mut dependency = platform("database");
        f(&mut dependency);
        dependency
    };
    type Case = (
        ApplicationSetStep,
        State,
        &'static str,
        &'static str,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (platform("database"), State::Healthy, R1, R2, None),
        (
            with(|d| d.revision = Some(R2.into())),
            State::Healthy,
            R1,
            R1,
            Some(
                "waits for ApplicationSet platform step database: step 1 (database) is not on revision r2 yet (db on r1)",
            ),
        ),
        (
            with(|d| d.revision = Some(R2.into())),
            State::Healthy,
            R2,
            R1,
            None,
        ),
        (
            with(|d| d.same_revision = true),
            State::Healthy,
            R1,
            R2,
            Some(
                "waits for ApplicationSet platform step database: step 1 (database) is not on this step's revision r2 yet (db on r1)",
            ),
        ),
        (
            with(|d| d.same_revision = true),
            State::Healthy,
            R2,
            R2,
            None,
        ),
        (
            with(|d| {
                d.match_labels = BTreeMap::from([("region".into(), "us".into())]);
            }),
            State::Healthy,
            R1,
            R1,
            Some(
                "waits for ApplicationSet platform step database: step 1 (database) has no Application labelled region=us",
            ),
        ),
        (
            with(|d| {
                d.match_labels = BTreeMap::from([("region".into(), "eu".into())]);
            }),
            State::Healthy,
            R1,
            R1,
            None,
        ),
        // `rest` is Healthy, but the step it waits for is not: `rest` is not complete.
        (
            platform("rest"),
            State::Pending,
            R1,
            R1,
            Some(
                "waits for ApplicationSet platform step rest: step 1 (database): 1 of 1 not Healthy yet (db Pending)",
            ),
        ),
        // By number.
        (platform("2"), State::Healthy, R1, R1, None),
    ];
    for (dependency, db, revision, ours, expected) in cases {
        assert_eq!(
            wait(dependency.clone(), db, revision, ours).as_deref(),
            expected,
            "{dependency:?}"
        );
    }
}

#[test]
fn a_missing_application_set_or_step_a_refused_namespace_and_a_cycle_are_named() {
    let found = vec![read(State::Healthy, R1, None)];
    let refused = vec![ExternalApplicationSet {
        namespace: "infra".into(),
        name: "platform".into(),
        lookup: Lookup::NotPermitted {
            rule: "no sourceNamespaces entry matches".into(),
        },
        watched: false,
    }];
    let elsewhere = ApplicationSetStep {
        namespace: Some("infra".into()),
        ..platform("database")
    };
    type Case = (
        ApplicationSetStep,
        Vec<ExternalApplicationSet>,
        &'static str,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            ApplicationSetStep {
                application_set: "platfrom".into(),
                ..platform("database")
            },
            found.clone(),
            "ApplicationSetNotFound",
            "step 1 (api): dependsOn ApplicationSet platfrom step database: there is no ApplicationSet platfrom in namespace team",
        ),
        (
            platform("databse"),
            found.clone(),
            "StepNotFound",
            "step 1 (api): dependsOn ApplicationSet platform step databse: it has no such step (step 1 (database), step 2 (rest))",
        ),
        (
            elsewhere,
            refused,
            "NamespaceNotPermitted",
            "step 1 (api): dependsOn ApplicationSet infra/platform step database: namespace infra is not permitted: no sourceNamespaces entry matches",
        ),
        // platform's `rest` waits for services' `web`, which waits for `api`.
        (
            platform("rest"),
            vec![read(State::Healthy, R1, Some("web"))],
            "DependencyCycle",
            "step 1 (api): dependsOn ApplicationSet platform step rest: its step 2 (rest) waits for step 2 (web) of services, which waits for it: a cycle across ApplicationSets",
        ),
    ];
    for (dependency, read, reason, message) in cases {
        let decision = pass(
            &services(dependency),
            fleet(R1, false),
            read,
            None,
            "12:00:00",
        );
        assert_eq!(
            broken(&decision),
            Some((
                reason.to_owned(),
                format!("{message}; the step waits until this is fixed")
            ))
        );
        assert_eq!(
            decision.step_reports[0].state,
            StepState::WaitingForApplicationSet
        );
        assert!(decision.sync_triggered.is_empty());
    }
    // platform's `rest` waits for services' `api`, which waits for platform's `database`: a
    // chain across both, no cycle.
    let chain = pass(
        &services(platform("database")),
        fleet(R1, false),
        vec![read(State::Healthy, R1, Some("api"))],
        None,
        "12:00:00",
    );
    assert_eq!(broken(&chain), None);
    assert_eq!(chain.sync_triggered, names(&["api"]));
}

/// `name` in namespace `team` as read: one step `step` waiting for `waits_for`.
fn only_step(name: &str, step: &str, waits_for: ApplicationSetStep) -> ExternalApplicationSet {
    ExternalApplicationSet {
        namespace: "team".into(),
        name: name.into(),
        lookup: Lookup::Found(Box::new(ExternalRollout {
            strategy: Some(super::tests::strategy(vec![named(
                step,
                vec![StepDependency::ApplicationSet(waits_for)],
            )])),
            ..ExternalRollout::default()
        })),
        watched: true,
    }
}

#[test]
fn a_cycle_through_three_application_sets_is_named_and_a_chain_is_not() {
    let other = |application_set: &str, step: &str| ApplicationSetStep {
        application_set: application_set.into(),
        step: step.into(),
        ..ApplicationSetStep::default()
    };
    // services' api → platform's database → messaging's queue → services' web (after api).
    let read = |back: &str| {
        vec![
            only_step("platform", "database", other("messaging", "queue")),
            only_step("messaging", "queue", other("services", back)),
        ]
    };
    let decision = pass(
        &services(platform("database")),
        fleet(R1, false),
        read("web"),
        None,
        "12:00:00",
    );
    assert_eq!(
        broken(&decision),
        Some((
            "DependencyCycle".to_owned(),
            "step 1 (api): dependsOn ApplicationSet platform step database: its step 1 (database) waits for step 1 (queue) of messaging, which waits for step 2 (web) of services, which waits for it: a cycle across ApplicationSets; the step waits until this is fixed".to_owned()
        ))
    );
    assert!(decision.sync_triggered.is_empty());
    // messaging waits for a step of services that does not wait for api: no cycle, api waits
    // for platform's database.
    let chain = pass(
        &services(platform("database")),
        fleet(R1, false),
        read("nothing-such"),
        None,
        "12:00:00",
    );
    assert_eq!(broken(&chain), None);
}

#[test]
fn depends_on_reads_names_and_other_application_sets_steps_and_refuses_unknown_fields() {
    let steps: Vec<RollingSyncStep> = serde_json::from_str(
        r#"[{"name": "api", "dependsOn": ["db", {"applicationSet": "platform", "step": "database", "namespace": "infra", "revision": "v2", "sameRevision": true, "matchLabels": {"region": "eu"}}]}]"#,
    )
    .expect("valid");
    assert_eq!(
        steps[0].depends_on,
        Some(vec![
            StepDependency::from("db"),
            StepDependency::ApplicationSet(ApplicationSetStep {
                application_set: "platform".into(),
                namespace: Some("infra".into()),
                step: "database".into(),
                revision: Some("v2".into()),
                same_revision: true,
                match_labels: BTreeMap::from([("region".into(), "eu".into())]),
            }),
        ])
    );
    let written = serde_json::to_value(&steps[0]).expect("serializes");
    assert_eq!(
        serde_json::from_value::<RollingSyncStep>(written).expect("reads back"),
        steps[0]
    );
    let refused = |text: &str| {
        serde_json::from_str::<RollingSyncStep>(text)
            .unwrap_err()
            .to_string()
    };
    assert!(
        refused(r#"{"dependsOn": [{"applicationSet": "p", "step": "s", "wave": 1}]}"#)
            .contains("unknown field `wave`")
    );
    assert!(
        refused(r#"{"dependsOn": [{"step": "s"}]}"#).contains("missing field `applicationSet`")
    );
    assert!(
        refused(r#"{"dependsOn": [3]}"#)
            .contains("expected a step's name or {applicationSet, step}")
    );
    let empty = RolloutConfig::from_strategy(&services(platform(" "))).unwrap_err();
    assert_eq!(
        empty.to_string(),
        "strategy.rollingSync.steps[0].dependsOn[0].step: must not be empty"
    );
}

//! Benchmark: one rollout pass over 10,000 Applications in 10 steps (step 3 in progress,
//! `maxUpdate: 25%`, prior status for every Application). Target: under 10 ms. And what the
//! pass's input costs when the Applications' project has sync windows: the ApplicationSet
//! controller asks each Application's windows whether an automated sync may start.
//!
//! `cargo bench --bench rollout`

mod support;

#[path = "support/wave_steps.rs"]
mod wave_steps;
use std::collections::BTreeMap;

use criterion::Criterion;
use flotilla_core::api::Application;
use flotilla_core::api::app_project::AppProjectSpec;
use flotilla_core::api::application_set::{RollingSync, RolloutStrategy, StrategyType};
use flotilla_core::api::application_set_status::{
    ApplicationSetApplicationStatus, RolloutApplicationState, SyncStatusCode,
};
use flotilla_core::health::HealthStatus;
use flotilla_core::project::Projects;
use flotilla_core::project::windows::{Judge, SyncKind, sync_block_or_invalid};
use flotilla_core::rollout::{ApplicationState, ObservedStatus, RolloutInput, advance};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use support::cpu_time::ThreadCpuTime;

const APPS: usize = 10_000;
const STEPS: usize = 10;

fn input() -> RolloutInput {
    let now: Timestamp = "2025-03-01T12:00:00Z".parse().expect("valid time");
    let steps = wave_steps::wave_steps(STEPS);
    let mut applications = Vec::with_capacity(APPS);
    let mut prior = Vec::with_capacity(APPS);
    for i in 0..APPS {
        let wave = i % STEPS;
        let name = format!("app-{i:05}");
        // Waves 0-1 done, wave 2 half done, later waves waiting.
        let healthy = wave < 2 || (wave == 2 && i % 2 == 0);
        applications.push(ApplicationState {
            name: name.clone(),
            labels: BTreeMap::from([
                ("wave".to_string(), wave.to_string()),
                ("team".to_string(), format!("team-{}", i % 7)),
            ]),
            exists: true,
            spec_changed: false,
            target_revisions: vec!["c0ffee".into()],
            status: ObservedStatus {
                health: HealthStatus::Healthy,
                sync: if healthy {
                    SyncStatusCode::Synced
                } else {
                    SyncStatusCode::OutOfSync
                },
                revisions: vec!["c0ffee".into()],
                ..ObservedStatus::default()
            },
            sync_blocked_by: None,
            previous_revisions: Vec::new(),
            destination: Default::default(),
        });
        prior.push(ApplicationSetApplicationStatus {
            application: name,
            status: if healthy {
                RolloutApplicationState::Healthy
            } else {
                RolloutApplicationState::Waiting
            },
            step: (wave + 1).to_string(),
            target_revisions: vec!["c0ffee".into()],
            last_transition_time: Some(Time(now)),
            message: String::new(),
        });
    }
    RolloutInput {
        now,
        strategy: RolloutStrategy {
            type_: StrategyType::RollingSync,
            rolling_sync: Some(RollingSync {
                steps,
                progress_deadline: Some("30m".into()),
                ..RollingSync::default()
            }),
            paused: false,
            deletion_order: None,
            removal_order: None,
        },
        applications,
        prior_application_status: prior,
        prior_step_status: Vec::new(),
        promote: None,
        prior_rollback: None,
        application_set: String::new(),
        analysis: Vec::new(),
        namespace: String::new(),
        external: Vec::new(),
    }
}

/// A project with three windows (a weekend freeze in Berlin for production namespaces, business
/// hours for the web Applications, a nightly deny for the EU clusters), and `APPS` Applications
/// in it.
fn windowed() -> (Projects, Vec<Application>) {
    let spec: AppProjectSpec = serde_json::from_value(json!({"syncWindows": [
        {"kind": "deny", "schedule": "0 16 * * 5", "duration": "64h", "timeZone": "Europe/Berlin",
         "namespaces": ["prod-*"], "manualSync": true},
        {"kind": "allow", "schedule": "0 8 * * 1-5", "duration": "10h", "applications": ["web-*", "api-*"]},
        {"kind": "deny", "schedule": "0 22 * * *", "duration": "1h", "clusters": ["eu-*"]}
    ]}))
    .expect("valid project");
    let projects = Projects::new([("platform".to_owned(), spec)]);
    let applications = (0..APPS)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("web-{i:05}")},
                "spec": {"project": "platform", "source": {"repoURL": "r"},
                         "destination": {"name": format!("eu-{}", i % 20),
                                         "namespace": format!("prod-{}", i % 7)}}
            }))
            .expect("valid Application")
        })
        .collect();
    (projects, applications)
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let input = input();
    let decision = advance(&input);
    assert_eq!(decision.application_status.len(), APPS);
    assert_eq!(
        decision.sync_triggered.len(),
        250,
        "25% of step 3's 1,000 apps"
    );
    let mut group = c.benchmark_group("rollout");
    group.sample_size(20);
    group.bench_function("step_10000_apps_10_steps", |b| b.iter(|| advance(&input)));
    let (projects, applications) = windowed();
    let now: Timestamp = "2025-03-01T12:00:00Z".parse().expect("valid time");
    let each: Vec<_> = applications
        .iter()
        .map(|app| sync_block_or_invalid(&projects, app, SyncKind::Automated, now))
        .collect();
    assert_eq!(
        each.iter().flatten().count(),
        APPS,
        "a Saturday: the freeze blocks every Application"
    );
    // As the ApplicationSet controller builds a pass's input: one judge for the pass.
    let pass = || {
        let mut judge = Judge::new(&projects, SyncKind::Automated, now);
        applications
            .iter()
            .map(|app| judge.block_or_invalid(app))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        pass(),
        each,
        "the pass's verdicts are each Application's own"
    );
    group.bench_function("windows_10000_apps_3_windows", |b| b.iter(pass));
    group.finish();
}

support::cpu_time_main!(bench);

//! Sync windows on the real control plane: a project's deny window over step 2 of a three-step
//! RollingSync (a window that starts at the current minute and ends about 75 s from now). The
//! controller (run in this process) syncs step 1, holds step 2 with a condition naming the
//! window, refuses a person's sync of another Application the window covers, and finishes the
//! rollout once the window ends; `flotilla windows stack` lists the window as active meanwhile. `flotilla simulate` of the same ApplicationSet and project,
//! started at the same instant, shows the same wait.

mod controller_support;
mod support;

use std::time::Duration;

use clap::Parser;
use flotilla::cli::simulate::{simulate_from_args, table};
use flotilla::cli::{Cli, Command as Subcommand};
use flotilla_core::api::application_set_status::{
    ApplicationSetStatus, ConditionType, RolloutApplicationState as State,
};
use flotilla_core::api::{AppProject, Application, ApplicationSet};
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use serde_json::{Value, json};
use support::{TestNamespace, apply, eventually_within, object};

const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(240);

/// A ConfigMap manifest for component `name` (Healthy as soon as it exists).
fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  version: v1\n")
}

/// The three-step ApplicationSet `stack` (database, backend, frontend by priority) of project
/// `release` deploying `apps/<component>` of `url` into the test namespace.
fn appset(ns: &TestNamespace, url: &str) -> Value {
    let step = |priority: &str| json!({"matchExpressions": [{"key": "priority", "operator": "In", "values": [priority]}]});
    json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "stack"},
        "spec": {
            "goTemplate": true,
            "generators": [{"list": {"elements": [
                {"component": "database", "priority": "1"},
                {"component": "backend", "priority": "2"},
                {"component": "frontend", "priority": "3"}
            ]}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [step("1"), step("2"), step("3")]}},
            "template": {
                "metadata": {"name": "{{.component}}", "labels": {"priority": "{{.priority}}"}},
                "spec": {
                    "project": "release",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "apps/{{.component}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
                    "syncPolicy": {"automated": {"prune": true}}
                }
            }
        }
    })
}

/// The project `release` with the deny window `backend freeze`, active from the start of the
/// current minute until `end`, over the backend and the `manual-*` Applications.
fn project(start_of_minute: Timestamp, end: Timestamp) -> Value {
    let utc = start_of_minute.to_zoned(TimeZone::UTC);
    let schedule = format!(
        "{} {} {} {} *",
        utc.minute(),
        utc.hour(),
        utc.day(),
        utc.month()
    );
    let seconds = end.duration_since(start_of_minute).as_secs();
    json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "release"},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "syncWindows": [{
                "kind": "deny",
                "description": "backend freeze",
                "schedule": schedule,
                "duration": format!("{seconds}s"),
                "applications": ["backend", "manual-*"]
            }]
        }
    })
}

fn progressing(status: &ApplicationSetStatus) -> (String, String) {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutProgressing)
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

fn rollout_state(status: &ApplicationSetStatus, app: &str) -> Option<State> {
    status
        .application_status
        .iter()
        .find(|entry| entry.application == app)
        .map(|entry| entry.status)
}

async fn wait_for_appset(
    api: &Api<ApplicationSet>,
    what: &str,
    check: impl Fn(&ApplicationSetStatus) -> bool,
) -> ApplicationSetStatus {
    eventually_within(ROLLOUT_TIMEOUT, what, async || {
        let appset = api.get("stack").await.map_err(|e| e.to_string())?;
        match appset.status {
            Some(status) if check(&status) => Ok(status),
            other => Err(format!("{other:#?}")),
        }
    })
    .await
}

/// When the last sync of Application `name` started.
async fn sync_started(ns: &TestNamespace, name: &str) -> Timestamp {
    let app = ns.api::<Application>().get(name).await.expect("reads it");
    app.status
        .and_then(|s| s.operation_state)
        .and_then(|op| op.started_at)
        .map(|t| t.0)
        .unwrap_or_else(|| panic!("{name} has synced"))
}

#[tokio::test]
async fn a_deny_window_holds_step_two_until_it_ends() {
    let ns = controller_support::setup("windows").await;
    let repo = controller_support::repository();
    let url = repo.path().display().to_string();
    let files: Vec<(String, String)> = ["database", "backend", "frontend", "manual-tool"]
        .iter()
        .map(|c| (format!("apps/{c}/cm.yaml"), config_map(c)))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    controller_support::commit(repo.path(), &files, "v1");

    let started = Timestamp::now();
    let start_of_minute = Timestamp::from_second(started.as_second() - started.as_second() % 60)
        .expect("a valid instant");
    let window_end = started
        .checked_add(SignedDuration::from_secs(75))
        .expect("a valid instant");
    let window_end = Timestamp::from_second(window_end.as_second()).expect("whole seconds");
    let project_value = project(start_of_minute, window_end);
    apply(&ns.api::<AppProject>(), &object(project_value.clone())).await;
    let appset_value = appset(&ns, &url);
    let controller = controller_support::start(&ns, "windows-e2e");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &object(appset_value.clone())).await;

    // Step 1 syncs; step 2 waits, and the condition names the window.
    let waiting = wait_for_appset(&appsets, "step 2 waiting for the window", |status| {
        progressing(status).0 == "StepWaitingForWindow"
            && rollout_state(status, "database") == Some(State::Healthy)
    })
    .await;
    assert!(
        Timestamp::now() < window_end,
        "the test saw the wait in time"
    );
    let (_, message) = progressing(&waiting);
    assert!(
        message.starts_with("step 2 of 3 waits for window 'backend freeze' (opens ")
            && message.ends_with(" UTC); held back: backend"),
        "{message}"
    );
    assert_eq!(rollout_state(&waiting, "backend"), Some(State::Waiting));
    assert_eq!(rollout_state(&waiting, "frontend"), Some(State::Waiting));

    // `flotilla windows` lists the window over the backend, active, and what it means.
    let listed = support::run_flotilla(&ns, &["windows", "stack"]).await;
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listed:?}");
    let backend_row = listing
        .lines()
        .find(|line| line.starts_with("backend "))
        .unwrap_or_else(|| panic!("a row for the backend:\n{listing}"));
    assert!(
        backend_row.contains("backend freeze")
            && backend_row.contains(" yes ")
            && backend_row.contains("ends "),
        "{listing}"
    );
    assert!(
        listing.contains("\nbackend: automated syncs waits for window 'backend freeze' (deny ")
            && listing.contains("\ndatabase: automated syncs allowed; manual syncs allowed\n"),
        "{listing}"
    );

    // A person's sync of another Application the window covers is refused, naming it.
    let manual: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "manual-tool"},
        "spec": {
            "project": "release",
            "source": {"repoURL": url, "targetRevision": "main", "path": "apps/manual-tool"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "operation": {"sync": {"revision": ""}, "initiatedBy": {"username": "alice"}}
        }
    }));
    apply(&ns.api::<Application>(), &manual).await;
    let refused = eventually_within(ROLLOUT_TIMEOUT, "the manual sync refused", async || {
        let app = ns
            .api::<Application>()
            .get("manual-tool")
            .await
            .map_err(|e| e.to_string())?;
        let state = app.status.as_ref().and_then(|s| s.operation_state.clone());
        match state {
            Some(state) if app.spec.operation.is_none() => Ok(state),
            other => Err(format!("{other:#?}")),
        }
    })
    .await;
    assert_eq!(refused.phase, flotilla_core::sync::OperationPhase::Failed);
    assert!(
        refused
            .message
            .starts_with("sync refused: blocked by window 'backend freeze' (deny ")
            && refused.message.contains(" — opens "),
        "{}",
        refused.message
    );

    // The window ends: the rollout finishes, the backend synced only after it.
    wait_for_appset(&appsets, "the rollout complete", |status| {
        progressing(status).0 == "ApplicationSetRolloutComplete"
    })
    .await;
    let backend = sync_started(&ns, "backend").await;
    let database = sync_started(&ns, "database").await;
    assert!(database < window_end, "step 1 ran during the window");
    assert!(
        backend >= window_end,
        "backend synced at {backend}, the window ended at {window_end}"
    );
    println!(
        "window ended {window_end}; backend sync started {backend} ({} s later)",
        backend.duration_since(window_end).as_secs_f64()
    );
    controller.stop().await;

    // The same ApplicationSet and project simulated from the same instant wait the same way.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let appset_file = dir.path().join("stack.yaml");
    let project_file = dir.path().join("release.yaml");
    std::fs::write(&appset_file, serde_json::to_string(&appset_value).unwrap()).unwrap();
    std::fs::write(
        &project_file,
        serde_json::to_string(&project_value).unwrap(),
    )
    .unwrap();
    let argv = [
        "flotilla".to_owned(),
        "simulate".to_owned(),
        "--instant".to_owned(),
        appset_file.display().to_string(),
        format!("--repo={url}={url}"),
        format!("--project={}", project_file.display()),
        format!("--start={started}"),
        format!("--existing-namespace={}", ns.name),
    ];
    let Subcommand::Simulate(args) = Cli::try_parse_from(argv).expect("valid arguments").command
    else {
        panic!("parsed as simulate")
    };
    // The simulator runs its own runtime: off this test's.
    let report = std::thread::scope(|scope| {
        scope
            .spawn(|| simulate_from_args(&args, &Default::default(), &|_| {}).expect("simulates"))
            .join()
            .expect("the simulation thread")
    });
    let text = table(&report);
    let [wait] = report.step_waits.as_slice() else {
        panic!("one wait:\n{text}")
    };
    let opens = window_end.duration_since(started).as_secs_f64();
    assert_eq!(wait.step, 2, "{text}");
    assert!((wait.end - opens).abs() < 1.0, "{text}");
    assert!(
        wait.reason.starts_with("waits for window 'backend freeze'"),
        "{text}"
    );
    let simulated_backend = report
        .applications
        .iter()
        .find(|a| a.name == "backend")
        .and_then(|a| a.start)
        .expect("the backend synced");
    assert!((simulated_backend - opens).abs() < 1.0, "{text}");
}

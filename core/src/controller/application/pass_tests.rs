//! Unit tests of [`super::decide_pass`]: whole passes compared, one row per situation.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::api::application::{HealthReport, SyncStatus};
use crate::api::application_set_status::SyncStatusCode;
use crate::health::HealthStatus;

const RESYNC: Duration = Duration::from_secs(180);

/// What the windows say about a sync of a kind.
type Windows = dyn Fn(SyncKind) -> Option<WindowBlock>;

fn now() -> Timestamp {
    Timestamp::from_second(1_000_000).unwrap()
}

/// An Application named `web` at generation 1, compared once before (so an unchanged compare
/// writes nothing), with `spec` merged into its spec.
fn app(spec: Value) -> Application {
    let mut value = json!({
        "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": "web", "generation": 1},
        "spec": {"project": "default", "source": {"repoURL": "file:///r"}, "destination": {}},
        "status": {
            "sync": {"status": "Synced", "revision": "abc"},
            "health": {"status": "Healthy"},
            "reconciledAt": "1970-01-12T13:46:00Z",
            "observedGeneration": 1
        }
    });
    if let (Some(into), Value::Object(from)) = (value["spec"].as_object_mut(), spec) {
        into.extend(from);
    }
    serde_json::from_value(value).unwrap()
}

/// A compare of nothing at revision `abc`, `status` and Healthy.
fn comparison(status: SyncStatusCode) -> Comparison {
    let health = HealthReport {
        status: HealthStatus::Healthy,
        ..HealthReport::default()
    };
    Comparison {
        sync: SyncStatus::at(status, Some("abc")),
        health,
        resources: Vec::new(),
        pre_delete_hooks: Vec::new(),
        post_delete_hooks: Vec::new(),
    }
}

fn block(opens_at: Option<Timestamp>) -> WindowBlock {
    WindowBlock {
        window: "freeze".to_owned(),
        summary: "deny * * * * * for 1h, UTC".to_owned(),
        opens_at,
        opens: "Mon 08:00 UTC".to_owned(),
    }
}

fn request(username: &str, automated: bool) -> Value {
    json!({"operation": {
        "sync": {"revision": "def"},
        "initiatedBy": {"username": username, "automated": automated}
    }})
}

/// The status patch of a compare of `sync` at `now` on [`app`] (sync, health, conditions as
/// given, `reconciledAt` now).
fn compared(sync: &str, conditions: Value) -> Value {
    json!({"status": {
        "sync": {"status": sync, "revision": "abc", "revisions": null},
        "health": {"status": "Healthy", "message": null},
        "resources": [],
        "preDeleteHooks": [],
        "postDeleteHooks": [],
        "conditions": conditions,
        "reconciledAt": Time(now()),
        "observedGeneration": 1,
    }})
}

#[test]
fn passes() {
    let in_an_hour = now() + Duration::from_secs(3600);
    let open = |_: SyncKind| -> Option<WindowBlock> { None };
    let closed = move |_: SyncKind| -> Option<WindowBlock> { Some(block(Some(in_an_hour))) };
    let automated_closed = |kind: SyncKind| -> Option<WindowBlock> {
        (kind == SyncKind::Automated).then(|| block(None))
    };
    let waiting = json!([{
        "type": "SyncError",
        "message": "automated sync waits for window 'freeze' (deny * * * * * for 1h, UTC) — opens Mon 08:00 UTC",
        "lastTransitionTime": Time(now()),
    }]);
    let automated = || json!({"syncPolicy": {"automated": {}}});
    let refusal = "sync refused: blocked by window 'freeze' (deny * * * * * for 1h, UTC) — opens Mon 08:00 UTC";
    let requested = app(request("alice", false));
    let operation = requested.spec.operation.clone().unwrap();
    let cases: Vec<(&str, Application, SyncStatusCode, &Windows, Pass)> = vec![
        (
            "synced, unchanged: nothing written, resync",
            app(json!({})),
            SyncStatusCode::Synced,
            &open,
            quiet(None, RESYNC),
        ),
        (
            "manual, out of sync: the compare written, no sync",
            app(json!({})),
            SyncStatusCode::OutOfSync,
            &open,
            quiet(Some(compared("OutOfSync", json!([]))), RESYNC),
        ),
        (
            "automated, out of sync, windows open: the compare goes with the sync",
            app(automated()),
            SyncStatusCode::OutOfSync,
            &open,
            Pass {
                status: Some(compared("OutOfSync", json!([]))),
                action: PassAction::Sync(Trigger::Automated),
                event: None,
            },
        ),
        (
            "automated, out of sync, a window closed for an hour: the compare and SyncError in one write, back when it opens",
            app(automated()),
            SyncStatusCode::OutOfSync,
            &closed,
            quiet(
                Some(compared("OutOfSync", waiting.clone())),
                RESYNC.min(Duration::from_secs(3601)),
            ),
        ),
        (
            "a manual request with only automated syncs blocked: it runs",
            requested.clone(),
            SyncStatusCode::Synced,
            &automated_closed,
            Pass {
                status: None,
                action: PassAction::Sync(Trigger::Requested(operation.clone())),
                event: None,
            },
        ),
        (
            "a request by a rollout waits like an automated sync",
            app(request("rollout/stack", true)),
            SyncStatusCode::Synced,
            &automated_closed,
            quiet(Some(json!({"status": {"conditions": waiting}})), RESYNC),
        ),
        (
            "a manual request under a closed window: refused, recorded Failed in the same write",
            requested.clone(),
            SyncStatusCode::Synced,
            &closed,
            Pass {
                status: Some(json!({"status": {"operationState": {
                    "operationId": "web-1000000000",
                    "phase": "Failed",
                    "message": refusal,
                    "revision": "def",
                    "failure": null,
                    "startedAt": Time(now()),
                    "finishedAt": Time(now()),
                    "resources": [],
                }}})),
                action: PassAction::Refuse {
                    request: operation,
                    requeue: RESYNC,
                },
                event: Some((EventReason::SyncFailed, refusal.to_owned())),
            },
        ),
    ];
    for (name, app, sync, windows, expected) in cases {
        let comparison = comparison(sync);
        let input = PassInput {
            app: &app,
            observed: Ok(&comparison),
            revision: Some("abc"),
            gate: SyncGate::Automatic,
            windows,
            resync: RESYNC,
        };
        assert_eq!(decide_pass(&input, now()), expected, "{name}");
    }
}

#[test]
fn a_failed_observation_is_written_and_announced_and_starts_nothing() {
    let app = app(json!({"syncPolicy": {"automated": {}}}));
    let input = PassInput {
        app: &app,
        observed: Err((ApplicationConditionType::ComparisonError, "no manifests")),
        revision: None,
        gate: SyncGate::Automatic,
        windows: &|_| None,
        resync: RESYNC,
    };
    let pass = decide_pass(&input, now());
    assert_eq!(pass.action, PassAction::Requeue(RESYNC));
    assert_eq!(
        pass.event,
        Some((EventReason::ComparisonError, "no manifests".to_owned()))
    );
    let status = pass.status.expect("the failure is written");
    assert_eq!(status["status"]["sync"]["status"], "Unknown");
    assert_eq!(status["status"]["conditions"][0]["type"], "ComparisonError");
}

#[test]
fn a_running_operation_resumes_whatever_the_windows_say() {
    let mut app = app(json!({}));
    let (state, _) = begin(None, Some("abc"), "web-1", Time(now()));
    app.status.as_mut().unwrap().operation_state = Some(state);
    let input = PassInput {
        app: &app,
        observed: Ok(&comparison(SyncStatusCode::OutOfSync)),
        revision: Some("abc"),
        gate: SyncGate::RolloutControlled,
        windows: &|_| Some(block(None)),
        resync: RESYNC,
    };
    assert_eq!(
        decide_pass(&input, now()).action,
        PassAction::Sync(Trigger::Resume {
            revision: Some("abc".to_owned())
        })
    );
}

//! Metric analysis against the control plane and a real Prometheus, with `flotilla controller`
//! (the binary): a RollingSync of two steps (`db`, then `api`) whose first step is judged by a
//! Prometheus query of an error rate. Prometheus (Debian's, on loopback, behind basic auth whose
//! password comes from a Secret) scrapes every second an exporter the test serves, whose value
//! the test sets:
//! - at 0.001 (below `successCondition: result[0] < 0.01`) the three measurements pass — the
//!   controller SIGKILLed after the first and restarted resumes the count from status — and
//!   `api` leaves Waiting only after the analysis passed;
//! - at 0.2 (above `failureCondition: result[0] >= 0.05`) the first measurement of the next
//!   revision fails the step, which rolls back (`onFailure: rollback`): `db` is on v1's objects
//!   again and `api` never synced v2;
//! - the password is in no status, Event or controller log line.
//!
//! And a web analysis (`analysis.web`) of a JSON endpoint on loopback: every GET carries the
//! header its Secret holds, the answer's `data.errorRate` passes the step, and the header's value
//! is in no status or log line.

mod support;

use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::{
    AnalysisStatus, ApplicationSetStatus, ConditionType, RolloutApplicationState as State,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use support::appset_writes::{self, Writes};
use support::git_remote::{GitDaemon, Remote};
use support::prometheus::{Exporter, GAUGE, Prometheus};
use support::recording_http::RecordingServer;
use support::{
    TestNamespace, apply, controller_log_path, controller_process, eventually, namespace, object,
    wait_until,
};

const USERNAME: &str = "flotilla";
const PASSWORD: &str = "s3cret-never-logged";
/// The scrape job, and the query the analysis measures.
const JOB: &str = "exporter";

fn query() -> String {
    format!("{GAUGE}{{job=\"{JOB}\"}}")
}

/// Writes `db/` and `api/` (a ConfigMap carrying `version` each) and pushes them.
fn push(remote: &Remote, version: &str) -> String {
    for component in ["db", "api"] {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": component}, "data": {"version": version}});
        remote.write(&format!("{component}/config.json"), &config.to_string());
    }
    remote.push(version)
}

/// `db`'s analysis: the error rate `prometheus` scrapes.
fn prometheus_analysis(prometheus: &Prometheus) -> serde_json::Value {
    json!({"prometheus": {
        "address": prometheus.address(),
        "query": query(),
        "credentialsSecret": "prometheus-credentials",
        "successCondition": "result[0] < 0.01",
        "failureCondition": "result[0] >= 0.05",
        "interval": "2s",
        "count": 3
    }})
}

/// The ApplicationSet `metrics`: `db` then `api`, `db`'s step judged by `analysis`.
fn appset(ns: &TestNamespace, url: &str, analysis: serde_json::Value) -> ApplicationSet {
    let step = |name: &str| {
        json!({"name": name,
        "matchExpressions": [{"key": "step", "operator": "In", "values": [name]}]})
    };
    let mut db = step("db");
    db["analysis"] = analysis;
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "metrics"},
        "spec": {
            "goTemplate": true,
            "generators": [{"list": {"elements": [
                {"app": "db", "step": "db"}, {"app": "api", "step": "api"}
            ]}}],
            "strategy": {"type": "RollingSync", "rollingSync": {
                "onFailure": "rollback", "steps": [db, step("api")]
            }},
            "template": {
                "metadata": {"name": "{{.app}}", "labels": {"step": "{{.step}}"}},
                "spec": {
                    "project": "platform",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "{{.app}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
                    "syncPolicy": {"automated": {"prune": true}}
                }
            }
        }
    }))
}

/// Applies `appset` with the Flotilla CRDs installed, until the API server keeps its metric
/// analysis (another test may install an older copy of the CRDs meanwhile).
async fn apply_kept(ns: &TestNamespace, appset: &ApplicationSet) {
    let appsets: Api<ApplicationSet> = ns.api();
    eventually("the ApplicationSet stored with its analysis", async || {
        support::install_flotilla_crds(&ns.client).await;
        let stored = apply(&appsets, appset).await;
        let kept = stored
            .spec
            .strategy
            .as_ref()
            .and_then(|s| s.rolling_sync.as_ref())
            .and_then(|r| r.steps[0].analysis.as_ref())
            .is_some_and(|a| a.prometheus.is_some() || a.web.is_some());
        if kept {
            Ok(())
        } else {
            Err("the metric analysis pruned by an older CRD".to_owned())
        }
    })
    .await;
}

/// Step 1's analysis record.
fn analysis(status: Option<&ApplicationSetStatus>) -> Option<AnalysisStatus> {
    status?
        .rollout_steps
        .iter()
        .find(|record| record.step == 1)?
        .analysis
        .clone()
}

/// `api`'s rollout state.
fn api_state(status: Option<&ApplicationSetStatus>) -> Option<State> {
    status?
        .application_status
        .iter()
        .find(|entry| entry.application == "api")
        .map(|entry| entry.status)
}

/// Every distinct status the ApplicationSet had, as (`api`'s state, whether step 1's analysis
/// passed).
fn record_writes(
    ns: &TestNamespace,
) -> (Writes<(Option<State>, bool)>, tokio::task::JoinHandle<()>) {
    appset_writes::record(ns, "metrics", |appset| {
        let status = appset.status.as_ref();
        let passed = analysis(status).is_some_and(|a| a.passed_at.is_some());
        Some((api_state(status), passed))
    })
}

/// The ConfigMap `name`'s `version`.
async fn version(ns: &TestNamespace, name: &str) -> Option<String> {
    let configs: Api<ConfigMap> = ns.api();
    configs
        .get_opt(name)
        .await
        .expect("reads the ConfigMap")
        .and_then(|c| c.data)
        .and_then(|d| d.get("version").cloned())
}

/// Waits until Prometheus answers `value` for the query (a scrape after the exporter's change).
async fn wait_scraped(prometheus: &Prometheus, value: f64) {
    eventually(
        &format!("Prometheus scraped {value}"),
        async || match prometheus.first_value(&query()) {
            Some(seen) if (seen - value).abs() < 1e-9 => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
}

#[tokio::test]
async fn a_prometheus_error_rate_opens_the_next_step_below_its_threshold_and_rolls_back_above_it() {
    let ns = namespace(1, "rollout-metrics").await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let exporter = Exporter::start(0.001);
    let prometheus = Prometheus::start(&exporter, JOB, USERNAME, PASSWORD);
    wait_scraped(&prometheus, 0.001).await;
    let secrets: Api<Secret> = ns.api();
    let credentials: Secret = object(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "prometheus-credentials"},
        "stringData": {"username": USERNAME, "password": PASSWORD}}));
    secrets
        .create(&PostParams::default(), &credentials)
        .await
        .expect("creates the credentials Secret");
    let remote = Remote::new("metrics");
    let v1 = push(&remote, "v1");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let (writes, watch) = record_writes(&ns);
    apply_kept(&ns, &appset(&ns, &url, prometheus_analysis(&prometheus))).await;
    let appsets: Api<ApplicationSet> = ns.api();

    // v1, error rate 0.001: the first measurement passes; the controller is killed then.
    let controller = controller_process(&ns, "metrics-1");
    let first = wait_until(&appsets, "metrics", "a first measurement", |a| {
        analysis(a.status.as_ref()).is_some_and(|a| a.measurements >= 1)
    })
    .await;
    controller.kill();
    let started = analysis(first.status.as_ref()).expect("the analysis is in status");
    assert_eq!(
        (started.failures, started.inconclusive),
        (0, 0),
        "{started:?}"
    );
    assert!(
        started
            .message
            .contains("result [0.001]: successful (result[0] < 0.01)"),
        "{started:?}"
    );
    let explain = support::run_flotilla(&ns, &["rollout", "explain", "metrics"]).await;
    let explain = String::from_utf8_lossy(&explain.stdout).into_owned();
    assert!(
        explain.contains(&format!("analysis Prometheus {}", prometheus.address())),
        "{explain}"
    );
    let controller = controller_process(&ns, "metrics-2");
    let done = wait_until(&appsets, "metrics", "api Healthy on v1", |a| {
        api_state(a.status.as_ref()) == Some(State::Healthy)
    })
    .await;
    let passed = analysis(done.status.as_ref()).expect("the analysis is kept");
    assert_eq!(passed.started_at, started.started_at, "the same analysis");
    assert_eq!(
        (passed.measurements, passed.failures, passed.inconclusive),
        (3, 0, 0),
        "resumed at its count, not started again: {passed:?}"
    );
    assert!(passed.passed_at.is_some());
    {
        let writes = writes.lock().expect("not poisoned");
        let opened = writes
            .iter()
            .position(|(api, _)| api.is_some_and(|s| s != State::Waiting))
            .expect("api left Waiting");
        assert!(
            writes[opened].1,
            "api left Waiting only once the analysis passed: {writes:?}"
        );
    }
    assert_eq!(version(&ns, "api").await.as_deref(), Some("v1"));

    // v2, error rate 0.2: the first measurement fails the step; db rolls back, api waits.
    exporter.set(0.2);
    wait_scraped(&prometheus, 0.2).await;
    let v2 = push(&remote, "v2");
    let rolled_back = wait_until(&appsets, "metrics", "step 1 rolled back", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ConditionType::RolloutRolledBack && c.reason == "RolledBack")
        })
    })
    .await;
    controller.kill();
    watch.abort();
    let status = rolled_back.status.clone().expect("a status");
    let record = status
        .rollout_steps
        .iter()
        .find(|r| r.step == 1)
        .expect("step 1's record");
    assert!(
        record
            .failure
            .contains("measurement 1/3: result [0.2]: failed (result[0] >= 0.05)")
            && record
                .failure
                .ends_with("1 failed measurement(s), more than failureLimit 0"),
        "{}",
        record.failure
    );
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutRolledBack)
        .expect("RolloutRolledBack");
    assert!(
        condition.message.contains(&format!(
            "db (step 1) back on {} from {}",
            &v1[..7],
            &v2[..7]
        )),
        "{}",
        condition.message
    );
    eventually("db's ConfigMap back on v1", async || {
        match version(&ns, "db").await.as_deref() {
            Some("v1") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(
        version(&ns, "api").await.as_deref(),
        Some("v1"),
        "api never synced v2"
    );

    // The password is nowhere: status, Events, the controller's logs.
    let stored = serde_json::to_string(&appsets.get("metrics").await.expect("reads it"))
        .expect("serializes");
    assert!(!stored.contains(PASSWORD));
    let events: Api<Event> = ns.api();
    let events = serde_json::to_string(
        &events
            .list(&ListParams::default())
            .await
            .expect("lists Events")
            .items,
    )
    .expect("serializes");
    assert!(!events.contains(PASSWORD));
    let logs: Vec<String> = ["metrics-1", "metrics-2"]
        .iter()
        .map(|identity| {
            std::fs::read_to_string(controller_log_path(&ns.name, identity))
                .expect("reads the controller's log")
        })
        .collect();
    // The second controller ran long enough for its measurements' lines to be written (the
    // first, SIGKILLed early, may have lost its last ones).
    assert!(logs[1].contains("analysis measurement"));
    assert!(logs.iter().all(|log| !log.contains(PASSWORD)));
}

#[tokio::test]
async fn a_web_analysis_sends_the_headers_of_its_secret_and_passes_on_its_json_answer() {
    const API_KEY: &str = "key-never-logged-7Qx";
    let ns = namespace(1, "rollout-web-analysis").await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let service = RecordingServer::start(|_| (200, r#"{"data": {"errorRate": 0.002}}"#.to_owned()));
    let secrets: Api<Secret> = ns.api();
    let headers: Secret = object(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "analysis-headers"},
        "stringData": {"X-Api-Key": API_KEY}}));
    secrets
        .create(&PostParams::default(), &headers)
        .await
        .expect("creates the headers Secret");
    let remote = Remote::new("web-analysis");
    push(&remote, "v1");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let web = json!({"web": {
        "url": service.url("/rates"),
        "jsonPath": "data.errorRate",
        "headersSecret": "analysis-headers",
        "successCondition": "result < 0.01",
        "interval": "1s",
        "count": 2
    }});
    apply_kept(&ns, &appset(&ns, &url, web)).await;
    let appsets: Api<ApplicationSet> = ns.api();

    let controller = controller_process(&ns, "web-analysis");
    let done = wait_until(&appsets, "metrics", "api Healthy after the analysis", |a| {
        api_state(a.status.as_ref()) == Some(State::Healthy)
    })
    .await;
    controller.kill();
    let passed = analysis(done.status.as_ref()).expect("the analysis is in status");
    assert_eq!(
        (passed.measurements, passed.failures, passed.inconclusive),
        (2, 0, 0),
        "{passed:?}"
    );
    assert!(passed.passed_at.is_some(), "{passed:?}");
    let received = service.received();
    assert!(received.len() >= 2, "{received:?}");
    for request in &received {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("GET", "/rates")
        );
        assert_eq!(
            request.headers.get("x-api-key").map(String::as_str),
            Some(API_KEY),
            "every GET carries the Secret's header"
        );
    }
    let stored = serde_json::to_string(&appsets.get("metrics").await.expect("reads it"))
        .expect("serializes");
    let log = std::fs::read_to_string(controller_log_path(&ns.name, "web-analysis"))
        .expect("reads the controller's log");
    assert!(!stored.contains(API_KEY) && !log.contains(API_KEY));
}

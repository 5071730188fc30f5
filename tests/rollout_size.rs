//! A rollout whose per-Application state is past the controller's `--rollout-status-limit`,
//! on the control plane with `flotilla controller` (the binary). The limit is set low (200
//! bytes, about one entry) so that six Applications show the mechanism that keeps 20,000 within
//! etcd's request limit (measured in BENCHMARKS.md): the ApplicationSet's
//! `status.applicationStatus` stays empty and `status.applicationStatusSummary` counts each
//! step's Applications per state, each Application keeps its own entry in `status.rollout`; the
//! steps still go in order (read from every status written), a killed controller resumes from
//! the Applications' entries, and `rollout explain` and `rollout status` show every entry; the
//! web view's step filter lists each step's Applications.

mod support;

use std::collections::BTreeMap;

use flotilla_core::api::application_set_status::{
    ApplicationSetApplicationStatus, RolloutApplicationState as State, StepRolloutSummary,
};
use flotilla_core::api::{Application, ApplicationSet};
use kube::api::ListParams;
use serde_json::json;
use support::appset_writes::{self, Writes};
use support::git_remote::{GitDaemon, Remote};
use support::{
    TestNamespace, apply, controller_process_with, eventually, namespace, object, run_flotilla,
};

/// The Applications, three per step.
const APPS: [(&str, &str); 6] = [
    ("db-a", "1"),
    ("db-b", "1"),
    ("db-c", "1"),
    ("web-a", "2"),
    ("web-b", "2"),
    ("web-c", "2"),
];

fn appset(ns: &TestNamespace, url: &str) -> ApplicationSet {
    let elements: Vec<serde_json::Value> = APPS
        .iter()
        .map(|(app, step)| json!({"app": app, "step": step}))
        .collect();
    let step = |value: &str| json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [value]}]});
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "fleet"},
        "spec": {
            "goTemplate": true,
            "generators": [{"list": {"elements": elements}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [step("1"), step("2")]}},
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

/// Every distinct `status.applicationStatusSummary` written, with the length of
/// `status.applicationStatus` beside it.
type Summaries = Writes<(usize, Vec<StepRolloutSummary>)>;

fn record_writes(ns: &TestNamespace) -> (Summaries, tokio::task::JoinHandle<()>) {
    appset_writes::record(ns, "fleet", |appset| {
        let status = appset.status.unwrap_or_default();
        let write = (
            status.application_status.len(),
            status.application_status_summary,
        );
        (!write.1.is_empty()).then_some(write)
    })
}

/// Each Application's `status.rollout`, by name.
async fn entries(ns: &TestNamespace) -> BTreeMap<String, ApplicationSetApplicationStatus> {
    ns.api::<Application>()
        .list(&ListParams::default())
        .await
        .expect("lists the Applications")
        .items
        .into_iter()
        .filter_map(|app| Some((app.metadata.name?, app.status?.rollout?)))
        .collect()
}

fn count(summary: &[StepRolloutSummary], step: &str) -> StepRolloutSummary {
    summary
        .iter()
        .find(|s| s.step == step)
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn past_the_limit_each_application_keeps_its_state_and_the_rollout_stays_exact() {
    let ns = namespace(1, "rollout-size").await;
    support::permissive_project(&ns, "platform").await;
    let remote = Remote::new("fleet");
    for (app, _) in APPS {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": app}, "data": {"app": app}});
        remote.write(&format!("{app}/config.json"), &config.to_string());
    }
    let revision = remote.push("v1");
    let daemon = GitDaemon::start(remote.exported());
    let (writes, watch) = record_writes(&ns);
    let fleet = appset(&ns, &daemon.url(&remote.served_name()));
    eventually(
        "the ApplicationSet applied with the current CRDs",
        async || {
            support::install_flotilla_crds(&ns.client).await;
            apply(&ns.api::<ApplicationSet>(), &fleet).await;
            Ok::<(), String>(())
        },
    )
    .await;
    let limit = ["--rollout-status-limit", "200"];

    // The first controller is killed once the Applications hold their entries.
    let first = controller_process_with(&ns, "size-1", &limit);
    eventually(
        "the Applications hold their rollout entries",
        async || match entries(&ns).await.len() {
            6 => Ok(()),
            n => Err(format!("{n} of 6")),
        },
    )
    .await;
    first.kill();
    let ui = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let ui_addr = ui.to_string();
    let second =
        controller_process_with(&ns, "size-2", &[limit[0], limit[1], "--ui-addr", &ui_addr]);
    let done = eventually("every Application Healthy", async || {
        let held = entries(&ns).await;
        if held.len() == 6 && held.values().all(|e| e.status == State::Healthy) {
            Ok(held)
        } else {
            Err(format!("{held:#?}"))
        }
    })
    .await;
    let stored = eventually("the summary counts them all Healthy", async || {
        let appset = ns
            .api::<ApplicationSet>()
            .get("fleet")
            .await
            .expect("reads it");
        let status = appset.status.clone().unwrap_or_default();
        let healthy = |step: &str| count(&status.application_status_summary, step).healthy;
        if healthy("1") == 3 && healthy("2") == 3 {
            Ok(appset)
        } else {
            Err(format!("{:?}", status.application_status_summary))
        }
    })
    .await;
    // The web view's step filter (a pipeline box's link) lists each step's Applications from
    // their own entries: the ApplicationSet's list is empty.
    for (step, listed, not_listed) in [("1", "db", "web"), ("2", "web", "db")] {
        let (code, page) =
            support::http_get(ui, &format!("/applicationsets/fleet?step={step}")).await;
        let section = page
            .split_once(r#"<section id="applications">"#)
            .and_then(|(_, rest)| rest.split_once("</section>"))
            .map(|(section, _)| section.to_owned())
            .unwrap_or_else(|| panic!("{code}: {page}"));
        for suffix in ["a", "b", "c"] {
            assert!(
                section.contains(&format!(r#"href="/applications/{listed}-{suffix}""#))
                    && !section.contains(&format!(r#"href="/applications/{not_listed}-{suffix}""#)),
                "step {step}: {section}"
            );
        }
    }
    second.kill();
    watch.abort();

    let status = stored.status.clone().expect("a status");
    assert!(status.application_status.is_empty(), "{status:?}");
    for (app, step) in APPS {
        let entry = &done[app];
        assert_eq!(
            (entry.step.as_str(), entry.target_revisions.as_slice()),
            (step, std::slice::from_ref(&revision)),
            "{entry:?}"
        );
    }
    // Every status written kept the list empty, and step 2 moved only once step 1 was Healthy.
    let writes = writes.lock().expect("not poisoned").clone();
    assert!(!writes.is_empty());
    for (listed, summary) in &writes {
        assert_eq!(*listed, 0, "{writes:#?}");
        let two = count(summary, "2");
        if two.pending + two.progressing + two.healthy > 0 {
            assert_eq!(count(summary, "1").healthy, 3, "{writes:#?}");
        }
    }

    // explain decides from the Applications' entries: exactly what they hold.
    let explained = run_flotilla(&ns, &["rollout", "explain", "fleet", "-o", "json"]).await;
    assert!(explained.status.success(), "{explained:?}");
    let document: serde_json::Value =
        serde_json::from_slice(&explained.stdout).expect("explain prints JSON");
    let listed: Vec<ApplicationSetApplicationStatus> =
        serde_json::from_value(document["applicationStatus"].clone()).expect("entries");
    assert_eq!(listed, done.values().cloned().collect::<Vec<_>>());
    let shown = run_flotilla(&ns, &["rollout", "status", "fleet"]).await;
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    for (app, _) in APPS {
        assert!(
            shown
                .lines()
                .any(|line| line.contains(app) && line.contains("Healthy")),
            "{shown}"
        );
    }
}

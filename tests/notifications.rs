//! Notifications end to end: `flotilla controller` rolls out a three-step RollingSync
//! ApplicationSet on cluster 1 (Deployments the node simulator makes ready after a few seconds)
//! with a `flotilla-notifications` ConfigMap whose triggers send each step's start and completion
//! to receivers on loopback — a generic JSON webhook and a Slack-compatible incoming webhook.
//! Each receiver records every request it gets.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::{
    ConditionStatus, ConditionType, RolloutApplicationState as State,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use serde_json::{Value, json};
use support::git_remote::{GitDaemon, Remote};
use support::recording_http::RecordingServer;
use support::three_step_appset::three_steps;
use support::{TestNamespace, apply, controller_process, eventually_within, namespace, object};

/// How long the whole rollout may take.
const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(240);

/// One request a receiver got.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: BTreeMap<String, String>,
    body: Value,
}

/// A notification service on loopback: records every request it gets; answers 500 to the first
/// `failures` of them, then 200.
struct Receiver(RecordingServer);

impl Receiver {
    fn start(failures: usize) -> Self {
        Self(RecordingServer::start(move |n| {
            (if n <= failures { 500 } else { 200 }, "ok".to_owned())
        }))
    }

    fn url(&self, path: &str) -> String {
        self.0.url(path)
    }

    fn received(&self) -> Vec<Received> {
        self.0
            .received()
            .into_iter()
            .map(|request| Received {
                body: request.json(),
                path: request.path,
                headers: request.headers,
            })
            .collect()
    }
}

/// A repository of three components, each a Deployment the node simulator makes ready after
/// `ready_after`, served by `git daemon`; and its commit.
fn repository(ready_after: &str) -> (Remote, GitDaemon, String) {
    let remote = Remote::new("platform");
    for component in ["database", "backend", "frontend"] {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": component},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": component}},
                "template": {
                    "metadata": {
                        "labels": {"app": component},
                        "annotations": {"sim.flotilla.dev/ready-after": ready_after}
                    },
                    "spec": {"containers": [{"name": "main", "image": format!("example.com/{component}:1")}]}
                }
            }
        });
        remote.write(
            &format!("{component}/deployment.json"),
            &deployment.to_string(),
        );
    }
    let commit = remote.push("v1");
    let daemon = GitDaemon::start(remote.exported());
    (remote, daemon, commit)
}

/// The namespace with CRDs, the project, the notifications ConfigMap (`data`) and credentials.
async fn setup(label: &str, data: Value, credentials: Value) -> TestNamespace {
    let ns = namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let config: ConfigMap = object(json!({
        "metadata": {"name": "flotilla-notifications"},
        "data": data
    }));
    apply(&ns.api::<ConfigMap>(), &config).await;
    let secret: Secret = object(json!({
        "metadata": {"name": "flotilla-notifications"},
        "stringData": credentials
    }));
    apply(&ns.api::<Secret>(), &secret).await;
    ns
}

/// Waits until the rollout of `revision` is complete.
async fn wait_complete(appsets: &Api<ApplicationSet>, revision: &str) {
    eventually_within(ROLLOUT_TIMEOUT, "the rollout to complete", async || {
        let appset = appsets
            .get("platform-stack")
            .await
            .map_err(|e| e.to_string())?;
        let status = appset.status.unwrap_or_default();
        let over = status.conditions.iter().any(|c| {
            c.type_ == ConditionType::RolloutProgressing && c.status == ConditionStatus::False
        });
        let healthy = status.application_status.len() == 3
            && status
                .application_status
                .iter()
                .all(|e| e.status == State::Healthy && e.target_revisions == [revision.to_owned()]);
        if over && healthy {
            Ok(())
        } else {
            Err(format!("{status:#?}"))
        }
    })
    .await;
}

/// The messages a receiver got, as `(trigger, step)`.
fn transitions(received: &[Received]) -> Vec<(String, String)> {
    received
        .iter()
        .map(|r| {
            (
                r.body["trigger"].as_str().unwrap_or_default().to_owned(),
                r.body["event"]["step"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

/// Waits until `receiver` has got a message of `trigger` for `step`.
async fn wait_for(receiver: &Receiver, trigger: &str, step: &str) {
    eventually_within(ROLLOUT_TIMEOUT, &format!("{trigger} {step}"), async || {
        let got = transitions(&receiver.received());
        if got.contains(&(trigger.to_owned(), step.to_owned())) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
}

/// Waits until `receiver` got a Slack message whose text contains `text`.
async fn wait_for_text(receiver: &Receiver, text: &str) {
    eventually_within(ROLLOUT_TIMEOUT, text, async || {
        let texts: Vec<String> = receiver
            .received()
            .iter()
            .filter_map(|r| r.body["text"].as_str().map(str::to_owned))
            .collect();
        if texts.iter().any(|t| t.contains(text)) {
            Ok(())
        } else {
            Err(format!("{texts:?}"))
        }
    })
    .await;
}

/// Waits until the notifier's ledger (the ConfigMap `flotilla-notifications-state`) records the
/// delivery id of every request `receivers` got.
async fn wait_recorded(ns: &TestNamespace, receivers: &[&Receiver]) {
    let maps: Api<ConfigMap> = ns.api();
    eventually_within(ROLLOUT_TIMEOUT, "every delivery recorded", async || {
        let ids: Vec<String> = receivers
            .iter()
            .flat_map(|receiver| receiver.received())
            .filter_map(|request| request.headers.get("x-flotilla-delivery").cloned())
            .collect();
        let ledger = maps
            .get_opt("flotilla-notifications-state")
            .await
            .map_err(|error| error.to_string())?;
        let data = ledger.and_then(|map| map.data).unwrap_or_default();
        let missing: Vec<&String> = ids
            .iter()
            .filter(|id| !data.values().any(|recorded| recorded.contains(id.as_str())))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("not recorded yet: {missing:?}"))
        }
    })
    .await;
}

#[tokio::test]
async fn each_step_transition_is_notified_exactly_once_across_a_sigkill() {
    let webhook = Receiver::start(0);
    let slack = Receiver::start(0);
    let ns = setup(
        "notify-once",
        json!({
            "service.webhook.ops": format!(
                "url: {}\nheaders:\n  X-Token: $ops-token\n",
                webhook.url("/hooks/flotilla")
            ),
            "service.slack.team": "url: $slack-url\nchannel: rollouts\n",
            "template.step": "message: '{{ .applicationSet }}: step {{ .step }} of {{ .steps }} {{ trimPrefix \"on-step-\" .trigger }} at {{ trunc 7 .revision }} ({{ join \", \" .applications }})'",
            "trigger.on-step-started": "template: step\ndestinations: [webhook.ops, slack.team]",
            "trigger.on-step-completed": "template: step\ndestinations: [webhook.ops]",
        }),
        json!({"ops-token": "s3cret", "slack-url": slack.url("/services/T000/B000/XXXX")}),
    )
    .await;
    let (_remote, _daemon, commit) = repository("3s");
    let mut running = controller_process(&ns, "notifier");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(
        &appsets,
        &three_steps(&_daemon.url(&_remote.served_name()), &ns),
    )
    .await;

    // Killed while step 2's Deployment is becoming ready, once both services got step 2's start
    // and the ledger records every delivery made: nothing is being delivered then. (One killed
    // between a service's answer and its record is sent again, with the same delivery id.)
    wait_for(&webhook, "on-step-started", "2").await;
    wait_for_text(&slack, "step 2 of 3 started").await;
    wait_recorded(&ns, &[&webhook, &slack]).await;
    running.kill();
    running = controller_process(&ns, "notifier");
    wait_complete(&appsets, &commit).await;
    // Time for anything late (a repeat would come now).
    tokio::time::sleep(Duration::from_secs(3)).await;
    running.kill();

    let mut got = transitions(&webhook.received());
    got.sort();
    let expected: Vec<(String, String)> = ["on-step-completed", "on-step-started"]
        .iter()
        .flat_map(|t| ["1", "2", "3"].map(|s| ((*t).to_owned(), s.to_owned())))
        .collect();
    assert_eq!(got, expected, "one webhook message per step transition");
    for request in webhook.received() {
        assert_eq!(request.path, "/hooks/flotilla");
        assert_eq!(
            request.headers.get("x-token").map(String::as_str),
            Some("s3cret")
        );
        let id = request
            .headers
            .get("x-flotilla-delivery")
            .expect("a delivery id");
        assert_eq!(request.body["id"].as_str(), Some(id.as_str()));
        assert_eq!(
            request.body["event"]["revision"].as_str(),
            Some(commit.as_str())
        );
    }
    let texts: Vec<String> = slack
        .received()
        .iter()
        .map(|r| {
            assert_eq!(r.path, "/services/T000/B000/XXXX");
            assert_eq!(r.body["channel"], "rollouts");
            r.body["text"].as_str().expect("Slack's text").to_owned()
        })
        .collect();
    let short = &commit[..7];
    assert_eq!(
        texts,
        [
            format!("platform-stack: step 1 of 3 started at {short} (database)"),
            format!("platform-stack: step 2 of 3 started at {short} (backend)"),
            format!("platform-stack: step 3 of 3 started at {short} (frontend)"),
        ],
        "one Slack message per step start, in order"
    );
    let events: Api<Event> = ns.api();
    let sent = events
        .list(&Default::default())
        .await
        .expect("lists Events")
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("NotificationSent"))
        .count();
    assert!(sent >= 1, "deliveries are published as Events");
}

/// Also: a pass runs after every change of an Application and reads the configuration and the
/// credentials from watches of their own, so the whole rollout, with a pass after each of its
/// status writes, sends the API server no GET of a Secret, and one of a ConfigMap (the ledger,
/// read when the replica starts to lead).
#[tokio::test]
async fn a_receiver_answering_500_is_retried_until_it_accepts() {
    let flaky = Receiver::start(2);
    let ns = setup(
        "notify-retry",
        json!({
            "service.webhook.flaky": format!("url: {}\n", flaky.url("/hook")),
            "template.done": "message: 'step {{ .step }} completed'",
            "trigger.on-step-completed": "template: done\ndestinations: [webhook.flaky]",
        }),
        json!({}),
    )
    .await;
    let (_remote, daemon, commit) = repository("1s");
    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], support::git_remote::free_port()));
    let running =
        support::controller_process_with(&ns, "retry", &["--metrics-addr", &metrics.to_string()]);
    let appsets: Api<ApplicationSet> = ns.api();
    apply(
        &appsets,
        &three_steps(&daemon.url(&_remote.served_name()), &ns),
    )
    .await;
    wait_complete(&appsets, &commit).await;
    wait_for(&flaky, "on-step-completed", "3").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let scraped = support::scrape_metrics(metrics).expect("scrapes the controller");
    running.kill();
    let gets = |kind: &str| -> u64 {
        scraped
            .lines()
            .filter(|line| line.starts_with("argocd_app_k8s_request_total{"))
            .filter(|line| line.contains("verb=\"Get\""))
            .filter(|line| line.contains(&format!("resource_kind=\"{kind}\"")))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!((gets("secrets"), gets("configmaps")), (0, 1), "{scraped}");

    let received = flaky.received();
    let ids: Vec<&str> = received
        .iter()
        .map(|r| r.headers["x-flotilla-delivery"].as_str())
        .collect();
    // The first delivery is answered 500 twice and accepted on its third attempt; the others
    // once each.
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert!(ids[0] == ids[1] && ids[1] == ids[2], "{ids:?}");
    let mut distinct = ids.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{ids:?}");
    let events: Api<Event> = ns.api();
    let notes: Vec<String> = events
        .list(&Default::default())
        .await
        .expect("lists Events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("NotificationSent"))
        .filter_map(|e| e.note)
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("(attempt 3)")),
        "the retried delivery says so: {notes:?}"
    );
}

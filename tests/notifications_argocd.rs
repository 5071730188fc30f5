//! Notifications in Argo CD's format end to end: `flotilla controller` (the binary) syncs
//! Applications on cluster 1 from local git repositories, with an `argocd-notifications-cm`
//! ConfigMap and `argocd-notifications-secret` Secret, and the Applications' (and their
//! project's) `notifications.argoproj.io/subscribe.*` annotations. The receivers run on
//! loopback: HTTP services answering as the services they stand for document (a webhook, Slack's
//! Web API `{"ok": true}`, a Teams connector `1`) and a real SMTP server (Debian's aiosmtpd).

mod controller_support;
mod support;

use std::time::Duration;

use flotilla_core::api::{AppProject, Application};
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use controller_support::{commit, repository};
use support::recording_http::{Recorded, RecordingServer};
use support::smtp_server::SmtpServer;
use support::{
    ControllerProcess, TestNamespace, apply, controller_process, eventually_within, namespace,
    object,
};

/// How long a sync and its notifications may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A ConfigMap `web-config` with `version` (Healthy as soon as it exists).
fn config_map(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  version: \"{version}\"\n"
    )
}

/// The namespace, its `default` project (with `project_annotations`), the notifications
/// ConfigMap (`data`) and Secret (`secret`).
async fn setup(
    label: &str,
    data: Value,
    secret: Value,
    project_annotations: Value,
) -> TestNamespace {
    let ns = namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "default").await;
    let projects: Api<AppProject> = ns.api();
    projects
        .patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": project_annotations}})),
        )
        .await
        .expect("annotates the project");
    let map: ConfigMap =
        object(json!({"metadata": {"name": "argocd-notifications-cm"}, "data": data}));
    apply(&ns.api::<ConfigMap>(), &map).await;
    let secret: Secret =
        object(json!({"metadata": {"name": "argocd-notifications-secret"}, "stringData": secret}));
    apply(&ns.api::<Secret>(), &secret).await;
    ns
}

/// The Application `web` syncing `apps/web` of the repository at `url` automatically into the
/// namespace, with `annotations`.
fn web(ns: &TestNamespace, url: &str, annotations: Value) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "annotations": annotations},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": "apps/web"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }))
}

/// A repository with `files` committed, a controller `identity`, and the Application `web` (with
/// `annotations`) syncing from it; the repository, its commit, the controller and the
/// Applications' API.
async fn run_web(
    ns: &TestNamespace,
    files: &[(&str, &str)],
    annotations: Value,
    identity: &str,
) -> (
    tempfile::TempDir,
    String,
    ControllerProcess,
    Api<Application>,
) {
    let repo = repository();
    let revision = commit(repo.path(), files, "first");
    let url = format!("file://{}", repo.path().display());
    let running = controller_process(ns, identity);
    let apps: Api<Application> = ns.api();
    apply(&apps, &web(ns, &url, annotations)).await;
    (repo, revision, running, apps)
}

/// Waits until `server` has got `count` requests; they.
async fn received(server: &RecordingServer, count: usize, what: &str) -> Vec<Recorded> {
    eventually_within(TIMEOUT, what, async || {
        let got = server.received();
        if got.len() >= count {
            Ok(got)
        } else {
            Err(format!("{got:#?}"))
        }
    })
    .await
}

/// The notes of the Events of `reason` in the namespace.
async fn notes(ns: &TestNamespace, reason: &str) -> Vec<String> {
    let events: Api<Event> = ns.api();
    events
        .list(&Default::default())
        .await
        .expect("lists Events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.note)
        .collect()
}

#[tokio::test]
async fn on_deployed_posts_to_a_webhook_once_per_deploy_and_not_again_after_a_restart() {
    let hook = RecordingServer::start(|_| (200, "accepted".to_owned()));
    let ns = setup(
        "notify-argo-deployed",
        json!({
            "service.webhook.ci": format!(
                "url: {}\nheaders:\n- name: X-Token\n  value: $ci-token\nbasicAuth:\n  username: flotilla\n  password: $ci-password\n",
                hook.url("/hooks")
            ),
            "template.app-deployed": "message: '{{.app.metadata.name}} deployed'\nwebhook:\n  ci:\n    method: POST\n    path: /deployed/{{.app.metadata.name}}\n    body: '{\"app\": \"{{.app.metadata.name}}\", \"revision\": \"{{.app.status.operationState.syncResult.revision}}\", \"via\": \"{{.serviceType}}\"}'\n",
        }),
        json!({"ci-token": "t0ken", "ci-password": "s3cret"}),
        json!({}),
    )
    .await;
    let (repo, first, running, apps) = run_web(
        &ns,
        &[("apps/web/cm.yaml", &config_map("1"))],
        json!({"notifications.argoproj.io/subscribe.on-deployed.ci": ""}),
        "argo-notifier",
    )
    .await;
    let got = received(&hook, 1, "the first deploy's post").await;
    let second = commit(repo.path(), &[("apps/web/cm.yaml", &config_map("2"))], "2");
    let got_two = received(&hook, 2, "the second deploy's post").await;
    assert_eq!(got.len(), 1, "one post for the first deploy: {got:#?}");
    // The state is on the Application: the second revision is recorded there.
    eventually_within(TIMEOUT, "the second deploy recorded", async || {
        let app = apps.get("web").await.map_err(|e| e.to_string())?;
        let notified = app
            .metadata
            .annotations
            .unwrap_or_default()
            .get("notified.notifications.argoproj.io")
            .cloned()
            .unwrap_or_default();
        if notified.contains(&format!("{second}:on-deployed")) {
            Ok(())
        } else {
            Err(notified)
        }
    })
    .await;
    drop(running);
    let running = controller_process(&ns, "argo-notifier-2");
    // Once the new controller manages the Applications, a change of the Application makes its
    // notifier plan it again; then it has time to post anything it would.
    eventually_within(TIMEOUT, "the new controller to start", async || {
        let log =
            std::fs::read_to_string(support::controller_log_path(&ns.name, "argo-notifier-2"))
                .unwrap_or_default();
        if log.contains("managing the Applications") {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
    apps.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"example.com/touched": "yes"}}})),
    )
    .await
    .expect("annotates the Application");
    tokio::time::sleep(Duration::from_secs(4)).await;
    drop(running);

    let all = hook.received();
    assert_eq!(
        all.len(),
        2,
        "one post per deploy, none after the restart: {all:#?}"
    );
    for (request, revision) in all.iter().zip([&first, &second]) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/hooks/deployed/web");
        assert_eq!(
            request.headers.get("x-token").map(String::as_str),
            Some("t0ken")
        );
        assert_eq!(
            request.headers.get("authorization").map(String::as_str),
            Some("Basic ZmxvdGlsbGE6czNjcmV0"),
            "basic authentication flotilla:s3cret"
        );
        assert_eq!(
            request.json(),
            json!({"app": "web", "revision": revision, "via": "webhook"})
        );
    }
    drop(got_two);
    let sent = notes(&ns, "NotificationSent").await;
    assert!(
        sent.iter().any(|n| n.contains("on-deployed sent to ci:")),
        "{sent:?}"
    );
}

#[tokio::test]
async fn a_failed_sync_is_emailed_and_posted_to_slack_and_teams_in_their_shapes() {
    let smtp = SmtpServer::start();
    let slack = RecordingServer::start(|_| {
        (
            200,
            r#"{"ok":true,"channel":"C0123","ts":"1700000000.000100"}"#.to_owned(),
        )
    });
    let teams = RecordingServer::start(|_| (200, "1".to_owned()));
    let ns = setup(
        "notify-argo-failed",
        json!({
            "service.email.ops": format!("host: 127.0.0.1\nport: {}\nfrom: flotilla@example.com\n", smtp.port),
            "service.slack": format!("token: $slack-token\napiURL: {}\n", slack.url("/api")),
            "service.teams": format!("recipientUrls:\n  platform: {}\n", teams.url("/webhookb2/abc")),
            "context": "flotillaUrl: https://flotilla.example.com\n",
            "template.app-sync-failed": concat!(
                "message: 'Sync of {{.app.metadata.name}} failed: {{.app.status.operationState.message}}'\n",
                "email:\n  subject: 'Failed to sync {{.app.metadata.name}}'\n",
                "slack:\n  attachments: '[{\"title\": \"{{.app.metadata.name}}\", \"title_link\": \"{{.context.flotillaUrl}}/applications/{{.app.metadata.name}}\", \"color\": \"#E96D76\"}]'\n",
                "teams:\n  title: 'Failed to sync {{.app.metadata.name}}'\n  themeColor: '#FF0000'\n  facts: '[{\"name\": \"Sync Status\", \"value\": \"{{.app.status.sync.status}}\"}]'\n",
            ),
        }),
        json!({"slack-token": "xoxb-test"}),
        json!({"notifications.argoproj.io/subscribe.on-sync-failed.slack": "deploys"}),
    )
    .await;
    // A ConfigMap whose data key the API server refuses: the sync fails.
    let broken =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  not a key: x\n";
    let (_repo, _, running, apps) = run_web(
        &ns,
        &[("apps/web/cm.yaml", broken)],
        json!({
            "notifications.argoproj.io/subscribe.on-sync-failed.ops": "oncall@example.com",
            "notifications.argoproj.io/subscribe.on-sync-failed.teams": "platform",
        }),
        "argo-failed",
    )
    .await;
    let messages = eventually_within(TIMEOUT, "the email", async || {
        let messages = smtp.messages();
        if messages.is_empty() {
            Err("none yet".to_owned())
        } else {
            Ok(messages)
        }
    })
    .await;
    let slack_got = received(&slack, 1, "the Slack message").await;
    let teams_got = received(&teams, 1, "the Teams card").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(running);
    let app = apps.get("web").await.unwrap();
    let operation = app.status.unwrap().operation_state.expect("an operation");
    assert!(matches!(
        operation.phase,
        OperationPhase::Failed | OperationPhase::Error
    ));

    assert_eq!(smtp.messages().len(), 1, "one email: {messages:#?}");
    let email = &messages[0];
    assert!(email.contains("Subject: Failed to sync web"), "{email}");
    assert!(email.contains("To: oncall@example.com"), "{email}");
    assert!(email.contains("From: flotilla@example.com"), "{email}");
    assert!(email.contains("Sync of web failed: "), "{email}");

    assert_eq!(slack.received().len(), 1);
    let posted = &slack_got[0];
    assert_eq!(
        (posted.method.as_str(), posted.path.as_str()),
        ("POST", "/api/chat.postMessage")
    );
    assert_eq!(
        posted.headers.get("authorization").map(String::as_str),
        Some("Bearer xoxb-test")
    );
    let body = posted.json();
    assert_eq!(
        body["channel"], "deploys",
        "the project's subscription: {body}"
    );
    assert!(
        body["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Sync of web failed: "),
        "{body}"
    );
    assert_eq!(
        body["attachments"],
        json!([{"title": "web", "title_link": "https://flotilla.example.com/applications/web", "color": "#E96D76"}])
    );

    assert_eq!(teams.received().len(), 1);
    let card = teams_got[0].json();
    assert_eq!(teams_got[0].path, "/webhookb2/abc");
    assert_eq!(card["@type"], "MessageCard");
    assert_eq!(card["title"], "Failed to sync web");
    assert_eq!(card["themeColor"], "#FF0000");
    assert_eq!(
        card["sections"],
        json!([{"facts": [{"name": "Sync Status", "value": app_sync_status(&card)}]}])
    );
    assert!(
        card["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Sync of web failed: "),
        "{card}"
    );
}

/// The sync status the card's fact shows (whatever the Application's was when rendered).
fn app_sync_status(card: &Value) -> Value {
    card["sections"][0]["facts"][0]["value"].clone()
}

/// A namespace whose `argocd-notifications-cm` has a trigger whose `when` cannot be evaluated.
async fn bad_trigger_namespace(label: &str) -> TestNamespace {
    setup(
        label,
        json!({
            "service.webhook.ci": "url: http://127.0.0.1:9/\n",
            "template.t": "message: x\n",
            "trigger.on-bad": "- when: app.metadata.name matches '^web'\n  send: [t]\n",
        }),
        json!({}),
        json!({}),
    )
    .await
}

/// The notes of the NotificationFailed Events of `ns`, once there is one.
async fn failures_reported(ns: &TestNamespace) -> Vec<String> {
    eventually_within(TIMEOUT, "the Event naming the key", async || {
        let found = notes(ns, "NotificationFailed").await;
        if found.is_empty() {
            Err("none yet".to_owned())
        } else {
            Ok(found)
        }
    })
    .await
}

/// Whether one of `notes` names the bad trigger and where its expression fails.
fn names_the_bad_trigger(notes: &[String]) -> bool {
    notes.iter().any(|n| {
        n.starts_with(
            "ConfigMap argocd-notifications-cm: key trigger.on-bad: [0].when: \"app.metadata.name matches '^web'\" at character 19",
        )
    })
}

#[tokio::test]
async fn a_bad_trigger_expression_is_reported_by_its_key() {
    let ns = bad_trigger_namespace("notify-argo-bad").await;
    let running = controller_process(&ns, "argo-bad");
    let reported = failures_reported(&ns).await;
    drop(running);
    assert!(names_the_bad_trigger(&reported), "{reported:?}");
}

#[tokio::test]
async fn a_report_whose_event_is_refused_is_published_once_the_api_server_takes_it() {
    let ns = bad_trigger_namespace("notify-argo-refused").await;
    // The API server refuses the notifier's Events at first, as it refuses a replica's writes
    // before its Lease is held, or an admission policy does.
    let refusal = support::admission::Refusal::install(
        &ns,
        "refuse-notification-events",
        json!([{
            "apiGroups": ["events.k8s.io"], "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"], "resources": ["events"],
        }]),
        "object.reason != 'NotificationFailed'",
        "NotificationFailed refused by the test's policy",
    )
    .await;
    let events: Api<Event> = ns.api();
    eventually_within(TIMEOUT, "the policy in force", async || {
        let probe: Event = object(json!({
            "metadata": {"generateName": "probe-"},
            "eventTime": Timestamp::now().to_string(),
            "reportingController": "test", "reportingInstance": "test",
            "action": "Probe", "reason": "NotificationFailed", "type": "Warning",
            "regarding": {
                "apiVersion": "v1", "kind": "ConfigMap",
                "name": "argocd-notifications-cm", "namespace": ns.name,
            },
        }));
        match events.create(&PostParams::default(), &probe).await {
            // Refused by the policy, not for another reason (a slow API server's timeout).
            Err(error) if error.to_string().contains("refused by the test's policy") => Ok(()),
            Err(error) => Err(format!("refused otherwise: {error}")),
            Ok(admitted) => {
                let name = admitted.metadata.name.unwrap_or_default();
                let _ = events.delete(&name, &Default::default()).await;
                Err("still admitted".to_owned())
            }
        }
    })
    .await;
    let running = controller_process(&ns, "argo-refused");
    eventually_within(TIMEOUT, "the refused Event in the log", async || {
        let text = std::fs::read_to_string(running.log()).map_err(|e| e.to_string())?;
        text.contains("NotificationFailed refused by the test's policy")
            .then_some(())
            .ok_or_else(|| "not refused yet".to_owned())
    })
    .await;
    assert!(notes(&ns, "NotificationFailed").await.is_empty());
    refusal.remove().await;
    let reported = failures_reported(&ns).await;
    drop(running);
    assert!(names_the_bad_trigger(&reported), "{reported:?}");
}

//! The git webhook receiver end to end: `flotilla controller --webhook-addr` runs against
//! cluster 1 with git polling, Application resyncs and fetch reuse all set to an hour, so only a
//! webhook can explain a new commit being seen. Repositories are bare repositories served by
//! `git http-backend` on loopback; webhooks are the push payloads each provider documents
//! (`tests/fixtures/webhooks/`), signed as each provider signs them with the secrets of the
//! namespace's `argocd-secret`. A push refreshes only what follows a ref it moved. Pull-request
//! events of GitHub, GitLab, Gitea and Bitbucket Server (their documented payloads, signed alike)
//! refresh the pullRequest ApplicationSets listing that repository from the loopback fakes of
//! those APIs (`support::scm_fake`), which otherwise ask again only after an hour.

mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flotilla::webhook::handler::MAX_BODY;
use flotilla::webhook::signature::sign_sha256;
use flotilla_core::api::REFRESH_ANNOTATION;
use flotilla_core::api::application_set_status::{
    ConditionStatus, ConditionType, RolloutApplicationState as State,
};
use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::git_remote::{GitHttp, Remote};
use support::scm_fake::{FakeScm, Kind, Pull, pull_request_entry};
use support::three_step_appset::three_steps;
use support::webhook_payload::{fixture, payload};
use support::{TestNamespace, apply, eventually, eventually_within, namespace, object};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longer than any test: nothing but a webhook makes the controller look at git again.
const NEVER: &str = "1h";
/// The bound a webhook-triggered refresh must meet: an order of magnitude above what it takes
/// (BENCHMARKS.md), far below the hour of polling.
const WEBHOOK_BOUND: Duration = Duration::from_secs(10);

const GITHUB_SECRET: &str = "github webhook secret";
const GITLAB_TOKEN: &str = "gitlab-token";
const BITBUCKET_SECRET: &str = "bitbucket cloud secret";
const BITBUCKET_SERVER_SECRET: &str = "bitbucket server secret";
const GOGS_SECRET: &str = "gogs and gitea secret";

/// `flotilla controller` for one namespace on cluster 1 with a webhook listener and a metrics
/// endpoint, logging to the control plane's logs.
struct Controller {
    child: Child,
    namespace: String,
    identity: String,
    webhook: std::net::SocketAddr,
    metrics: std::net::SocketAddr,
    _cache: tempfile::TempDir,
}

fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

impl Controller {
    fn start(ns: &TestNamespace, identity: &str) -> Self {
        let log = support::controller_log(&ns.name, identity);
        let cache = tempfile::tempdir().expect("a repository cache directory");
        let (webhook, metrics) = (free_address(), free_address());
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args([
                "controller",
                "--namespace",
                &ns.name,
                "--identity",
                identity,
            ])
            .args([
                "--git-poll",
                NEVER,
                "--app-resync",
                NEVER,
                "--repo-refresh",
                NEVER,
            ])
            .args(["--webhook-addr", &webhook.to_string()])
            .args(["--metrics-addr", &metrics.to_string()])
            .arg("--repo-cache")
            .arg(cache.path())
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path(1))
            .env("RUST_LOG", "info,flotilla::controller=debug")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starts flotilla controller");
        support::git_remote::wait_for_port(webhook.port(), "the webhook listener");
        Self {
            child,
            namespace: ns.name.clone(),
            identity: identity.to_owned(),
            webhook,
            metrics,
            _cache: cache,
        }
    }

    /// The metrics, as scraped.
    async fn scrape(&self) -> String {
        let (_, scraped) = exchange(
            self.metrics,
            "GET /metrics HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\n\r\n".into(),
            b"",
        )
        .await;
        scraped
    }

    /// The sum of the samples of `metric` whose labels contain `with`.
    async fn total(&self, metric: &str, with: &str) -> u64 {
        self.scrape()
            .await
            .lines()
            .filter_map(|line| line.strip_prefix(metric)?.strip_prefix('{'))
            .filter(|line| line.contains(with))
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// `flotilla_webhook_requests_total` by (provider, result).
    async fn webhook_counts(&self) -> BTreeMap<(String, String), u64> {
        self.scrape()
            .await
            .lines()
            .filter_map(|line| line.strip_prefix("flotilla_webhook_requests_total{"))
            .filter_map(|line| {
                let (labels, count) = line.split_once("} ")?;
                let label = |name: &str| {
                    labels
                        .split(',')
                        .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                        .map(|v| v.trim_end_matches('"').to_owned())
                };
                Some(((label("provider")?, label("result")?), count.parse().ok()?))
            })
            .collect()
    }
}

/// The count of `provider`'s requests ending in `result` in `counts` (zero when none).
fn counted(counts: &BTreeMap<(String, String), u64>, provider: &str, result: &str) -> u64 {
    counts
        .get(&(provider.to_owned(), result.to_owned()))
        .copied()
        .unwrap_or_default()
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let log = support::controller_log_path(&self.namespace, &self.identity);
        support::print_log_tail_if_panicking(&log, 80);
    }
}

/// Sends `head` (request line and headers, ending with the empty line) and `body` to `address`;
/// returns the status code and the response's text.
async fn exchange(address: std::net::SocketAddr, head: String, body: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the listener accepts connections");
    stream
        .write_all(head.as_bytes())
        .await
        .expect("sends the head");
    stream.write_all(body).await.expect("sends the body");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("reads");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {response}"));
    (status, response)
}

/// POSTs `body` to the controller's `/api/webhook` with `headers`.
async fn post(controller: &Controller, headers: &[(&str, String)], body: &[u8]) -> (u16, String) {
    let mut head = format!(
        "POST /api/webhook HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    exchange(controller.webhook, head, body).await
}

/// The headers each provider sends with a push `body`, signed or with its token.
fn provider_headers(provider: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    let event = match provider {
        "gitlab" => "Push Hook",
        "bitbucket" => "repo:push",
        "bitbucket-server" => "repo:refs_changed",
        _ => "push",
    };
    event_headers(provider, event, body)
}

/// The headers `provider` sends with the `event` (its event header's value) of `body`, signed or
/// with its token.
fn event_headers(provider: &str, event: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    let sign = |secret: &str, prefix: &str| sign_sha256(secret.as_bytes(), body, prefix);
    match provider {
        "github" => vec![
            ("x-github-event", event.into()),
            (
                "x-github-delivery",
                "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
            ),
            ("x-hub-signature-256", sign(GITHUB_SECRET, "sha256=")),
        ],
        "gitlab" => vec![
            ("x-gitlab-event", event.into()),
            ("x-gitlab-token", GITLAB_TOKEN.into()),
        ],
        "bitbucket" => vec![
            ("x-event-key", event.into()),
            (
                "x-hook-uuid",
                "{2d8a5fd7-6a56-4a5e-9b8a-5c3a6d2b9f10}".into(),
            ),
            (
                "x-request-uuid",
                "{afb6f7c2-1d3a-4b5e-8c9d-0e1f2a3b4c5d}".into(),
            ),
            ("x-hub-signature", sign(BITBUCKET_SECRET, "sha256=")),
        ],
        "bitbucket-server" => vec![
            ("x-event-key", event.into()),
            (
                "x-request-id",
                "a9a4f7c0-2b5a-4f3e-9d1c-7e8f9a0b1c2d".into(),
            ),
            ("x-hub-signature", sign(BITBUCKET_SERVER_SECRET, "sha256=")),
        ],
        // Gitea and Forgejo send Gogs' and GitHub's headers too.
        "gitea" => vec![
            ("x-gitea-event", event.into()),
            ("x-gogs-event", event.into()),
            ("x-github-event", event.into()),
            ("x-gitea-signature", sign(GOGS_SECRET, "")),
        ],
        "forgejo" => vec![
            ("x-forgejo-event", event.into()),
            ("x-gitea-event", event.into()),
            ("x-forgejo-signature", sign(GOGS_SECRET, "")),
        ],
        "gogs" => vec![
            ("x-gogs-event", event.into()),
            ("x-gogs-signature", sign(GOGS_SECRET, "")),
        ],
        other => panic!("no provider {other}"),
    }
}

/// The namespace (CRDs, the AppProject `platform`, the webhook secrets in `argocd-secret`) and
/// a repository served over HTTP whose `component/` directories each hold a ConfigMap carrying
/// `version`.
async fn setup(label: &str) -> (TestNamespace, Remote, GitHttp) {
    let ns = namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let secret: Secret = object(json!({
        "metadata": {"name": "argocd-secret"},
        "stringData": {
            "webhook.github.secret": GITHUB_SECRET,
            "webhook.gitlab.secret": GITLAB_TOKEN,
            "webhook.bitbucket.secret": BITBUCKET_SECRET,
            "webhook.bitbucketserver.secret": BITBUCKET_SERVER_SECRET,
            "webhook.gogs.secret": GOGS_SECRET,
        }
    }));
    apply(&ns.api::<Secret>(), &secret).await;
    let remote = Remote::new("platform");
    let server = GitHttp::start(remote.exported());
    (ns, remote, server)
}

/// Writes `component/config.json`: a ConfigMap `<component>-config` with `version`.
fn component(remote: &Remote, component: &str, version: &str) {
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{component}-config")},
        "data": {"version": version}
    });
    remote.write(&format!("{component}/config.json"), &config.to_string());
}

/// An Application `name` syncing `path` of `url` (branch main) automatically into the namespace.
fn application(ns: &TestNamespace, name: &str, url: &str, path: &str) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "platform",
            "source": {"repoURL": url, "targetRevision": "main", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }))
}

/// The revision `name` was last synced to, once Synced.
async fn synced_revision(api: &Api<Application>, name: &str) -> Option<String> {
    let app = api.get(name).await.ok()?;
    let sync = app.status?.sync?;
    (sync.status.as_str() == "Synced").then_some(sync.revision)
}

/// Waits until `name` is Synced to `revision`, within `timeout`.
async fn wait_synced(api: &Api<Application>, name: &str, revision: &str, timeout: Duration) {
    eventually_within(
        timeout,
        &format!("{name} synced to {revision}"),
        async || match synced_revision(api, name).await {
            Some(synced) if synced == revision => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
}

#[tokio::test]
async fn each_providers_documented_push_refreshes_the_applications_of_its_repository() {
    let (ns, remote, server) = setup("webhook-providers").await;
    component(&remote, "database", "v0");
    let mut before = remote.push("v0");
    let url = server.url("platform.git");
    let http_url = url.trim_end_matches(".git").to_owned();
    let controller = Controller::start(&ns, "providers");
    let apps: Api<Application> = ns.api();
    apply(&apps, &application(&ns, "database", &url, "database")).await;
    wait_synced(&apps, "database", &before, support::TIMEOUT).await;

    let providers = [
        ("github", "github.json"),
        ("gitlab", "gitlab.json"),
        ("bitbucket", "bitbucket.json"),
        ("bitbucket-server", "bitbucket-server.json"),
        ("gitea", "gitea.json"),
        ("forgejo", "gitea.json"),
        ("gogs", "gogs.json"),
    ];
    for (version, (provider, file)) in providers.iter().enumerate() {
        component(&remote, "database", &format!("v{}", version + 1));
        let after = remote.push(&format!("v{} for {provider}", version + 1));
        // The commit is not seen without the webhook (nothing polls within the hour).
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            synced_revision(&apps, "database").await,
            Some(before.clone()),
            "{provider}"
        );
        let body = payload(file, &http_url, &before, &after);
        let (status, response) = post(&controller, &provider_headers(provider, &body), &body).await;
        assert_eq!(status, 200, "{provider}: {response}");
        assert!(
            response.contains("refreshing 1 Application(s)"),
            "{provider}: {response}"
        );
        wait_synced(&apps, "database", &after, WEBHOOK_BOUND).await;
        before = after;
    }
    let counts = controller.webhook_counts().await;
    for (provider, count) in [
        ("github", 1),
        ("gitlab", 1),
        ("bitbucket", 1),
        ("bitbucketserver", 1),
        ("gitea", 2),
        ("gogs", 1),
    ] {
        assert_eq!(
            counts.get(&(provider.to_owned(), "refreshed".to_owned())),
            Some(&count),
            "{provider}: {counts:?}"
        );
    }
}

/// A refused request: what it is, its headers and body, and the status it gets.
type Refusal = (&'static str, Vec<(&'static str, String)>, Vec<u8>, u16);

#[tokio::test]
async fn refused_webhooks_are_counted_and_refresh_nothing() {
    let (ns, remote, server) = setup("webhook-refused").await;
    component(&remote, "database", "v1");
    let v1 = remote.push("v1");
    let url = server.url("platform.git");
    let http_url = url.trim_end_matches(".git").to_owned();
    let controller = Controller::start(&ns, "refused");
    let apps: Api<Application> = ns.api();
    apply(&apps, &application(&ns, "database", &url, "database")).await;
    wait_synced(&apps, "database", &v1, support::TIMEOUT).await;
    component(&remote, "database", "v2");
    let v2 = remote.push("v2");
    let body = payload("github.json", &http_url, &v1, &v2);
    let signed = sign_sha256(GITHUB_SECRET.as_bytes(), &body, "sha256=");
    let push = ("x-github-event", "push".to_owned());

    let wrong = sign_sha256(b"not the secret", &body, "sha256=");
    let refusals: [Refusal; 6] = [
        (
            "wrong signature",
            vec![push.clone(), ("x-hub-signature-256", wrong)],
            body.clone(),
            401,
        ),
        ("unsigned", vec![push.clone()], body.clone(), 401),
        (
            "signature of another body",
            vec![push.clone(), ("x-hub-signature-256", signed.clone())],
            payload("github.json", &http_url, &v1, &v1),
            401,
        ),
        (
            "unknown event",
            vec![
                ("x-github-event", "issues".into()),
                ("x-hub-signature-256", signed.clone()),
            ],
            body.clone(),
            400,
        ),
        ("no provider", vec![], body.clone(), 400),
        (
            "wrong GitLab token",
            vec![
                ("x-gitlab-event", "Push Hook".into()),
                ("x-gitlab-token", "guess".into()),
            ],
            payload("gitlab.json", &http_url, &v1, &v2),
            401,
        ),
    ];
    for (what, headers, body, expected) in &refusals {
        let (status, response) = post(&controller, headers, body).await;
        assert_eq!(status, *expected, "{what}: {response}");
    }
    // A replayed push padded past 1 MiB, correctly signed: refused by its declared length before
    // its body is read (the client waits for `100 Continue`, which never comes).
    let mut oversized = body.clone();
    oversized.resize(MAX_BODY + 1, b' ');
    let head = format!(
        "POST /api/webhook HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\nexpect: 100-continue\r\nx-github-event: push\r\nx-hub-signature-256: {}\r\n\r\n",
        oversized.len(),
        sign_sha256(GITHUB_SECRET.as_bytes(), &oversized, "sha256=")
    );
    let (status, response) = exchange(controller.webhook, head, b"").await;
    assert_eq!(status, 413, "{response}");
    // A GET is not a webhook.
    let (status, _) = exchange(
        controller.webhook,
        "GET /api/webhook HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".into(),
        b"",
    )
    .await;
    assert_eq!(status, 405);

    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(synced_revision(&apps, "database").await, Some(v1.clone()));
    let app = apps.get("database").await.expect("reads the Application");
    assert!(
        !app.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("flotilla.dev/refresh"),
        "nothing was refreshed"
    );
    let counts = controller.webhook_counts().await;
    let count = |provider: &str, result: &str| counted(&counts, provider, result);
    assert_eq!(count("github", "unauthorized"), 3, "{counts:?}");
    assert_eq!(count("github", "unknown_event"), 1, "{counts:?}");
    assert_eq!(count("github", "too_large"), 1, "{counts:?}");
    assert_eq!(count("unknown", "unknown_provider"), 1, "{counts:?}");
    assert_eq!(count("gitlab", "unauthorized"), 1, "{counts:?}");
    assert_eq!(count("github", "refreshed"), 0, "{counts:?}");

    // The same push, correctly signed, refreshes it: the refusals above were the only reason.
    let (status, response) =
        post(&controller, &[push, ("x-hub-signature-256", signed)], &body).await;
    assert_eq!(status, 200, "{response}");
    wait_synced(&apps, "database", &v2, WEBHOOK_BOUND).await;
}

/// Whether every Application of the rollout is Healthy at `revision` and the rollout is over.
/// One line per Application: its sync, health and operation, for a failure's message.
async fn application_lines(apps: &Api<Application>) -> String {
    let Ok(listed) = apps.list(&Default::default()).await else {
        return "(not listed)".into();
    };
    listed
        .items
        .iter()
        .map(|app| {
            let status = app.status.clone().unwrap_or_default();
            format!(
                "{} rv {:?}: sync {:?} health {:?} operation {:?} requested {:?}",
                app.name_any(),
                app.metadata.resource_version,
                status.sync,
                status.health,
                status.operation_state,
                app.spec.operation
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn complete_at(appset: &ApplicationSet, revision: &str) -> bool {
    let Some(status) = &appset.status else {
        return false;
    };
    let over = status.conditions.iter().any(|c| {
        c.type_ == ConditionType::RolloutProgressing && c.status == ConditionStatus::False
    });
    over && status.application_status.len() == 3
        && status.application_status.iter().all(|entry| {
            entry.status == State::Healthy && entry.target_revisions == [revision.to_owned()]
        })
}

/// As Argo CD: a push refreshes only what follows a ref it moved. A verified push to a branch
/// the Application does not follow refreshes nothing, even with a new commit on the branch it
/// does follow; the same push announced for that branch then refreshes it.
#[tokio::test]
async fn a_push_to_a_branch_no_application_follows_refreshes_nothing() {
    let (ns, remote, server) = setup("webhook-refs").await;
    component(&remote, "database", "v1");
    let v1 = remote.push("v1");
    let url = server.url("platform.git");
    let http_url = url.trim_end_matches(".git").to_owned();
    let controller = Controller::start(&ns, "refs");
    let apps: Api<Application> = ns.api();
    apply(&apps, &application(&ns, "database", &url, "database")).await;
    wait_synced(&apps, "database", &v1, support::TIMEOUT).await;
    component(&remote, "database", "v2");
    let v2 = remote.push("v2");
    let to_main = payload("github.json", &http_url, &v1, &v2);
    let to_feature = String::from_utf8(to_main.clone())
        .expect("UTF-8")
        .replace(
            r#""ref": "refs/heads/main""#,
            r#""ref": "refs/heads/feature""#,
        )
        .into_bytes();
    assert_ne!(to_feature, to_main);
    let fetch = r#"request_type="fetch""#;
    let fetches = controller.total("argocd_git_request_total", fetch).await;
    let (status, response) = post(
        &controller,
        &provider_headers("github", &to_feature),
        &to_feature,
    )
    .await;
    assert_eq!(status, 200, "{response}");
    assert!(
        response.contains("refreshed 0 ApplicationSet(s); refreshing 0 Application(s)"),
        "{response}"
    );
    // A reconcile now resolves `main` as the cache holds it: the push left the cache as it was.
    let reconciles = || controller.total("flotilla_application_reconciles_total", "");
    let before = reconciles().await;
    let poke = json!({"metadata": {"labels": {"poked": "true"}}});
    apps.patch("database", &PatchParams::default(), &Patch::Merge(poke))
        .await
        .expect("labels the Application");
    eventually(
        "the labelled Application reconciled",
        async || match reconciles().await {
            now if now > before => Ok(()),
            now => Err(format!("{now} reconciles, {before} before the label")),
        },
    )
    .await;
    assert_eq!(
        controller.total("argocd_git_request_total", fetch).await,
        fetches,
        "no fetch after a push to a branch nothing follows"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(synced_revision(&apps, "database").await, Some(v1.clone()));
    let annotations = apps
        .get("database")
        .await
        .expect("reads the Application")
        .metadata
        .annotations
        .unwrap_or_default();
    assert!(
        !annotations.contains_key(REFRESH_ANNOTATION),
        "{annotations:?}"
    );
    let (status, response) =
        post(&controller, &provider_headers("github", &to_main), &to_main).await;
    assert_eq!(status, 200, "{response}");
    assert!(
        response.contains("refreshing 1 Application(s)"),
        "{response}"
    );
    wait_synced(&apps, "database", &v2, WEBHOOK_BOUND).await;
}

/// A push is answered once its ApplicationSets are annotated; its Applications are annotated
/// after the answer (a push moving thousands would outlast a git host's wait), each whatever
/// became of the others, and a write the API server refuses is logged and counted, not
/// answered.
#[tokio::test]
async fn a_push_is_answered_before_its_applications_are_annotated_and_a_refused_one_is_counted() {
    let (ns, remote, server) = setup("webhook-queue").await;
    component(&remote, "database", "v1");
    let v1 = remote.push("v1");
    let url = server.url("platform.git");
    let http_url = url.trim_end_matches(".git").to_owned();
    let controller = Controller::start(&ns, "queue");
    let apps: Api<Application> = ns.api();
    apply(&apps, &application(&ns, "database", &url, "database")).await;
    wait_synced(&apps, "database", &v1, support::TIMEOUT).await;
    let refusal = support::admission::Refusal::install(
        &ns,
        "refuse-refresh",
        json!([{
            "apiGroups": ["flotilla.dev"], "apiVersions": ["*"],
            "operations": ["UPDATE"], "resources": ["applications"],
        }]),
        &format!(
            "!has(object.metadata.annotations) || !('{REFRESH_ANNOTATION}' in object.metadata.annotations)"
        ),
        "refresh refused by the test's policy",
    )
    .await;
    // The annotation the refresh writes, in a dry run: whether the API server admits it now.
    let probe = async || {
        let annotated = json!({"metadata": {"annotations": {REFRESH_ANNOTATION: "probe"}}});
        let dry_run = PatchParams {
            dry_run: true,
            ..PatchParams::default()
        };
        apps.patch("database", &dry_run, &Patch::Merge(&annotated))
            .await
    };
    eventually_within(
        support::TIMEOUT,
        "the policy in force",
        async || match probe().await {
            Err(error) if error.to_string().contains("refused by the test's policy") => Ok(()),
            Err(error) => Err(format!("refused otherwise: {error}")),
            Ok(_) => Err("still admitted".to_owned()),
        },
    )
    .await;
    component(&remote, "database", "v2");
    let v2 = remote.push("v2");
    let body = payload("github.json", &http_url, &v1, &v2);
    let (status, response) = post(&controller, &provider_headers("github", &body), &body).await;
    assert_eq!(status, 200, "{response}");
    assert!(
        response.contains("refreshed 0 ApplicationSet(s); refreshing 1 Application(s)"),
        "{response}"
    );
    let failed = "flotilla_webhook_application_refreshes_total{result=\"failed\"} 1";
    eventually_within(support::TIMEOUT, "the refused write counted", async || {
        let scraped = controller.scrape().await;
        scraped.contains(failed).then_some(()).ok_or_else(|| {
            scraped
                .lines()
                .filter(|l| l.contains("refreshes"))
                .collect()
        })
    })
    .await;
    let log = std::fs::read_to_string(support::controller_log_path(&ns.name, "queue"))
        .expect("reads the controller's log");
    assert!(
        log.contains(&format!(
            "webhook refresh: annotating Application {}/database: ",
            ns.name
        )),
        "{log}"
    );
    refusal.remove().await;
    eventually_within(support::TIMEOUT, "the policy gone", async || {
        probe().await.map(drop).map_err(|error| error.to_string())
    })
    .await;
    // Admitted, the next push's refresh reaches it.
    let (status, response) = post(&controller, &provider_headers("github", &body), &body).await;
    assert_eq!(status, 200, "{response}");
    wait_synced(&apps, "database", &v2, WEBHOOK_BOUND).await;
    assert!(
        controller
            .scrape()
            .await
            .contains("flotilla_webhook_application_refreshes_total{result=\"annotated\"} 1"),
    );
}

#[tokio::test]
async fn a_push_announced_by_webhook_starts_the_rollout_within_a_second() {
    let (ns, remote, server) = setup("webhook-rollout").await;
    for name in ["database", "backend", "frontend"] {
        component(&remote, name, "v1");
    }
    let v1 = remote.push("v1");
    let url = server.url("platform.git");
    let http_url = url.trim_end_matches(".git").to_owned();
    let controller = Controller::start(&ns, "rollout");
    let appsets: Api<ApplicationSet> = ns.api();
    let apps: Api<Application> = ns.api();
    apply(&appsets, &three_steps(&url, &ns)).await;
    let rolled_out = |revision: String| {
        let (appsets, apps) = (appsets.clone(), apps.clone());
        async move {
            eventually_within(
                Duration::from_secs(120),
                &format!("the rollout of {revision}"),
                async || {
                    let appset = appsets
                        .get("platform-stack")
                        .await
                        .map_err(|e| e.to_string())?;
                    if complete_at(&appset, &revision) {
                        Ok(())
                    } else {
                        Err(format!(
                            "{:#?}\nApplications:\n{}",
                            appset.status,
                            application_lines(&apps).await
                        ))
                    }
                },
            )
            .await;
        }
    };
    rolled_out(v1.clone()).await;

    for name in ["database", "backend", "frontend"] {
        component(&remote, name, "v2");
    }
    let v2 = remote.push("v2");
    let body = payload("github.json", &http_url, &v1, &v2);
    let headers = provider_headers("github", &body);
    let sent = Instant::now();
    let (status, response) = post(&controller, &headers, &body).await;
    let answered = sent.elapsed();
    assert_eq!(status, 200, "{response}");
    // The rollout has started once the first step's Application targets the new commit.
    let started = eventually_within(WEBHOOK_BOUND, "the rollout of v2 to start", async || {
        let appset = appsets
            .get("platform-stack")
            .await
            .map_err(|e| e.to_string())?;
        let status = appset.status.unwrap_or_default();
        let database = status
            .application_status
            .iter()
            .find(|entry| entry.application == "database")
            .ok_or("no database entry")?;
        if database.target_revisions == [v2.clone()]
            && matches!(
                database.status,
                State::Pending | State::Progressing | State::Healthy
            )
        {
            Ok(sent.elapsed())
        } else {
            Err(format!("{database:?}"))
        }
    })
    .await;
    println!(
        "webhook to rollout start: {} ms (the webhook was answered after {} ms)",
        started.as_millis(),
        answered.as_millis()
    );
    rolled_out(v2).await;
}

/// A provider whose pull-request events refresh.
struct PullRequestProvider {
    kind: Kind,
    /// Its name in [`event_headers`] and in the names of its ApplicationSet and Applications.
    name: &'static str,
    /// Its pull-request payload in `tests/fixtures/webhooks/`.
    file: &'static str,
    /// Its event header's value (empty for Bitbucket Server: the action itself).
    event: &'static str,
    /// The action of an opened pull request, and of a closed (or merged, or declined) one.
    opened: &'static str,
    closed: &'static str,
}

impl PullRequestProvider {
    /// The signed event `action` about pull request `number` of `acme/<repo>` on the fake at
    /// `api`: its headers and body.
    fn event(
        &self,
        api: &str,
        repo: &str,
        action: &str,
        number: u64,
    ) -> (Vec<(&'static str, String)>, Vec<u8>) {
        let pull = Pull::new(number, "feature/one");
        let body = fixture(self.file)
            .replace("{{API}}", api)
            .replace("{{OWNER}}", "acme")
            .replace("{{REPO}}", repo)
            .replace("{{ACTION}}", action)
            .replace("{{NUMBER}}", &number.to_string())
            .replace("{{BRANCH}}", &pull.branch)
            .replace("{{SHA}}", &pull.sha)
            .into_bytes();
        let event = if self.event.is_empty() {
            action
        } else {
            self.event
        };
        (event_headers(self.name, event, &body), body)
    }
}

const PULL_REQUEST_PROVIDERS: [PullRequestProvider; 4] = [
    PullRequestProvider {
        kind: Kind::Github,
        name: "github",
        file: "github-pull-request.json",
        event: "pull_request",
        opened: "opened",
        closed: "closed",
    },
    PullRequestProvider {
        kind: Kind::Gitlab,
        name: "gitlab",
        file: "gitlab-merge-request.json",
        event: "Merge Request Hook",
        opened: "open",
        closed: "merge",
    },
    PullRequestProvider {
        kind: Kind::Gitea,
        name: "gitea",
        file: "gitea-pull-request.json",
        event: "pull_request",
        opened: "opened",
        closed: "closed",
    },
    PullRequestProvider {
        kind: Kind::BitbucketServer,
        name: "bitbucket-server",
        file: "bitbucket-server-pull-request.json",
        event: "",
        opened: "pr:opened",
        closed: "pr:declined",
    },
];

/// The Secret key holding the fakes' token (Bitbucket Server: user `ci`'s password).
const SCM_TOKEN: &str = "scm t0ken";

/// The ApplicationSet `<name>-previews`: one Application `<name>-<number>` per pull request of
/// the fake `kind` at `api`, listed again after an hour only; Gitea's generator sits in a matrix
/// and GitLab's in a merge. The Applications compare `database` of `repo_url` and are not
/// synced, so that, once compared, they change no more.
fn previews(
    kind: Kind,
    name: &str,
    api: &str,
    repo_url: &str,
    ns: &TestNamespace,
) -> ApplicationSet {
    let mut pull_requests = pull_request_entry(kind, api, "scm-token", "token");
    pull_requests["pullRequest"]["requeueAfterSeconds"] = json!(3600);
    let generator = match kind {
        Kind::Gitea => json!({"matrix": {"generators": [
            {"list": {"elements": [{"stage": "preview"}]}},
            pull_requests
        ]}}),
        Kind::Gitlab => json!({"merge": {"mergeKeys": ["number"], "generators": [
            pull_requests,
            {"list": {"elements": [{"number": "999", "note": "no such pull request"}]}}
        ]}}),
        Kind::Github | Kind::BitbucketServer => pull_requests,
    };
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": format!("{name}-previews")},
        "spec": {
            "goTemplate": true,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [generator],
            "template": {
                "metadata": {"name": format!("{name}-{{{{ .number }}}}")},
                "spec": {
                    "project": "platform",
                    "source": {"repoURL": repo_url, "targetRevision": "main", "path": "database"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name}
                }
            }
        }
    }))
}

/// The names of the namespace's Applications.
async fn application_names(apps: &Api<Application>) -> Vec<String> {
    let mut names: Vec<String> = apps
        .list(&Default::default())
        .await
        .expect("lists Applications")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

/// Waits until the namespace's Applications are `expected`.
async fn wait_for_applications(apps: &Api<Application>, expected: &[&str]) {
    eventually_within(
        WEBHOOK_BOUND,
        &format!("the Applications {expected:?}"),
        async || {
            let names = application_names(apps).await;
            if names == expected {
                Ok(())
            } else {
                Err(format!("{names:?}"))
            }
        },
    )
    .await;
}

/// Waits until `fake` has been asked, every Application of the namespace has compared its
/// revision, and then the fake is not asked again for two seconds (more than the pause between
/// two reconciles of an ApplicationSet): its ApplicationSet and the Applications it owns are at
/// rest. The requests so far.
async fn at_rest(fake: &FakeScm, apps: &Api<Application>) -> usize {
    eventually_within(support::TIMEOUT, "the fake asked no more", async || {
        let before = fake.requests();
        let listed = apps
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let comparing: Vec<String> = listed
            .items
            .iter()
            .filter(|app| {
                app.status
                    .as_ref()
                    .and_then(|status| status.sync.as_ref())
                    .is_none_or(|sync| sync.revision.is_empty())
            })
            .map(ResourceExt::name_any)
            .collect();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = fake.requests();
        if before > 0 && after == before && comparing.is_empty() {
            Ok(after)
        } else {
            Err(format!(
                "{before} then {after} requests; comparing {comparing:?}"
            ))
        }
    })
    .await
}

/// Once `fake` and the Applications `apps` are at rest, changes `fake`'s pull requests to
/// `pulls` and checks that nothing lists them without a webhook: the fake is not asked within
/// half a second. Then sends `provider`'s signed event `action` about pull request `number` of
/// `acme/web` and checks that it refreshed one ApplicationSet.
async fn announce(
    controller: &Controller,
    apps: &Api<Application>,
    (provider, fake): (&PullRequestProvider, &FakeScm),
    pulls: Vec<Pull>,
    action: &str,
    number: u64,
) {
    let asked = at_rest(fake, apps).await;
    fake.set_pulls(pulls);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let name = provider.name;
    assert_eq!(fake.requests(), asked, "{name}: asked without a webhook");
    let (headers, body) = provider.event(&fake.url(), "web", action, number);
    let (status, response) = post(controller, &headers, &body).await;
    assert_eq!(status, 200, "{name} {action}: {response}");
    assert!(
        response.contains("refreshed 1 ApplicationSet(s)"),
        "{name} {action}: {response}"
    );
}

/// As Argo CD's ApplicationSet webhook: a pull-request event of each provider, verified as its
/// pushes are, makes the ApplicationSets listing that repository's pull requests list them at
/// once (their `requeueAfterSeconds` is an hour) — the Application of an opened pull request
/// appears, that of a closed one is deleted — while an event about another repository, or an
/// action that changes no list, refreshes nothing.
#[tokio::test]
async fn a_pull_request_event_refreshes_the_application_sets_listing_its_repository() {
    let (ns, remote, server) = setup("webhook-pulls").await;
    component(&remote, "database", "v1");
    remote.push("v1");
    let repo_url = server.url("platform.git");
    let secret: Secret = object(json!({
        "metadata": {"name": "scm-token"},
        "stringData": {"token": SCM_TOKEN}
    }));
    apply(&ns.api::<Secret>(), &secret).await;
    let fakes: Vec<FakeScm> = PULL_REQUEST_PROVIDERS
        .iter()
        .map(|provider| {
            let credential = match provider.kind {
                Kind::BitbucketServer => format!("ci:{SCM_TOKEN}"),
                _ => SCM_TOKEN.to_owned(),
            };
            FakeScm::start(provider.kind, "acme", "web", &credential, 10)
        })
        .collect();
    let controller = Controller::start(&ns, "pulls");
    let appsets: Api<ApplicationSet> = ns.api();
    let apps: Api<Application> = ns.api();
    for (provider, fake) in PULL_REQUEST_PROVIDERS.iter().zip(&fakes) {
        let appset = previews(provider.kind, provider.name, &fake.url(), &repo_url, &ns);
        apply(&appsets, &appset).await;
    }
    let mut expected: Vec<String> = Vec::new();
    // Adds the Applications `add`, removes those whose names start with `gone`, and waits for
    // the namespace to hold just those expected.
    let mut expect = async |add: &[String], gone: Option<&str>| {
        expected.extend_from_slice(add);
        expected.retain(|name| gone.is_none_or(|prefix| !name.starts_with(prefix)));
        expected.sort();
        let names: Vec<&str> = expected.iter().map(String::as_str).collect();
        wait_for_applications(&apps, &names).await;
    };

    // Opened: each provider's event brings its Application, one provider after the other.
    for (provider, fake) in PULL_REQUEST_PROVIDERS.iter().zip(&fakes) {
        let pulls = vec![Pull::new(1, "feature/one")];
        announce(
            &controller,
            &apps,
            (provider, fake),
            pulls,
            provider.opened,
            1,
        )
        .await;
        expect(&[format!("{}-1", provider.name)], None).await;
    }

    // A second pull request on GitHub: an event about another repository of the same server,
    // an assignment and an unsigned event refresh nothing; a push to the first one's branch
    // (synchronize) does.
    let (github, fake) = (&PULL_REQUEST_PROVIDERS[0], &fakes[0]);
    let asked = at_rest(fake, &apps).await;
    fake.set_pulls(vec![
        Pull::new(1, "feature/one"),
        Pull::new(2, "feature/two"),
    ]);
    let (headers, body) = github.event(&fake.url(), "api", "opened", 5);
    let (status, response) = post(&controller, &headers, &body).await;
    assert_eq!(status, 200, "{response}");
    assert!(
        response.contains(
            "pull request #5 of acme/api on 127.0.0.1 (opened): refreshed 0 ApplicationSet(s)"
        ),
        "{response}"
    );
    let (headers, body) = github.event(&fake.url(), "web", "assigned", 2);
    let (status, response) = post(&controller, &headers, &body).await;
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("nothing refreshed"), "{response}");
    let (mut headers, body) = github.event(&fake.url(), "web", "opened", 2);
    headers.retain(|(name, _)| *name == "x-github-event");
    let (status, response) = post(&controller, &headers, &body).await;
    assert_eq!(status, 401, "{response}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.requests(), asked, "nothing listed the pull requests");
    let names = application_names(&apps).await;
    assert!(!names.contains(&"github-2".to_owned()), "{names:?}");
    let (headers, body) = github.event(&fake.url(), "web", "synchronize", 1);
    let (status, response) = post(&controller, &headers, &body).await;
    assert_eq!(status, 200, "{response}");
    assert!(
        response.contains("refreshed 1 ApplicationSet(s)"),
        "{response}"
    );
    expect(&["github-2".to_owned()], None).await;

    // Closed, merged or declined: each provider's event deletes its Applications.
    for (provider, fake) in PULL_REQUEST_PROVIDERS.iter().zip(&fakes) {
        announce(
            &controller,
            &apps,
            (provider, fake),
            Vec::new(),
            provider.closed,
            1,
        )
        .await;
        expect(&[], Some(&format!("{}-", provider.name))).await;
    }
    let counts = controller.webhook_counts().await;
    let count = |provider: &str, result: &str| counted(&counts, provider, result);
    assert_eq!(count("github", "refreshed"), 4, "{counts:?}");
    assert_eq!(count("github", "ignored"), 1, "{counts:?}");
    assert_eq!(count("github", "unauthorized"), 1, "{counts:?}");
    for provider in ["gitlab", "gitea", "bitbucketserver"] {
        assert_eq!(count(provider, "refreshed"), 2, "{provider}: {counts:?}");
    }
}

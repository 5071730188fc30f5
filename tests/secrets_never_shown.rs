//! Planted secret values never leave the Secrets that hold them. `flotilla controller` (the
//! binary, logging at debug) runs against cluster 1 with its web view, webhook receiver and
//! metrics endpoint, and uses each kind of secret for real: a repository password (a private
//! repository served by `git http-backend` behind a loopback server that checks it), a cluster
//! bearer token (a cluster Secret for cluster 2, whose API server accepts it), a webhook secret
//! (`argocd-secret`'s `webhook.github.secret`, a GitHub push signed with it and accepted), and a
//! notification token (a `$key` of the `flotilla-notifications` Secret sent as a header to a
//! loopback webhook when a sync fails). Then every place a value could show is read — the
//! controller's log, the namespace's Events (both APIs), every Application's status and
//! metadata, `/metrics`, and each page of the web view — and none holds any of the values, nor
//! their base64.

mod controller_support;
mod support;

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flotilla::webhook::signature::sign_sha256;
use flotilla_core::api::Application;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use serde_json::{Value, json};

use controller_support::{commit, repository};
use support::git_remote::{GitHttp, Remote, free_port};
use support::loopback_http::LoopbackServer;
use support::webhook_payload::payload;
use support::{TestNamespace, apply, eventually, everything_written, object, wait_until};

const PASSWORD: &str = "planted-repository-password-5e1f";
const WEBHOOK_SECRET: &str = "planted-webhook-secret-a9c2";
const NOTIFICATION_TOKEN: &str = "planted-notification-token-77b0";

/// A loopback notification service: keeps every request as it arrived.
struct Recorder {
    server: LoopbackServer,
    received: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let keeping = Arc::clone(&received);
        let server = LoopbackServer::start(move |mut stream| {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            // Headers and body arrive within the timeout; the read that times out ends it.
            while let Ok(read) = stream.read(&mut chunk) {
                request.extend_from_slice(&chunk[..read]);
                if read == 0 || complete(&request) {
                    break;
                }
            }
            keeping
                .lock()
                .expect("not poisoned")
                .push(String::from_utf8_lossy(&request).into_owned());
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        });
        Self { server, received }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().expect("not poisoned").clone()
    }
}

/// Whether `request` holds its headers and the `content-length` bytes they announce.
fn complete(request: &[u8]) -> bool {
    let text = String::from_utf8_lossy(request);
    text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
        head.lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .is_some_and(|length| body.len() >= length)
    })
}

/// One HTTP/1.1 exchange with `address`: the status and the whole answer.
async fn exchange(address: SocketAddr, request: Vec<u8>) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    stream.write_all(&request).await.expect("sends");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    let status = answer
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

async fn get(address: SocketAddr, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\n\r\n");
    let (status, answer) = exchange(address, request.into_bytes()).await;
    assert_eq!(status, 200, "GET {path}: {answer}");
    answer
}

/// The controller process, with its three listeners.
struct Controller {
    child: Child,
    web: SocketAddr,
    webhook: SocketAddr,
    metrics: SocketAddr,
    log: std::path::PathBuf,
    _cache: tempfile::TempDir,
}

impl Controller {
    fn start(ns: &TestNamespace) -> Self {
        let address = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        let (web, webhook, metrics) = (
            address(free_port()),
            address(free_port()),
            address(free_port()),
        );
        let cache = tempfile::tempdir().expect("a repository cache directory");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args([
                "controller",
                "--namespace",
                &ns.name,
                "--identity",
                "secrets",
            ])
            .args(["--app-resync", "2s", "--repo-refresh", "0s"])
            .args(["--ui-addr", &web.to_string()])
            .args(["--webhook-addr", &webhook.to_string()])
            .args(["--metrics-addr", &metrics.to_string()])
            .arg("--repo-cache")
            .arg(cache.path())
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path(1))
            .env("RUST_LOG", "debug")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(support::controller_log(&ns.name, "secrets"))
            .spawn()
            .expect("starts flotilla controller");
        Self {
            child,
            web,
            webhook,
            metrics,
            log: support::controller_log_path(&ns.name, "secrets"),
            _cache: cache,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).expect("the controller's log")
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        support::print_log_tail_if_panicking(&self.log, 40);
    }
}

/// An Application of `ns` syncing `path` of `repo_url` to `destination`.
fn application(name: &str, repo_url: &str, path: &str, destination: Value) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": repo_url, "targetRevision": "HEAD", "path": path},
            "destination": destination,
            "syncPolicy": {"automated": {}}
        }
    }))
}

fn config_map(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  from: {name}\n"
    )
}

/// The Application `name` synced successfully.
async fn synced(apps: &Api<Application>, name: &str) {
    wait_until(apps, name, "a successful sync", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|op| op.phase == OperationPhase::Succeeded)
    })
    .await;
}

/// Every page of the web view: the fleet page and each page it links to.
async fn web_view(address: SocketAddr) -> String {
    let fleet = get(address, "/").await;
    let mut pages = vec![fleet.clone()];
    for link in fleet.split("href=\"").skip(1) {
        let path = link.split('"').next().unwrap_or_default();
        if path.starts_with("/applications") {
            pages.push(get(address, &path.replace("&amp;", "&")).await);
        }
    }
    assert!(
        pages.len() >= 4,
        "the fleet page links its Applications:\n{fleet}"
    );
    pages.join("\n")
}

#[tokio::test]
async fn planted_secret_values_never_show_in_logs_events_status_metrics_or_the_web_view() {
    let ns = support::namespace(1, "secrets-never").await;
    support::install_flotilla_crds(&ns.client).await;
    let remote_ns = support::namespace(2, "secrets-remote").await;
    let (cluster_server, cluster_ca, cluster_token) = support::cluster_credentials(2);

    // The private repository, read with the repository Secret's password.
    let private = Remote::new("private");
    private.write("web/cm.yaml", &config_map("web", &ns.name));
    let first = private.push("web");
    let git = GitHttp::start_with_password(private.exported(), "deploy", PASSWORD);
    let url = git.url(&private.served_name());
    // A public one with an object the API server refuses (its sync fails), and one for cluster 2.
    let public = repository();
    commit(
        public.path(),
        &[
            (
                "broken/cm.yaml",
                &config_map("broken", &ns.name).replace("from: broken", "\"not a key!\": x"),
            ),
            ("remote/cm.yaml", &config_map("remote", &remote_ns.name)),
        ],
        "broken and remote",
    );
    let public_url = format!("file://{}", public.path().display());

    let receiver = Recorder::start();
    let secrets: Api<Secret> = ns.api();
    for secret in [
        json!({
            "metadata": {"name": "private-repo", "labels": {"argocd.argoproj.io/secret-type": "repository"}},
            "stringData": {"url": url, "username": "deploy", "password": PASSWORD}
        }),
        json!({
            "metadata": {"name": "cluster-two", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "stringData": {
                "name": "two",
                "server": cluster_server,
                "config": json!({"bearerToken": cluster_token, "tlsClientConfig": {"caData": cluster_ca}}).to_string()
            }
        }),
        json!({
            "metadata": {"name": "argocd-secret"},
            "stringData": {"webhook.github.secret": WEBHOOK_SECRET}
        }),
        json!({
            "metadata": {"name": "flotilla-notifications"},
            "stringData": {"ops-token": NOTIFICATION_TOKEN}
        }),
    ] {
        apply(&secrets, &object::<Secret>(secret)).await;
    }
    let notifications: ConfigMap = object(json!({
        "metadata": {"name": "flotilla-notifications"},
        "data": {
            "service.webhook.ops": format!(
                "url: {}/hooks\nheaders:\n  X-Token: $ops-token\n",
                receiver.server.base_url()
            ),
            "template.failed": "message: '{{ .name }} failed'",
            "trigger.on-sync-failed": "template: failed\ndestinations: [webhook.ops]",
        }
    }));
    apply(&ns.api::<ConfigMap>(), &notifications).await;

    let controller = Controller::start(&ns);
    let apps: Api<Application> = ns.api();
    let here = json!({"server": "https://kubernetes.default.svc", "namespace": ns.name});
    apply(&apps, &application("web", &url, "web", here.clone())).await;
    apply(&apps, &application("broken", &public_url, "broken", here)).await;
    apply(
        &apps,
        &application(
            "remote",
            &public_url,
            "remote",
            json!({"name": "two", "namespace": remote_ns.name}),
        ),
    )
    .await;

    // Each secret used: the private repository read, cluster 2 written, the failed sync notified.
    synced(&apps, "web").await;
    synced(&apps, "remote").await;
    let remote_configs: Api<ConfigMap> = remote_ns.api();
    assert!(
        remote_configs
            .get_opt("remote")
            .await
            .expect("reads")
            .is_some(),
        "synced into cluster 2 with the token"
    );
    eventually("the failed sync notified with the token", async || {
        let got = receiver.received();
        got.iter()
            .any(|request| request.contains(NOTIFICATION_TOKEN))
            .then_some(())
            .ok_or(format!("{got:?}"))
    })
    .await;
    // A GitHub push, signed with the webhook secret, accepted.
    private.write(
        "web/cm.yaml",
        &config_map("web", &ns.name).replace("from: web", "from: push"),
    );
    let second = private.push("pushed");
    let body = payload("github.json", &url, &first, &second);
    let mut request = format!(
        "POST /api/webhook HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-github-event: push\r\nx-github-delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\nx-hub-signature-256: {}\r\n\r\n",
        body.len(),
        sign_sha256(WEBHOOK_SECRET.as_bytes(), &body, "sha256=")
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let (status, answer) = exchange(controller.webhook, request).await;
    assert_eq!(status, 200, "the signed push is accepted: {answer}");

    // Everything a person or a scraper can read.
    let seen = [
        ("the log", controller.log()),
        ("Events and Applications", everything_written(&ns).await),
        ("/metrics", get(controller.metrics, "/metrics").await),
        ("the web view", web_view(controller.web).await),
    ];
    let planted = [
        ("the repository password", PASSWORD.to_owned()),
        ("the cluster token", cluster_token.clone()),
        ("the webhook secret", WEBHOOK_SECRET.to_owned()),
        ("the notification token", NOTIFICATION_TOKEN.to_owned()),
    ];
    for (what, value) in &planted {
        let encoded = base64_of(value);
        for (place, text) in &seen {
            assert!(!text.contains(value.as_str()), "{place} shows {what}");
            assert!(!text.contains(&encoded), "{place} shows {what} in base64");
        }
    }
    assert!(
        seen[0].1.contains("DEBUG"),
        "the log is the controller's, at debug"
    );
}

/// `value` in standard base64 (as a Secret's `data` holds it), without its padding.
fn base64_of(value: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(value)
}

//! The web view's actions under the cluster's RBAC, on the real control plane (RBAC
//! authorization, ServiceAccount tokens signed by the API server): `flotilla controller
//! --ui-addr` serves a RollingSync ApplicationSet's page; two ServiceAccounts get tokens from
//! the TokenRequest API, `deployer` bound to a Role that may patch ApplicationSets, `reader` to
//! one that may only get, list and watch them. In headless Chromium, without a token no action
//! is offered; the reader's Pause is refused with 403 and changes nothing; the deployer pauses
//! and resumes the rollout (`spec.strategy.paused` on the cluster). Over plain HTTP, a POST
//! without the page's CSRF token, from another Origin or site, or without a bearer token is
//! refused and changes nothing, and one with all of them acts; a ServiceAccount that may patch
//! Applications requests a sync, recorded under its user name. No token reaches the log. The
//! ClusterRole of `deploy/web-view-actions/` lets its holder send both reviews, nothing else.
//! An object's panel follows a pod's log (through `pods/log` and a dedicated node simulator
//! printing what the test writes) and its Events, only for a viewer whose token may read them.

mod browser;
mod support;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use browser::Browser;
use flotilla::actions::action::Action;
use flotilla::web::access_review::{access_review, access_verdict, reviewed_user, token_review};
use flotilla_core::api::{Application, ApplicationSet};
use futures::StreamExt;
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::{Event, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use support::dedicated_node::DedicatedNode;
use support::{TestNamespace, apply, eventually, eventually_within, namespace, object};

/// The ApplicationSet the pages show.
const APPSET: &str = "stack";

/// `flotilla controller --ui-addr` on the test namespace (admin credentials), stopped on drop.
struct Controller {
    child: Child,
    ui: SocketAddr,
    _cache: tempfile::TempDir,
}

impl Controller {
    async fn start(ns: &TestNamespace) -> Self {
        let cache = tempfile::tempdir().expect("a repository cache directory");
        let ui = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args([
                "controller",
                "--namespace",
                &ns.name,
                "--identity",
                "actions",
            ])
            .args(["--metrics-addr", &free_port().to_string()])
            .args(["--ui-addr", &ui.to_string(), "--repo-cache"])
            .arg(cache.path())
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path(1))
            .env(
                "RUST_LOG",
                "debug,kube=debug,hyper=info,tower=info,rustls=info",
            )
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(support::controller_log(&ns.name, "actions"))
            .spawn()
            .expect("starts flotilla controller");
        eventually("the web view to accept connections", async || {
            tokio::net::TcpStream::connect(ui)
                .await
                .map_err(|e| e.to_string())
        })
        .await;
        let controller = Self {
            child,
            ui,
            _cache: cache,
        };
        eventually("the web view to show the ApplicationSet", async || {
            let (status, page) = controller.get(&format!("/applicationsets/{APPSET}")).await;
            (status == 200 && page.contains("data-action=\"pause\""))
                .then_some(())
                .ok_or(format!("{status}"))
        })
        .await;
        controller
    }

    async fn get(&self, path: &str) -> (u16, String) {
        exchange(self.ui, "GET", path, &[]).await
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

/// One HTTP/1.1 request to `address` with `headers` (`Host` is the address unless given);
/// the status and body of the answer.
async fn exchange(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the web view accepts connections");
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-length: 0\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("host: {address}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("reads");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP answer: {response}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The namespace with the RollingSync ApplicationSet, and the tokens of `deployer` (may patch
/// ApplicationSets) and `reader` (may only read them), issued by the TokenRequest API.
async fn setup(label: &str) -> (TestNamespace, String, String) {
    let ns = namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    let appset: ApplicationSet = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": APPSET},
        "spec": {
            "generators": [{"list": {"elements": []}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["1"]}]}]}},
            "template": {
                "metadata": {"name": "{{component}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "https://git.invalid/platform.git", "targetRevision": "main", "path": "{{component}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name}
                }
            }
        }
    }));
    apply(&ns.api::<ApplicationSet>(), &appset).await;
    let deployer = account(
        &ns,
        "deployer",
        "applicationsets",
        &["get", "list", "watch", "patch"],
    )
    .await;
    let reader = account(&ns, "reader", "applicationsets", &["get", "list", "watch"]).await;
    (ns, deployer, reader)
}

/// A ServiceAccount `name` bound to a Role granting `verbs` on `resource` (of flotilla.dev);
/// its token.
async fn account(ns: &TestNamespace, name: &str, resource: &str, verbs: &[&str]) -> String {
    let role: Role = object(json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["flotilla.dev"], "resources": [resource], "verbs": verbs}]
    }));
    apply(&ns.api::<Role>(), &role).await;
    let binding: RoleBinding = object(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns.name}]
    }));
    apply(&ns.api::<RoleBinding>(), &binding).await;
    service_account_token(ns, name).await
}

/// The ServiceAccount `name` (created), and a token of it from the TokenRequest API.
async fn service_account_token(ns: &TestNamespace, name: &str) -> String {
    let accounts: Api<ServiceAccount> = ns.api();
    apply(&accounts, &object(json!({"metadata": {"name": name}}))).await;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = eventually("a ServiceAccount token", async || {
        accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    issued.status.expect("an issued token").token
}

/// Whether the ApplicationSet's rollout is paused on the cluster.
async fn paused(ns: &TestNamespace) -> bool {
    let appset = ns.api::<ApplicationSet>().get(APPSET).await.expect("reads");
    let strategy = serde_json::to_value(&appset.spec).expect("JSON")["strategy"].clone();
    strategy["paused"].as_bool().unwrap_or(false)
}

/// The controller's log never shows a token.
fn assert_not_logged(ns: &TestNamespace, tokens: &[&str]) {
    let path = support::state_dir()
        .join("logs")
        .join(format!("{}-actions.log", ns.name));
    let log = std::fs::read_to_string(&path).expect("the controller's log");
    assert!(log.contains("web view action"), "the actions are logged");
    for token in tokens {
        assert!(!log.contains(token), "a token in {}", path.display());
    }
}

// ---------------------------------------------------------------------------------------------
// In a browser

/// The action buttons the viewer sees (`data-action` of the displayed ones).
async fn offered(browser: &Browser) -> Vec<String> {
    let shown = browser
        .script(concat!(
            "return Array.from(document.querySelectorAll('button[data-action]'))",
            ".filter(b => b.offsetParent !== null).map(b => b.dataset.action);"
        ))
        .await;
    serde_json::from_value(shown).expect("a list of actions")
}

/// Gives `token` in the page's token field, as a viewer pastes it.
async fn give_token(browser: &Browser, token: &str) {
    let token = Value::String(token.to_owned());
    browser
        .script(&format!(
            "document.getElementById('token-forget').click(); \
             document.getElementById('token').value = {token}; \
             document.getElementById('token-use').click();"
        ))
        .await;
}

/// Clicks the `action` button once it is shown, and waits for the outcome the page reports.
async fn click(browser: &Browser, action: &str) -> String {
    eventually(&format!("a {action} button"), async || {
        let actions = offered(browser).await;
        actions
            .contains(&action.to_owned())
            .then_some(())
            .ok_or(format!("{actions:?}"))
    })
    .await;
    browser
        .script(&format!(
            "var r = document.getElementById('action-result'); r.hidden = true; r.textContent = ''; \
             document.querySelector('button[data-action=\"{action}\"]').click();"
        ))
        .await;
    eventually(&format!("the outcome of {action}"), async || {
        let text = browser
            .script("var r = document.getElementById('action-result'); return r.hidden ? '' : r.textContent;")
            .await;
        match text.as_str() {
            Some(text) if !text.is_empty() => Ok(text.to_owned()),
            _ => Err("nothing yet".to_owned()),
        }
    })
    .await
}

#[tokio::test]
async fn a_viewer_whose_token_may_patch_pauses_and_resumes_the_rollout_and_one_who_may_not_is_refused()
 {
    let (ns, deployer, reader) = setup("ui-actions").await;
    let controller = Controller::start(&ns).await;
    let browser = Browser::start().await;
    browser
        .goto(&format!(
            "http://{}/applicationsets/{APPSET}",
            controller.ui
        ))
        .await;
    assert_eq!(
        offered(&browser).await,
        Vec::<String>::new(),
        "no token, no action"
    );

    give_token(&browser, &reader).await;
    assert_eq!(offered(&browser).await, ["pause"]);
    let refused = click(&browser, "pause").await;
    assert!(refused.starts_with("403"), "{refused}");
    assert!(
        refused.contains(&format!(
            "system:serviceaccount:{}:reader may not patch applicationsets.flotilla.dev {APPSET}",
            ns.name
        )),
        "{refused}"
    );
    assert!(!paused(&ns).await, "the reader's pause changed nothing");

    give_token(&browser, &deployer).await;
    let done = click(&browser, "pause").await;
    assert!(done.starts_with("200"), "{done}");
    assert!(paused(&ns).await, "paused on the cluster");
    // The live update offers Resume in its place.
    eventually("Resume offered", async || {
        let actions = offered(&browser).await;
        (actions == ["resume"])
            .then_some(())
            .ok_or(format!("{actions:?}"))
    })
    .await;
    browser.screenshot(&screenshot_path("action-paused")).await;
    let done = click(&browser, "resume").await;
    assert!(done.starts_with("200"), "{done}");
    assert!(!paused(&ns).await, "resumed on the cluster");

    // A reload keeps the tab's token (sessionStorage), a new tab's page has none.
    browser
        .goto(&format!(
            "http://{}/applicationsets/{APPSET}",
            controller.ui
        ))
        .await;
    assert_eq!(offered(&browser).await, ["pause"]);
    browser
        .script("window.sessionStorage.clear(); document.getElementById('token-forget').click();")
        .await;
    assert_eq!(offered(&browser).await, Vec::<String>::new());
    let cookies = browser.script("return document.cookie;").await;
    assert_eq!(cookies, json!(""), "no cookie");
    browser.quit().await;
    drop(controller);
    assert_not_logged(&ns, &[&deployer, &reader]);
}

/// Where the browser tests' screenshots go: `web-view/` in the target directory.
fn screenshot_path(page: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("web-view")
        .join(format!("{page}.png"))
}

// ---------------------------------------------------------------------------------------------
// Over HTTP

/// The CSRF token of the page at `path`.
async fn page_token(controller: &Controller, path: &str) -> String {
    let (status, page) = controller.get(path).await;
    assert_eq!(status, 200, "{page}");
    let start = page
        .find(r#"<meta name="flotilla-csrf" content=""#)
        .expect("the page's CSRF token")
        + r#"<meta name="flotilla-csrf" content=""#.len();
    page[start..].split('"').next().expect("a token").to_owned()
}

#[tokio::test]
async fn an_action_without_the_pages_token_from_another_origin_or_without_a_bearer_token_is_refused()
 {
    let (ns, deployer, _) = setup("ui-csrf").await;
    let controller = Controller::start(&ns).await;
    let pause = format!("/applicationsets/{APPSET}/pause");
    let csrf = page_token(&controller, &format!("/applicationsets/{APPSET}")).await;
    let origin = format!("http://{}", controller.ui);
    let bearer = format!("Bearer {deployer}");
    let browser_headers = |csrf: &str| -> Vec<(&'static str, String)> {
        vec![
            ("origin", origin.clone()),
            ("sec-fetch-site", "same-origin".to_owned()),
            ("x-flotilla-csrf", csrf.to_owned()),
            ("authorization", bearer.clone()),
        ]
    };
    let post = async |headers: Vec<(&'static str, String)>| {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        exchange(controller.ui, "POST", &pause, &headers).await
    };
    let without = |name: &str| {
        browser_headers(&csrf)
            .into_iter()
            .filter(|(n, _)| *n != name)
            .collect::<Vec<_>>()
    };
    let replaced = |name: &'static str, value: &str| {
        let mut headers = without(name);
        headers.push((name, value.to_owned()));
        headers
    };

    let (status, body) = post(without("x-flotilla-csrf")).await;
    assert_eq!(
        (status, body.trim()),
        (
            403,
            "refused: the request has no page token (x-flotilla-csrf)"
        )
    );
    let (status, body) = post(replaced("x-flotilla-csrf", "1800000000.00ff")).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = post(replaced("origin", "http://evil.example")).await;
    assert_eq!(
        (status, body.trim()),
        (
            403,
            "refused: the request comes from another origin (http://evil.example)"
        )
    );
    let (status, body) = post(without("origin")).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = post(replaced("sec-fetch-site", "cross-site")).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = post(without("authorization")).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = post(replaced("authorization", "Bearer not-a-token")).await;
    assert_eq!(status, 401, "{body}");
    // GET never acts; other methods are refused.
    let (status, _) = controller.get(&pause).await;
    assert_eq!(status, 404);
    let (status, _) = exchange(controller.ui, "PUT", &pause, &[]).await;
    assert_eq!(status, 405);
    assert!(!paused(&ns).await, "nothing refused changed anything");

    // The deployer may patch ApplicationSets, not Applications; an operator who may patch
    // Applications requests a sync, recorded as theirs.
    let apps: Api<Application> = ns.api();
    let app: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web"},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://git.invalid/platform.git", "targetRevision": "main", "path": "web"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name}
        }
    }));
    apply(&apps, &app).await;
    let initiators = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorded = Arc::clone(&initiators);
    let watching = tokio::spawn(
        watcher(
            apps.clone(),
            watcher::Config::default().fields("metadata.name=web"),
        )
        .applied_objects()
        .for_each(move |app| {
            if let Ok(Application { spec, .. }) = app
                && let Some(operation) = spec.operation
            {
                recorded
                    .lock()
                    .expect("not poisoned")
                    .push(operation.initiated_by.username);
            }
            futures::future::ready(())
        }),
    );
    let sync = async |headers: Vec<(&'static str, String)>| {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        exchange(controller.ui, "POST", "/applications/web/sync", &headers).await
    };
    let (status, body) = sync(browser_headers(&csrf)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("may not patch applications.flotilla.dev web"),
        "{body}"
    );
    let operator = account(&ns, "operator", "applications", &["get", "patch"]).await;
    let mut as_operator = without("authorization");
    as_operator.push(("authorization", format!("Bearer {operator}")));
    let (status, body) = sync(as_operator).await;
    assert_eq!(
        (status, body.trim()),
        (200, "sync of Application web requested")
    );
    let expected = format!("system:serviceaccount:{}:operator", ns.name);
    eventually("the sync requested as the operator", async || {
        let seen = initiators.lock().expect("not poisoned").clone();
        seen.contains(&expected)
            .then_some(())
            .ok_or(format!("{seen:?}"))
    })
    .await;
    watching.abort();

    // Rollback: to the history entry before the newest, recorded as the operator's sync of
    // that entry's revision; refused (409) with automated sync on.
    let mut api_app = app.clone();
    api_app.metadata.name = Some("api".to_owned());
    apply(&apps, &api_app).await;
    let entry = |id: u32, revision: &str| {
        json!({"id": id, "revision": revision, "deployedAt": "2026-01-01T00:00:00Z",
               "initiatedBy": {"username": "someone"}})
    };
    apps.patch_status(
        "api",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"history": [entry(0, "1111111"), entry(1, "2222222")]}})),
    )
    .await
    .expect("a history of two syncs");
    let rollback = async |name: &str| {
        let mut headers = without("authorization");
        headers.push(("authorization", format!("Bearer {operator}")));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        exchange(
            controller.ui,
            "POST",
            &format!("/applications/{name}/rollback"),
            &headers,
        )
        .await
    };
    let requested = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let seen = Arc::clone(&requested);
    let watching = tokio::spawn(
        watcher(
            apps.clone(),
            watcher::Config::default().fields("metadata.name=api"),
        )
        .applied_objects()
        .for_each(move |app| {
            if let Ok(Application { spec, .. }) = app
                && let Some(operation) = spec.operation
            {
                seen.lock()
                    .expect("not poisoned")
                    .push((operation.initiated_by.username, operation.sync.revision));
            }
            futures::future::ready(())
        }),
    );
    let (status, body) = rollback("api").await;
    assert_eq!(
        (status, body.trim()),
        (
            200,
            "rollback of Application api to history entry 0 (revision 1111111) requested"
        )
    );
    eventually("the rollback requested as the operator", async || {
        let seen = requested.lock().expect("not poisoned").clone();
        seen.contains(&(expected.clone(), "1111111".to_owned()))
            .then_some(())
            .ok_or(format!("{seen:?}"))
    })
    .await;
    watching.abort();
    let mut automated = app.clone();
    automated.metadata.name = Some("automated".to_owned());
    automated.spec.sync_policy = Some(serde_json::from_value(json!({"automated": {}})).unwrap());
    apply(&apps, &automated).await;
    apps.patch_status(
        "automated",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"history": [entry(0, "1111111"), entry(1, "2222222")]}})),
    )
    .await
    .expect("a history of two syncs");
    let (status, body) = rollback("automated").await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("has automated sync enabled"), "{body}");

    let (status, body) = post(browser_headers(&csrf)).await;
    assert_eq!(
        (status, body.trim()),
        (
            200,
            format!("rollout of {}/{APPSET} paused", ns.name).as_str()
        )
    );
    assert!(paused(&ns).await);
    drop(controller);
    assert_not_logged(&ns, &[&deployer, &operator]);
}

// ---------------------------------------------------------------------------------------------
// The controller's RBAC

/// A client of cluster 1 authenticated by `token` instead of the admin's.
async fn client_as(token: &str) -> kube::Client {
    let path = support::kubeconfig_path(1);
    let kubeconfig = Kubeconfig::read_from(&path).expect("the cluster's kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("a usable kubeconfig");
    config.auth_info.token = Some(token.to_owned().into());
    kube::Client::try_from(config).expect("a client")
}

/// What `deploy/web-view-actions/` grants the controller's ServiceAccount, bound here to a test
/// ServiceAccount, lets it send both reviews the actions need, and nothing else.
#[tokio::test]
async fn the_deployed_review_role_allows_the_token_and_access_reviews_and_nothing_else() {
    let (ns, deployer, _) = setup("ui-reviews").await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/web-view-actions/reviews.yaml");
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&std::fs::read_to_string(&path).expect("reads reviews.yaml"))
            .expect("YAML");
    let role: ClusterRole = serde_json::from_value(
        documents
            .iter()
            .find(|d| d["kind"] == "ClusterRole")
            .expect("a ClusterRole")
            .clone(),
    )
    .expect("a ClusterRole");
    apply(&Api::<ClusterRole>::all(ns.client.clone()), &role).await;
    let binding: ClusterRoleBinding = object(json!({
        "metadata": {"name": format!("web-view-reviews-{}", ns.name)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.metadata.name},
        "subjects": [{"kind": "ServiceAccount", "name": "reviewer", "namespace": ns.name}]
    }));
    apply(&Api::<ClusterRoleBinding>::all(ns.client.clone()), &binding).await;
    let reviewer = client_as(&service_account_token(&ns, "reviewer").await).await;
    let tokens: Api<TokenReview> = Api::all(reviewer.clone());
    let answer = eventually("a TokenReview sent as the reviewer", async || {
        tokens
            .create(&PostParams::default(), &token_review(&deployer))
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let user = reviewed_user(&answer).expect("the deployer's token is accepted");
    let access = Action::Pause.access(&ns.name, APPSET);
    let answer = Api::<SubjectAccessReview>::all(reviewer.clone())
        .create(&PostParams::default(), &access_review(&user, &access))
        .await
        .expect("a SubjectAccessReview sent as the reviewer");
    assert_eq!(access_verdict(&answer, &user, &access), Ok(()));
    let read = Api::<ApplicationSet>::namespaced(reviewer, &ns.name)
        .get(APPSET)
        .await;
    assert!(
        matches!(&read, Err(kube::Error::Api(status)) if status.code == 403),
        "{read:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The console: the fleet at scale, the resource tree, the object panel

/// The Applications a list page shows (`/applications/NAME` links in its rows).
fn listed(page: &str) -> Vec<String> {
    let section = page
        .split(r#"<section id="applications">"#)
        .nth(1)
        .expect("the Applications section");
    section
        .split(r#"<td><a href="/applications/"#)
        .skip(1)
        .filter_map(|row| row.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_fleet_page_filters_and_pages_three_hundred_applications_on_the_server() {
    let (ns, _, _) = setup("ui-fleet").await;
    let controller = Controller::start(&ns).await;
    let apps: Api<Application> = ns.api();
    futures::stream::iter(0..300)
        .for_each_concurrent(16, |i| {
            let apps = apps.clone();
            let namespace = ns.name.clone();
            async move {
                let team = if i % 3 == 0 { "payments" } else { "search" };
                // A project that does not exist: the controller only records that.
                let app: Application = object(json!({
                    "apiVersion": "flotilla.dev/v1alpha1",
                    "kind": "Application",
                    "metadata": {"name": format!("app-{i:03}"), "labels": {"team": team}},
                    "spec": {
                        "project": "absent",
                        "source": {"repoURL": "https://git.invalid/platform.git", "targetRevision": "main", "path": "x"},
                        "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace}
                    }
                }));
                apply(&apps, &app).await;
            }
        })
        .await;
    eventually("the view to hold the 300 Applications", async || {
        let (_, page) = controller.get("/").await;
        page.contains(r#"data-matched="300""#)
            .then_some(())
            .ok_or_else(|| "not yet".to_owned())
    })
    .await;
    let (status, first) = controller.get("/?label=team%3Dpayments").await;
    assert_eq!(status, 200);
    assert!(first.contains(r#"data-matched="100""#), "{first}");
    assert!(first.contains(r#"data-page="1" data-pages="2""#), "{first}");
    assert!(
        first.contains("/?label=team%3Dpayments&amp;page=2#applications"),
        "the next page keeps the filter: {first}"
    );
    let (_, second) = controller.get("/?label=team%3Dpayments&page=2").await;
    let (first, second) = (listed(&first), listed(&second));
    assert_eq!((first.len(), second.len()), (50, 50));
    assert!(
        first.iter().all(|name| !second.contains(name)),
        "{first:?} {second:?}"
    );
    assert_eq!(first[0], "app-000");
    assert_eq!(second[0], "app-150");
    let (_, one) = controller
        .get("/?name=app-29&label=team%21%3Dpayments")
        .await;
    assert_eq!(
        listed(&one),
        [
            "app-290", "app-292", "app-293", "app-295", "app-296", "app-298", "app-299"
        ]
    );
}

/// The resources a viewer of the Application's objects and Events may `get` and `list`.
const VIEWED: [&str; 4] = ["pods", "secrets", "events", "services"];

/// A ServiceAccount that may read the Application's objects and Events (`get`, `list`) — not
/// their pods' logs — and its token.
async fn viewer_token(ns: &TestNamespace) -> String {
    role_token(ns, "viewer", &VIEWED).await
}

/// A ServiceAccount `name` bound to a Role that may `get` and `list` the core `resources` and
/// Deployments and ReplicaSets, and its token.
async fn role_token(ns: &TestNamespace, name: &str, resources: &[&str]) -> String {
    let role: Role = object(json!({
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": [""], "resources": resources, "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": ["get", "list"]}
        ]
    }));
    apply(&ns.api::<Role>(), &role).await;
    let binding: RoleBinding = object(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns.name}]
    }));
    apply(&ns.api::<RoleBinding>(), &binding).await;
    service_account_token(ns, name).await
}

/// The first page event of the live updates of `path`.
async fn first_event(address: SocketAddr, path: &str) -> String {
    first_of(address, path, "page", &[]).await
}

/// What the stream of events at `path` (requested with `headers`) sent up to the end of its
/// first event named `name`.
async fn first_of(address: SocketAddr, path: &str, name: &str, headers: &[(&str, &str)]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the web view accepts connections");
    let mut request =
        format!("GET {path} HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\n");
    for (header, value) in headers {
        request.push_str(&format!("{header}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut received = Vec::new();
    let mut buffer = [0u8; 8192];
    let read = async {
        loop {
            let n = stream.read(&mut buffer).await.expect("reads");
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&received);
            if text
                .split_once(&format!("event: {name}"))
                .is_some_and(|(_, rest)| rest.contains("\n\n"))
            {
                break;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), read)
        .await
        .unwrap_or_else(|_| panic!("a {name} event from {path}"));
    String::from_utf8_lossy(&received).into_owned()
}

/// The value planted in the Secret, and what the API server stores of it.
const PLANTED: &str = "planted-s3cret-value";
const PLANTED_BASE64: &str = "cGxhbnRlZC1zM2NyZXQtdmFsdWU=";

/// What the controller logged.
fn controller_log(ns: &TestNamespace) -> String {
    std::fs::read_to_string(
        support::state_dir()
            .join("logs")
            .join(format!("{}-actions.log", ns.name)),
    )
    .expect("the controller's log")
}

/// The whole document the browser shows.
async fn page_html(browser: &Browser) -> String {
    browser
        .script("return document.documentElement.outerHTML;")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The planted Secret value (or its base64) is in none of `seen`.
fn assert_not_planted(seen: &[String]) {
    for page in seen {
        assert!(!page.contains(PLANTED), "the planted value shown: {page}");
        assert!(
            !page.contains(PLANTED_BASE64),
            "the planted value shown: {page}"
        );
    }
}

/// Pushes `deployment` (named as the Application) and a Secret `db` holding [`PLANTED`] to
/// `remote`'s `app/`, and applies Application `name` syncing them into the test namespace.
async fn secret_and_application(
    ns: &TestNamespace,
    remote: &support::git_remote::Remote,
    name: &str,
    deployment: &Value,
) {
    remote.write(&format!("app/{name}.json"), &deployment.to_string());
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                        "stringData": {"password": PLANTED}});
    remote.write("app/secret.json", &secret.to_string());
    remote.push("a Deployment and a Secret");
    let app: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": "app"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "operation": {"sync": {}, "initiatedBy": {"username": "tester"}}
        }
    }));
    apply(&ns.api::<Application>(), &app).await;
}

#[tokio::test]
async fn the_resource_tree_shows_a_deployments_pods_and_the_panel_its_drift_to_a_viewer_who_may_read_it()
 {
    let (ns, _, reader) = setup("ui-tree").await;
    support::require_node_sim(&ns.client, 1).await;
    let viewer = viewer_token(&ns).await;
    let remote = support::git_remote::Remote::new("console");
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"tier": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "example.com/web:1"}]}}}
    });
    secret_and_application(&ns, &remote, "web", &deployment).await;
    let controller = Controller::start(&ns).await;
    let tree_path = "/applications/web/tree";
    let tree = eventually(
        "the tree: Deployment → ReplicaSet → two Healthy Pods",
        async || {
            let (status, page) = controller.get(tree_path).await;
            let pods = page.matches(r#"data-node="Pod/web-"#).count();
            let healthy = page.matches(r#"data-health="Healthy""#).count();
            (status == 200
                && page.contains(r#"data-node="Deployment/web" data-health="Healthy""#)
                && page.contains(r#"data-node="ReplicaSet/web-"#)
                && pods == 2
                && healthy >= 4)
                .then_some(page)
                .ok_or(format!("{status}, {pods} pods, {healthy} healthy"))
        },
    )
    .await;
    // Drawn in that order: each under its owner.
    let deployment_at = tree.find(r#"data-node="Deployment/web""#).unwrap();
    let replica_set_at = tree.find(r#"data-node="ReplicaSet/web-"#).unwrap();
    let pod_at = tree.find(r#"data-node="Pod/web-"#).unwrap();
    assert!(
        deployment_at < replica_set_at && replica_set_at < pod_at,
        "{tree}"
    );

    let browser = Browser::start().await;
    browser
        .goto(&format!("http://{}{tree_path}", controller.ui))
        .await;
    let drawn = browser
        .script("return Array.from(document.querySelectorAll('svg.tree a[data-node]')).map(a => a.dataset.node + ' ' + a.dataset.health);")
        .await;
    let drawn: Vec<String> = serde_json::from_value(drawn).expect("a list of nodes");
    assert_eq!(drawn.len(), 5, "{drawn:?}");
    assert!(drawn[0].starts_with("Deployment/web Healthy"), "{drawn:?}");
    assert!(drawn[1].starts_with("ReplicaSet/web-"), "{drawn:?}");
    assert!(
        drawn[2..4]
            .iter()
            .all(|pod| pod.starts_with("Pod/web-") && pod.ends_with(" Healthy")),
        "{drawn:?}"
    );
    assert!(drawn[4].starts_with("Secret/db"), "{drawn:?}");
    browser.screenshot(&screenshot_path("resource-tree")).await;

    // Someone edits a managed field with kubectl.
    let edited = Command::new(support::kubectl())
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args([
            "-n",
            &ns.name,
            "patch",
            "deployment",
            "web",
            "--type",
            "merge",
        ])
        .args(["-p", r#"{"metadata":{"labels":{"tier":"edited"}}}"#])
        .output()
        .expect("runs kubectl");
    assert!(
        edited.status.success(),
        "{}",
        String::from_utf8_lossy(&edited.stderr)
    );

    // With the viewer's token, the Deployment's panel names the field that differs.
    give_token(&browser, &viewer).await;
    browser
        .script("document.querySelector('a[data-node=\"Deployment/web\"]').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));")
        .await;
    let panel = eventually("the panel's diff naming the field", async || {
        let text = browser
            .script("return document.getElementById('page').innerHTML;")
            .await;
        let text = text.as_str().unwrap_or_default().to_owned();
        (text.contains(r#"data-diff="OutOfSync""#) && text.contains("/metadata/labels/tier"))
            .then_some(text.clone())
            .ok_or(text)
    })
    .await;
    assert!(panel.contains("edited"), "the live value: {panel}");
    assert!(
        panel.contains("ScalingReplicaSet"),
        "the Deployment's Events: {panel}"
    );
    browser.screenshot(&screenshot_path("object-panel")).await;

    // Over HTTP: without a token, 401; with a token that may not get Deployments, 403.
    let panel_path = format!(
        "/applications/web/object?group=apps&kind=Deployment&namespace={}&name=web",
        ns.name
    );
    let (status, body) = controller.get(&panel_path).await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("/metadata/labels/tier"));
    let read_as = async |token: &str, path: &str| {
        let bearer = format!("Bearer {token}");
        exchange(controller.ui, "GET", path, &[("authorization", &bearer)]).await
    };
    let (status, body) = read_as(&reader, &panel_path).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("may not get deployments.apps web"), "{body}");
    assert!(!body.contains("example.com/web:1"), "no manifest: {body}");
    let (status, body) = read_as(&viewer, &panel_path).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("example.com/web:1"), "{body}");

    // The Secret's value is in no page, panel or live update.
    let secret_path = format!(
        "/applications/web/object?group=&kind=Secret&namespace={}&name=db",
        ns.name
    );
    let (status, secret_panel) = read_as(&viewer, &secret_path).await;
    assert_eq!(status, 200, "{secret_panel}");
    assert!(secret_panel.contains("++++++++"), "{secret_panel}");
    let mut seen = vec![secret_panel, tree];
    for path in [
        "/",
        "/applications/web",
        tree_path,
        &format!("/applicationsets/{APPSET}"),
    ] {
        seen.push(controller.get(path).await.1);
        seen.push(first_event(controller.ui, path).await);
    }
    browser
        .script(&format!(
            "var a = document.createElement('a'); a.href = {}; document.body.appendChild(a); a.click();",
            Value::String(secret_path.clone())
        ))
        .await;
    eventually("the Secret's panel in the browser", async || {
        let text = browser
            .script("return document.documentElement.outerHTML;")
            .await;
        let text = text.as_str().unwrap_or_default().to_owned();
        text.contains("++++++++").then_some(()).ok_or(text)
    })
    .await;
    seen.push(page_html(&browser).await);
    assert_not_planted(&seen);
    browser.quit().await;
    drop(controller);
    let log = controller_log(&ns);
    assert!(!log.contains(PLANTED) && !log.contains(PLANTED_BASE64) && !log.contains(&viewer));
}

/// Starts reading the stream at `path` as `token`'s holder: the answer's status, and the open
/// connection (the stream runs until it is dropped).
async fn start_stream(
    address: SocketAddr,
    path: &str,
    token: &str,
) -> (u16, tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the web view accepts connections");
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\nauthorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).await.expect("reads");
        assert_eq!(read, 1, "an answer: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    (status, stream)
}

/// The text of the element `id` in the browser's page (empty when it is missing).
async fn text_of(browser: &Browser, id: &str) -> String {
    let text = browser
        .script(&format!(
            "var e = document.getElementById({}); return e ? e.textContent : '';",
            Value::String(id.to_owned())
        ))
        .await;
    text.as_str().unwrap_or_default().to_owned()
}

/// Opens the resource tree at `tree`, gives `token`, opens the Deployment's panel, picks
/// `target` (`POD/CONTAINER`) in its logs form and asks for the log, followed.
async fn follow_log(browser: &Browser, tree: &str, token: &str, target: &str) {
    browser.goto(tree).await;
    give_token(browser, token).await;
    browser
        .script("document.querySelector('a[data-node=\"Deployment/talker\"]').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));")
        .await;
    eventually("the panel's logs form", async || {
        let shown = browser
            .script("return !!document.getElementById('logs');")
            .await;
        (shown == json!(true))
            .then_some(())
            .ok_or(shown.to_string())
    })
    .await;
    browser
        .script(&format!(
            "var form = document.getElementById('logs'); form.elements.target.value = {}; \
             form.elements.follow.checked = true; form.querySelector('button').click();",
            Value::String(target.to_owned())
        ))
        .await;
}

/// Sets the `sim.flotilla.dev/log` annotation of `pod`: what the node simulator prints.
async fn print(ns: &TestNamespace, pod: &str, lines: &str) {
    let patch = json!({"metadata": {"annotations": {"sim.flotilla.dev/log": lines}}});
    ns.api::<Pod>()
        .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotates the pod");
}

#[tokio::test]
async fn the_panel_follows_a_pods_log_and_its_events_for_a_viewer_who_may_read_them() {
    let (ns, _, _) = setup("ui-logs").await;
    let node = DedicatedNode::start(&ns.client, &ns.name).await;
    let viewer = viewer_token(&ns).await;
    let log_reader = role_token(&ns, "logs", &[VIEWED.as_slice(), &["pods/log"]].concat()).await;
    let remote = support::git_remote::Remote::new("console-logs");
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "talker"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "talker"}},
                 "template": {"metadata": {"labels": {"app": "talker"},
                                           "annotations": {"sim.flotilla.dev/log": "first line"}},
                              "spec": {"nodeName": node.name, "containers": [
                                  {"name": "app", "image": "example.com/talker:1"},
                                  {"name": "proxy", "image": "example.com/proxy:1"}]}}}
    });
    secret_and_application(&ns, &remote, "talker", &deployment).await;
    let controller = Controller::start(&ns).await;
    let pod = eventually("the Deployment's pod Running on the node", async || {
        let pods = ns
            .api::<Pod>()
            .list(&kube::api::ListParams::default().labels("app=talker"))
            .await
            .map_err(|e| e.to_string())?;
        pods.items
            .iter()
            .find(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .map(|pod| pod.metadata.name.clone().unwrap_or_default())
            .ok_or(format!("{} pods", pods.items.len()))
    })
    .await;
    let tree_path = "/applications/talker/tree";
    eventually("the tree with the pod", async || {
        let (status, page) = controller.get(tree_path).await;
        (status == 200 && page.contains(&format!(r#"data-node="Pod/{pod}""#)))
            .then_some(())
            .ok_or(format!("{status}"))
    })
    .await;

    // Over HTTP: no token, 401; a token that may not get pods/log, 403; no line either way.
    let logs_path = format!(
        "/applications/talker/logs?namespace={}&pod={pod}&container=app&tailLines=10",
        ns.name
    );
    let read_as = async |token: &str, path: &str| {
        let bearer = format!("Bearer {token}");
        exchange(controller.ui, "GET", path, &[("authorization", &bearer)]).await
    };
    let (status, body) = controller.get(&logs_path).await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("first line"), "{body}");
    let (status, body) = read_as(&viewer, &logs_path).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(&format!("may not get pods/log {pod}")),
        "{body}"
    );
    assert!(!body.contains("first line"), "{body}");
    let (status, log) = read_as(&log_reader, &logs_path).await;
    assert_eq!(status, 200, "{log}");
    assert!(
        log.contains("event: line\ndata: first line\n\n") && log.contains("event: end\n"),
        "{log}"
    );

    // The previous instance: the API server's answer (there is none) passes through, no line.
    let (status, body) = read_as(&log_reader, &format!("{logs_path}&previous=true")).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains(r#"previous terminated container "app""#) && !body.contains("first line"),
        "{body}"
    );

    // Followed logs are bounded: the 17th at once is refused; a viewer who leaves gives theirs
    // back (noticed at the next heartbeat).
    let follow_path = format!("{logs_path}&follow=true");
    let mut open = Vec::new();
    for _ in 0..flotilla::web::inspect::MAX_FOLLOWS {
        let (status, stream) = start_stream(controller.ui, &follow_path, &log_reader).await;
        assert_eq!(status, 200);
        open.push(stream);
    }
    let (status, _) = start_stream(controller.ui, &follow_path, &log_reader).await;
    assert_eq!(status, 429, "beyond the bound");
    drop(open);
    eventually("a follow accepted once the viewers left", async || {
        let (status, _) = start_stream(controller.ui, &follow_path, &log_reader).await;
        (status == 200).then_some(()).ok_or(status.to_string())
    })
    .await;

    // In a browser: the Deployment's panel follows the pod's app container.
    let browser = Browser::start().await;
    let tree = format!("http://{}{tree_path}", controller.ui);
    follow_log(&browser, &tree, &log_reader, &format!("{pod}/app")).await;
    let offered = browser
        .script("return Array.from(document.querySelectorAll('#logs option')).map(o => o.value);")
        .await;
    assert_eq!(
        offered,
        json!([format!("{pod}/app"), format!("{pod}/proxy")]),
        "each container of the pod"
    );
    eventually("the first line in the followed log", async || {
        let lines = text_of(&browser, "log-lines").await;
        (lines == "first line\n").then_some(()).ok_or(lines)
    })
    .await;
    print(&ns, &pod, "first line\nsecond line").await;
    eventually_within(
        std::time::Duration::from_secs(2),
        "the line written through the node simulator in the followed log",
        async || {
            let lines = text_of(&browser, "log-lines").await;
            (lines == "first line\nsecond line\n")
                .then_some(())
                .ok_or(lines)
        },
    )
    .await;

    // An Event made while the panel is open shows, newest first.
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let event: Event = object(json!({
        "metadata": {"name": "talker.planted"},
        "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "talker", "namespace": ns.name},
        "reason": "PlantedByTest", "message": "an Event while the panel is open", "type": "Normal",
        "firstTimestamp": now, "lastTimestamp": now,
        "source": {"component": "web-view-test"}
    }));
    ns.api::<Event>()
        .create(&PostParams::default(), &event)
        .await
        .expect("creates the Event");
    let events = eventually("the new Event in the open panel", async || {
        let events = text_of(&browser, "object-events").await;
        events
            .contains("PlantedByTest")
            .then_some(events.clone())
            .ok_or(events)
    })
    .await;
    let newest = events.find("PlantedByTest").unwrap();
    assert!(
        events
            .find("ScalingReplicaSet")
            .is_none_or(|older| newest < older),
        "newest first: {events}"
    );
    browser
        .screenshot(&screenshot_path("object-panel-logs"))
        .await;
    let mut seen = vec![page_html(&browser).await, log];

    // A viewer who may read the Deployment but not its pods' logs: 403, and no line.
    follow_log(&browser, &tree, &viewer, &format!("{pod}/app")).await;
    let refused = eventually("the refusal of the log", async || {
        let status = browser
            .script("var s = document.getElementById('log-status'); return s.hidden ? '' : s.dataset.status + ' ' + s.textContent;")
            .await;
        let status = status.as_str().unwrap_or_default().to_owned();
        (!status.is_empty()).then_some(status.clone()).ok_or(status)
    })
    .await;
    assert!(refused.starts_with("403 "), "{refused}");
    assert_eq!(text_of(&browser, "log-lines").await, "", "no line shown");
    let events_path = format!(
        "/applications/talker/events?group=apps&kind=Deployment&namespace={}&name=talker",
        ns.name
    );
    let bearer = format!("Bearer {viewer}");
    seen.push(
        first_of(
            controller.ui,
            &events_path,
            "events",
            &[("authorization", &bearer)],
        )
        .await,
    );
    seen.push(page_html(&browser).await);
    browser.quit().await;
    assert_not_planted(&seen);
    drop(controller);
    let log = controller_log(&ns);
    for line in ["first line", "second line", PLANTED, PLANTED_BASE64] {
        assert!(!log.contains(line), "{line:?} in the controller's log");
    }
    drop(node);
}

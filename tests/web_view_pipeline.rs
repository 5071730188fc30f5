//! The web view's rollout pipeline in headless Chromium, on the real control plane, with
//! `flotilla controller --ui-addr` (the binary):
//! - A three-step RollingSync (`database`, a Deployment of two replicas; `backend`, baking 30 s;
//!   `frontend`, `approval: manual`): the pipeline shows step 2 Baking with its countdown
//!   ticking and step 3 Closed; then step 3 waiting for approval, and its Promote button,
//!   clicked with a token, opens it (the existing action path) until every step is Complete; the
//!   history of rollouts lists the rollout Complete on its commit; a click on a step lists the
//!   ApplicationSet's Applications of that step (a deep link). No reload meanwhile.
//! - Twelve rollouts: the ApplicationSet's status keeps the last ten, and its page lists the
//!   two older ones too, from the ApplicationSet's `RolloutEnded` Events.
//! - The graph `db → (eu ∥ us) → fe` is drawn with eu and us side by side in one column, an
//!   edge from db to each and from each to fe.
//!
//! Screenshots of the pages (Fleet, ApplicationSet with its pipeline, an Application, its
//! resource tree, an object's panel, the graph) go to `$FLOTILLA_SCREENSHOTS` when set
//! (`tests/browser/screenshots.sh` sets it to the documentation's images), else to
//! `web-view/` in the target directory.

mod browser;
mod support;

use std::path::PathBuf;
use std::time::Duration;

use browser::Browser;
use flotilla_core::api::ApplicationSet;
use serde_json::{Value, json};
use support::git_remote::{GitDaemon, Remote};
use support::list_appset::{apply_graph, appset};
use support::{TestNamespace, apply, eventually, eventually_within, namespace};

/// How long a rollout of a few ConfigMaps and a Deployment may take on a loaded machine.
const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(180);

/// Where the screenshot of `page` goes.
fn screenshot_path(page: &str) -> PathBuf {
    let dir = std::env::var_os("FLOTILLA_SCREENSHOTS").map_or_else(
        || {
            PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("the target directory")
                .join("web-view")
        },
        PathBuf::from,
    );
    dir.join(format!("{page}.png"))
}

/// A controller serving the web view of `ns`, and a browser.
struct Console {
    controller: support::ControllerProcess,
    browser: Browser,
    ui: std::net::SocketAddr,
}

impl Console {
    async fn start(ns: &TestNamespace, identity: &str) -> Self {
        let ui = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port");
        let controller =
            support::controller_process_with(ns, identity, &["--ui-addr", &ui.to_string()]);
        eventually("the web view to accept connections", async || {
            tokio::net::TcpStream::connect(ui)
                .await
                .map_err(|e| e.to_string())
        })
        .await;
        let browser = Browser::start().await;
        Self {
            controller,
            browser,
            ui,
        }
    }

    async fn goto(&self, path: &str) {
        self.browser
            .goto(&format!("http://{}{path}", self.ui))
            .await;
    }

    /// Each pipeline step's state and lines, by step number.
    async fn steps(&self) -> Vec<(String, String)> {
        let steps = self
            .browser
            .script(concat!(
                "return Array.from(document.querySelectorAll('svg.pipeline g[data-pipeline-step]'), ",
                "g => [g.dataset.state, Array.from(g.querySelectorAll('text.line'), t => t.textContent).join(' | ')]);"
            ))
            .await;
        serde_json::from_value(steps).expect("a list of steps")
    }

    /// Waits until the pipeline's steps pass `check`; returns them.
    async fn wait_steps(
        &self,
        what: &str,
        check: impl Fn(&[(String, String)]) -> bool,
    ) -> Vec<(String, String)> {
        eventually_within(ROLLOUT_TIMEOUT, what, async || {
            let steps = self.steps().await;
            if check(&steps) {
                Ok(steps)
            } else {
                Err(format!("{steps:?}"))
            }
        })
        .await
    }

    /// Closes the browser and stops the controller.
    async fn stop(self) {
        let Self {
            controller,
            browser,
            ..
        } = self;
        browser.quit().await;
        controller.kill();
    }
}

/// A repository of three components, served by `git daemon`: `database` a Deployment of two
/// replicas, `backend` and `frontend` a ConfigMap each; its commit.
fn repository() -> (Remote, GitDaemon, String) {
    let remote = Remote::new("pipeline");
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "database"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "database"}},
                 "template": {"metadata": {"labels": {"app": "database"}},
                              "spec": {"containers": [{"name": "db", "image": "example.com/db:1"}]}}}
    });
    remote.write("database/deployment.json", &deployment.to_string());
    for component in ["backend", "frontend", "db", "eu", "us", "fe"] {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": component}, "data": {"component": component}});
        remote.write(&format!("{component}/config.json"), &config.to_string());
    }
    let commit = remote.push("v1");
    let daemon = GitDaemon::start(remote.exported());
    (remote, daemon, commit)
}

/// An ApplicationSet `name` over `components` (each labelled `step: COMPONENT`), deploying each
/// into `ns` from `url`, rolled out by `steps`.
fn appset_of(
    name: &str,
    url: &str,
    ns: &TestNamespace,
    components: &[&str],
    steps: &Value,
) -> ApplicationSet {
    let elements: Vec<Value> = components
        .iter()
        .map(|c| json!({"app": format!("{name}-{c}"), "component": c, "step": c}))
        .collect();
    appset(name, url, ns, &json!(elements), steps)
}

/// A step of the Applications labelled `step: component`, with `extra` fields.
fn step(component: &str, extra: Value) -> Value {
    let mut step =
        json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [component]}]});
    if let (Some(step), Value::Object(extra)) = (step.as_object_mut(), extra) {
        step.extend(extra);
    }
    step
}

/// The namespace with the project, the CRDs and a node simulator to run the pods.
async fn setup(label: &str) -> TestNamespace {
    let ns = namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    support::require_node_sim(&ns.client, 1).await;
    ns
}

/// The seconds a `bake: 1m5s left` line says, if it says one.
fn bake_left(line: &str) -> Option<u64> {
    let left = line.split("bake: ").nth(1)?.strip_suffix(" left")?;
    let (minutes, seconds) = left.split_once('m').unwrap_or(("0", left));
    Some(minutes.parse::<u64>().ok()? * 60 + seconds.strip_suffix('s')?.parse::<u64>().ok()?)
}

#[tokio::test]
async fn the_pipeline_shows_the_bake_counting_down_then_a_promote_from_the_page_opens_the_last_step()
 {
    let ns = setup("ui-pipeline").await;
    let (remote, daemon, commit) = repository();
    let stack = appset_of(
        "stack",
        &daemon.url(&remote.served_name()),
        &ns,
        &["database", "backend", "frontend"],
        &json!([
            step("database", json!({})),
            step("backend", json!({"bakeTime": "30s"})),
            step("frontend", json!({"approval": "manual"})),
        ]),
    );
    let console = Console::start(&ns, "pipeline").await;
    console.goto("/applicationsets/stack").await;
    // A reload would forget this.
    console
        .browser
        .script("window.flotillaNoReload = true;")
        .await;
    apply(&ns.api::<ApplicationSet>(), &stack).await;

    let baking = console
        .wait_steps("step 2 Baking with its countdown", |steps| {
            steps.len() == 3
                && steps[1].0 == "Baking"
                && bake_left(&steps[1].1).is_some_and(|left| left > 2)
        })
        .await;
    assert_eq!(baking[0].0, "Complete", "{baking:?}");
    assert_eq!(baking[2].0, "Closed", "{baking:?}");
    assert!(baking[2].1.contains("after step 2"), "{baking:?}");
    assert!(baking[1].1.starts_with("1 Healthy"), "{baking:?}");
    assert!(baking[0].1.starts_with("1 Healthy"), "{baking:?}");
    let first = bake_left(&baking[1].1).expect("a countdown");
    // The countdown ticks in the page between updates.
    eventually("the countdown to tick", async || {
        let steps = console.steps().await;
        let now = steps.get(1).and_then(|(_, lines)| bake_left(lines));
        now.filter(|&left| left < first)
            .ok_or(format!("{first}s, then {steps:?}"))
    })
    .await;
    console
        .browser
        .screenshot(&screenshot_path("application-set"))
        .await;

    let waiting = console
        .wait_steps("step 3 waiting for approval", |steps| {
            steps
                .get(2)
                .is_some_and(|(state, _)| state == "WaitingForApproval")
        })
        .await;
    assert_eq!(waiting[1].0, "Complete", "{waiting:?}");
    assert!(waiting[2].1.contains("awaiting approval"), "{waiting:?}");
    // The button is there, hidden without a token.
    let hidden = console
        .browser
        .script(concat!(
            "var b = document.querySelector('svg.pipeline g[data-pipeline-step=\"3\"] button[data-action=\"promote\"]');",
            "return b ? b.offsetParent === null : null;"
        ))
        .await;
    assert_eq!(hidden, json!(true), "a hidden Promote button on step 3");
    // The admin's token (the kubeconfig's), as a viewer pastes it.
    let (_, _, token) = support::cluster_credentials(1);
    let token = Value::String(token);
    console
        .browser
        .script(&format!(
            "document.getElementById('token').value = {token}; document.getElementById('token-use').click();"
        ))
        .await;
    console
        .browser
        .script(
            "document.querySelector('svg.pipeline g[data-pipeline-step=\"3\"] button[data-action=\"promote\"]').click();",
        )
        .await;
    let answer = eventually("the Promote's answer", async || {
        let text = console
            .browser
            .script("var r = document.getElementById('action-result'); return r.hidden ? '' : r.textContent;")
            .await;
        match text.as_str() {
            Some(text) if !text.is_empty() => Ok(text.to_owned()),
            _ => Err("nothing yet".to_owned()),
        }
    })
    .await;
    assert!(
        answer.starts_with("200") && answer.contains("step 3 of"),
        "{answer}"
    );
    let done = console
        .wait_steps("every step Complete", |steps| {
            steps.len() == 3 && steps.iter().all(|(state, _)| state == "Complete")
        })
        .await;
    assert!(done[2].1.starts_with("1 Healthy"), "{done:?}");

    // The history lists the rollout, Complete, on the commit (the CRDs are shared with other
    // tests, which may install an older copy without the field: install them again then).
    let short = &commit[..7];
    let history = eventually_within(ROLLOUT_TIMEOUT, "the rollout Complete in the history", async || {
        let row = console
            .browser
            .script("var r = document.querySelector('table.history tbody tr'); return r ? [r.dataset.outcome, r.innerText] : null;")
            .await;
        let row: Option<(String, String)> = serde_json::from_value(row).unwrap_or_default();
        match row {
            Some((outcome, text)) if outcome == "Complete" => Ok(text),
            other => {
                support::install_flotilla_crds(&ns.client).await;
                Err(format!("{other:?}"))
            }
        }
    })
    .await;
    assert!(history.contains(short), "{history}");
    let marked = console
        .browser
        .script("return window.flotillaNoReload === true;")
        .await;
    assert_eq!(marked, json!(true), "the page was reloaded");

    // A click on step 2 lists its Applications, by a link that carries the filter.
    console
        .browser
        .script("document.querySelector('svg.pipeline g[data-pipeline-step=\"2\"] a').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));")
        .await;
    let listed = eventually("the Applications of step 2", async || {
        let shown = console
            .browser
            .script(concat!(
                "var s = document.getElementById('applications');",
                "return s ? [window.location.search, s.innerText] : null;"
            ))
            .await;
        let shown: Option<(String, String)> = serde_json::from_value(shown).unwrap_or_default();
        match shown {
            Some((search, text)) if search == "?step=2" => Ok(text),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(listed.contains("stack-backend"), "{listed}");
    assert!(
        !listed.contains("stack-frontend") && !listed.contains("stack-database"),
        "{listed}"
    );

    // The other pages, for the documentation.
    console.goto("/").await;
    console.browser.screenshot(&screenshot_path("fleet")).await;
    console.goto("/applications/stack-database").await;
    console
        .browser
        .screenshot(&screenshot_path("application"))
        .await;
    console.goto("/applications/stack-database/tree").await;
    eventually("the database's Pods in the tree", async || {
        let pods = console
            .browser
            .script("return document.querySelectorAll('svg.tree a[data-node^=\"Pod/\"]').length;")
            .await;
        (pods == json!(2)).then_some(()).ok_or(pods.to_string())
    })
    .await;
    console
        .browser
        .screenshot(&screenshot_path("application-tree"))
        .await;
    console
        .browser
        .script("document.querySelector('a[data-node=\"Deployment/database\"]').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));")
        .await;
    eventually("the Deployment's panel", async || {
        let page = console
            .browser
            .script("return document.getElementById('page').innerText;")
            .await;
        let page = page.as_str().unwrap_or_default().to_owned();
        page.contains("example.com/db:1").then_some(()).ok_or(page)
    })
    .await;
    console
        .browser
        .screenshot(&screenshot_path("object-panel"))
        .await;
    console.stop().await;
}

#[tokio::test]
async fn a_graph_is_drawn_with_its_parallel_steps_side_by_side() {
    let ns = setup("ui-pipeline-graph").await;
    let (remote, daemon, _) = repository();
    let graph = appset_of(
        "graph",
        &daemon.url(&remote.served_name()),
        &ns,
        &["db", "eu", "us", "fe"],
        &json!([
            step("db", json!({"name": "db"})),
            step("eu", json!({"name": "eu", "dependsOn": ["db"]})),
            step("us", json!({"name": "us", "dependsOn": ["db"]})),
            step("fe", json!({"name": "fe", "dependsOn": ["eu", "us"]})),
        ]),
    );
    let console = Console::start(&ns, "pipeline-graph").await;
    apply_graph(&ns, &graph).await;
    console.goto("/applicationsets/graph").await;
    console
        .wait_steps("every step Complete, its Application Healthy", |steps| {
            steps.len() == 4
                && steps
                    .iter()
                    .all(|(state, lines)| state == "Complete" && lines.starts_with("1 Healthy"))
        })
        .await;
    // Where each box is drawn, as the browser laid it out.
    let boxes = console
        .browser
        .script(concat!(
            "return Array.from(document.querySelectorAll('svg.pipeline g[data-pipeline-step] rect'), ",
            "r => { var b = r.getBBox(); return [Math.round(b.x), Math.round(b.y)]; });"
        ))
        .await;
    let boxes: Vec<(i64, i64)> = serde_json::from_value(boxes).expect("positions");
    let [db, eu, us, fe] = boxes[..] else {
        panic!("four boxes: {boxes:?}");
    };
    assert_eq!(eu.0, us.0, "eu and us in one column: {boxes:?}");
    assert_ne!(eu.1, us.1, "one above the other: {boxes:?}");
    assert!(db.0 < eu.0 && eu.0 < fe.0, "{boxes:?}");
    let edges = console
        .browser
        .script("return Array.from(document.querySelectorAll('svg.pipeline path.edge'), p => p.dataset.from + '>' + p.dataset.to);")
        .await;
    let edges: Vec<String> = serde_json::from_value(edges).expect("edges");
    assert_eq!(edges, ["1>2", "1>3", "2>4", "3>4"]);
    let titles = console
        .browser
        .script("return Array.from(document.querySelectorAll('svg.pipeline text.title'), t => t.textContent);")
        .await;
    assert_eq!(
        titles,
        json!(["Step 1 · db", "Step 2 · eu", "Step 3 · us", "Step 4 · fe"])
    );
    console
        .browser
        .screenshot(&screenshot_path("pipeline-graph"))
        .await;
    console.stop().await;
}

/// Whether `history`'s newest rollout is Complete on `commit`.
fn complete_on(history: &ApplicationSet, commit: &str) -> bool {
    history
        .status
        .as_ref()
        .and_then(|s| s.rollout_history.first())
        .is_some_and(|newest| {
            newest.revisions == [commit.to_owned()] && newest.outcome.as_str() == "Complete"
        })
}

#[tokio::test]
async fn rollouts_older_than_the_status_keeps_are_listed_from_the_application_sets_events() {
    let ns = setup("ui-history").await;
    let (remote, daemon, first) = repository();
    let history = appset_of(
        "history",
        &daemon.url(&remote.served_name()),
        &ns,
        &["backend"],
        &json!([step("backend", json!({}))]),
    );
    apply_graph(&ns, &history).await;
    let ui = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let ui_addr = ui.to_string();
    let controller = support::controller_process_with(&ns, "history", &["--ui-addr", &ui_addr]);
    let appsets: kube::Api<ApplicationSet> = ns.api();
    let mut commits = vec![first];
    // Twelve rollouts, each Complete before the next commit: the status keeps the last ten.
    for version in 1..=12 {
        if version > 1 {
            let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "backend"}, "data": {"version": version.to_string()}});
            remote.write("backend/config.json", &config.to_string());
            commits.push(remote.push(&format!("v{version}")));
            let refresh = json!({"metadata": {"annotations": {
                "argocd.argoproj.io/application-set-refresh": "true"}}});
            appsets
                .patch(
                    "history",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(refresh),
                )
                .await
                .expect("annotates");
        }
        let commit = commits.last().expect("a commit").clone();
        support::wait_until(&appsets, "history", "the rollout Complete", |a| {
            complete_on(a, &commit)
        })
        .await;
    }
    let kept = appsets.get("history").await.expect("reads it");
    let kept = kept.status.expect("a status").rollout_history;
    assert_eq!(kept.len(), 10, "{kept:?}");
    // The page lists all twelve, the two oldest from the Events, newest first.
    let page = eventually_within(ROLLOUT_TIMEOUT, "the two oldest from Events", async || {
        let (_, page) = support::http_get(ui, "/applicationsets/history").await;
        let from_events: Vec<&str> = page
            .split(r#"data-from="Events"><td title=""#)
            .skip(1)
            .filter_map(|row| row.split('"').next())
            .collect();
        if from_events == [commits[1].as_str(), commits[0].as_str()] {
            Ok(page)
        } else {
            Err(format!("{from_events:?}"))
        }
    })
    .await;
    assert_eq!(page.matches(r#"data-from="status""#).count(), 10, "{page}");
    controller.kill();
}

//! API Priority and Fairness throttling the controller on the real control plane: the
//! controller acts as a user of its own (a kubeconfig impersonating it, bound to
//! `cluster-admin`), and a FlowSchema matching only that user sends its requests to a
//! PriorityLevelConfiguration of the least concurrency (3 seats here) that rejects instead of
//! queuing, so the real API server answers its excess requests 429 with `Retry-After`. A
//! three-step RollingSync rolls out under that throttle: it completes, step after step, and the
//! controller's count of the 429s it was answered (`argocd_app_k8s_request_total` with
//! `response_code="429"`) is above 0 and equals the API server's own count of the FlowSchema's
//! rejections. The APF objects and the binding are cluster-scoped on a shared
//! control plane: named after the test's namespace, and deleted when the test ends, failed or not.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use flotilla_core::api::ApplicationSet;
use kube::Api;

use controller_support::{commit, repository};
use support::three_step_appset::{rolled_out_in_order, three_steps};
use support::{TestNamespace, apply, eventually_within, impersonating_kubeconfig};

/// The most retries of one request (`throttled_retry::MAX_RETRIES`).
const MAX_RETRIES: u64 = 10;

/// The cluster-scoped objects of the test: the user's binding, the priority level and the flow
/// schema, all named `name`; deleted when dropped.
struct Throttle {
    name: String,
}

impl Throttle {
    /// Binds `user` to `cluster-admin` and sends its requests to a priority level of the least
    /// concurrency that rejects what it cannot run at once.
    fn install(name: &str, user: &str) -> Self {
        let throttle = Self {
            name: name.to_owned(),
        };
        kubectl_apply(&format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {user}}}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {name}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {{type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {name}}}
spec:
  priorityLevelConfiguration: {{name: {name}}}
  matchingPrecedence: 50
  rules:
  - subjects: [{{kind: User, user: {{name: {user}}}}}]
    resourceRules:
    - {{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}}
    nonResourceRules: [{{verbs: ["*"], nonResourceURLs: ["*"]}}]
"#
        ));
        throttle
    }

    /// Deletes the flow schema and the priority level: the user's requests are no longer
    /// throttled.
    fn lift(&self) {
        kubectl_delete(&[
            &format!("flowschema/{}", self.name),
            &format!("prioritylevelconfiguration/{}", self.name),
        ]);
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        self.lift();
        kubectl_delete(&[&format!("clusterrolebinding/{}", self.name)]);
    }
}

/// `kubectl apply` of `yaml` on cluster 1 as its administrator.
fn kubectl_apply(yaml: &str) {
    let mut child = Command::new(support::kubectl())
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs (set FLOTILLA_KUBECTL)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `kubectl delete` of `objects` on cluster 1, whether they exist or not.
fn kubectl_delete(objects: &[&str]) {
    let _ = Command::new(support::kubectl())
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .arg("delete")
        .args(objects)
        .args(["--ignore-not-found", "--wait=false"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// `flotilla controller` acting with `kubeconfig`, with a metrics endpoint; killed when
/// dropped.
struct Controller {
    child: Child,
    metrics: std::net::SocketAddr,
    log: std::path::PathBuf,
}

impl Controller {
    fn start(ns: &TestNamespace, kubeconfig: &Path, cache: &Path) -> Self {
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(["controller", "--namespace", &ns.name])
            .args(["--identity", "throttled", "--app-resync", "2s"])
            .args(["--metrics-addr", &metrics.to_string()])
            .arg("--repo-cache")
            .arg(cache)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env(
                "RUST_LOG",
                "info,flotilla::cluster::api_server::throttled_retry=debug",
            )
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(support::controller_log(&ns.name, "throttled"))
            .spawn()
            .expect("starts flotilla controller");
        Self {
            child,
            metrics,
            log: support::controller_log_path(&ns.name, "throttled"),
        }
    }

    /// The controller's API counts, summed over its servers: requests sent
    /// (`argocd_app_k8s_request_total`), those answered 429, and retries
    /// (`flotilla_api_retries_total`).
    fn counts(&self) -> Result<BTreeMap<&'static str, u64>, String> {
        let scraped = support::scrape_metrics(self.metrics)?;
        let requests = "argocd_app_k8s_request_total{";
        let refused: String = scraped
            .lines()
            .filter(|line| line.contains("response_code=\"429\""))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(BTreeMap::from([
            ("requests", sum(&scraped, requests)),
            ("throttled", sum(&refused, requests)),
            ("retries", sum(&scraped, "flotilla_api_retries_total{")),
        ]))
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        support::print_log_tail_if_panicking(&self.log, 40);
    }
}

/// The sum of the samples of `text` whose line starts with `prefix`.
fn sum(text: &str, prefix: &str) -> u64 {
    text.lines()
        .filter(|line| line.starts_with(prefix))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// How many of `flow_schema`'s requests the API server rejected, by its own metrics.
async fn rejected_by_server(client: &kube::Client, flow_schema: &str) -> Result<u64, String> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let text = client
        .request_text(request)
        .await
        .map_err(|e| e.to_string())?;
    let prefix = "apiserver_flowcontrol_rejected_requests_total{";
    let label = format!("flow_schema=\"{flow_schema}\"");
    Ok(text
        .lines()
        .filter(|line| line.starts_with(prefix) && line.contains(&label))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rollout_throttled_by_priority_and_fairness_completes_in_order_and_counts_the_refusals() {
    let ns = controller_support::setup("throttle").await;
    support::permissive_project(&ns, "platform").await;
    let user = format!("flotilla-throttled-{}", ns.name);
    let throttle = Throttle::install(&ns.name, &user);
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let kubeconfig = impersonating_kubeconfig(scratch.path(), &user);

    let repo = repository();
    let config_map = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: \"1\"\n")
    };
    let files: Vec<(String, String)> = ["database", "backend", "frontend"]
        .iter()
        .map(|c| (format!("{c}/cm.yaml"), config_map(&format!("{c}-config"))))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    commit(repo.path(), &files, "v1");
    let url = format!("file://{}", repo.path().display());

    let controller = Controller::start(&ns, &kubeconfig, &scratch.path().join("repos"));
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &three_steps(&url, &ns)).await;
    rolled_out_in_order(&ns, Duration::from_secs(180)).await;

    // Lifted, the throttle refuses nothing more: the controller's count and the server's are
    // final, and must agree.
    throttle.lift();
    let (counts, rejected) = eventually_within(
        Duration::from_secs(30),
        "the controller to count what the API server rejected",
        async || {
            let counts = controller.counts()?;
            let rejected = rejected_by_server(&ns.client, &ns.name).await?;
            (counts["throttled"] == rejected)
                .then_some((counts.clone(), rejected))
                .ok_or(format!("controller {counts:?}, API server {rejected}"))
        },
    )
    .await;
    println!("under the throttle: {counts:?}; the API server rejected {rejected}");
    let (requests, throttled, retries) =
        (counts["requests"], counts["throttled"], counts["retries"]);
    assert!(
        throttled > 0,
        "the throttle refused none of {requests} requests"
    );
    assert!(
        retries <= throttled,
        "every retry follows a refusal (the control plane answers no 503/504): {counts:?}"
    );
    assert!(
        throttled <= (MAX_RETRIES + 1) * (requests - retries),
        "no request was refused more than {} times: {counts:?}",
        MAX_RETRIES + 1
    );
}

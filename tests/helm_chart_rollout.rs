//! The controller the Helm chart installs rolls out the three-tier stack. `helm install` of
//! `deploy/helm/flotilla/` on cluster 1 creates the Deployment, ServiceAccount and RBAC; the node
//! simulator runs no containers, so the controller binary is started here, out of the cluster,
//! with the rendered Deployment's container args and its ServiceAccount's identity: a token from
//! the TokenRequest API in a kubeconfig of its own (namespace: the release's), so every request
//! it makes is allowed or refused by the chart's RBAC alone. Only what a pod gives a container
//! differs: the listen addresses of its args are moved to free loopback ports and the repository
//! cache to a temporary directory (the pod's network and volume), and `POD_NAME` is set as the
//! Downward API would. The database → backend → frontend RollingSync then completes step after
//! step. (Feature `controlplane`.)

mod controller_support;
mod deploy_manifests_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use flotilla_core::api::ApplicationSet;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use controller_support::{commit, repository};
use deploy_manifests_support::root;
use support::three_step_appset::{ORDER, rolled_out_in_order, three_steps};
use support::{TestNamespace, apply};

fn helm() -> PathBuf {
    std::env::var_os("FLOTILLA_HELM").map_or_else(|| "helm".into(), PathBuf::from)
}

/// A release of the chart, uninstalled when dropped (its cluster-wide RBAC goes with it).
struct Release(String);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = Command::new(helm())
            .args(["uninstall", &self.0, "--namespace", &self.0, "--kubeconfig"])
            .arg(support::kubeconfig_path(1))
            .output();
    }
}

/// `helm install <release> deploy/helm/flotilla` into the test's namespace (the CRDs are there),
/// the release named after the namespace.
fn helm_install(ns: &TestNamespace) -> Release {
    let chart = root().join("deploy/helm/flotilla");
    let kubeconfig = support::kubeconfig_path(1);
    let output = Command::new(helm())
        .args(["install", &ns.name])
        .arg(chart)
        .args(["--namespace", &ns.name, "--kubeconfig"])
        .arg(kubeconfig)
        .args(["--set", "createNamespace=false"])
        .output()
        .expect("helm runs (bash tests/tools/install.sh installs it; set FLOTILLA_HELM)");
    assert!(
        output.status.success(),
        "helm install: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Release(ns.name.clone())
}

/// A kubeconfig for cluster 1 authenticating with `token` only, its namespace `namespace`.
fn token_kubeconfig(dir: &Path, token: &str, namespace: &str) -> PathBuf {
    let admin = std::fs::read_to_string(support::kubeconfig_path(1)).expect("cluster 1 kubeconfig");
    let mut config: serde_json::Value = serde_saphyr::from_str(&admin).expect("kubeconfig YAML");
    for entry in config["users"].as_array_mut().expect("users") {
        entry["user"] = json!({"token": token});
    }
    for entry in config["contexts"].as_array_mut().expect("contexts") {
        entry["context"]["namespace"] = json!(namespace);
    }
    let path = dir.join("service-account.kubeconfig");
    std::fs::write(&path, serde_json::to_string(&config).expect("JSON")).expect("writes");
    path
}

/// The Deployment's container args as a pod would run them, with its listen addresses on free
/// loopback ports and its repository cache in `cache`.
fn pod_args(deployment: &Deployment, cache: &Path) -> Vec<String> {
    let container = &deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("a pod template")
        .containers[0];
    let args = container.args.clone().expect("the chart gives args");
    let mut out = Vec::new();
    // Held until every address is chosen, so no two flags get the same port.
    let mut held = Vec::new();
    let mut flag: Option<&str> = None;
    for arg in &args {
        match flag.take() {
            Some("--metrics-addr" | "--ui-addr" | "--webhook-addr") => {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
                out.push(listener.local_addr().expect("an address").to_string());
                held.push(listener);
            }
            Some("--repo-cache") => out.push(cache.display().to_string()),
            _ => out.push(arg.clone()),
        }
        if arg.starts_with("--") {
            flag = Some(arg.as_str());
        }
    }
    assert_eq!(
        out.first().map(String::as_str),
        Some("controller"),
        "{args:?}"
    );
    out
}

/// The controller process, killed when dropped.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        support::print_log_tail_if_panicking(&self.log, 60);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_charts_controller_rolls_out_the_three_tier_stack_in_order() {
    let ns = controller_support::setup("helm-rollout").await;
    support::permissive_project(&ns, "platform").await;
    let _release = helm_install(&ns);
    let controller_name = format!("{}-controller", ns.name);
    let deployment = ns
        .api::<Deployment>()
        .get(&controller_name)
        .await
        .expect("the chart's Deployment");
    let request: TokenRequest = serde_json::from_value(json!({
        "spec": {"audiences": [], "expirationSeconds": 3600}
    }))
    .expect("a token request");
    let token = Api::<ServiceAccount>::namespaced(ns.client.clone(), &ns.name)
        .create_token_request(&controller_name, &PostParams::default(), &request)
        .await
        .expect("a token for the chart's ServiceAccount")
        .status
        .expect("a token")
        .token;
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let kubeconfig = token_kubeconfig(scratch.path(), &token, &ns.name);
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).expect("reads"),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("a usable kubeconfig");
    let review: SelfSubjectReview = serde_json::from_value(json!({})).expect("a review");
    let reviewed = Api::<SelfSubjectReview>::all(kube::Client::try_from(config).expect("a client"))
        .create(&PostParams::default(), &review)
        .await
        .expect("the API server reviews");
    let user = reviewed
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username);
    assert_eq!(
        user,
        Some(format!(
            "system:serviceaccount:{}:{controller_name}",
            ns.name
        )),
        "the kubeconfig is the chart's ServiceAccount"
    );
    let args = pod_args(&deployment, &scratch.path().join("repos"));

    let repo = repository();
    let files: Vec<(String, String)> = ORDER
        .iter()
        .map(|c| {
            let config =
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {c}-config\n");
            (format!("{c}/cm.yaml"), config)
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    commit(repo.path(), &files, "v1");
    let url = format!("file://{}", repo.path().display());

    let log = support::controller_log_path(&ns.name, "chart");
    let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args(&args)
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAME", format!("{controller_name}-0"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(support::controller_log(&ns.name, "chart"))
        .spawn()
        .expect("starts flotilla controller");
    let _controller = Controller { child, log };

    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &three_steps(&url, &ns)).await;
    rolled_out_in_order(&ns, Duration::from_secs(180)).await;
    let configs = ns.api::<k8s_openapi::api::core::v1::ConfigMap>();
    for name in ORDER {
        configs
            .get(&format!("{name}-config"))
            .await
            .unwrap_or_else(|e| panic!("{name}-config applied: {e}"));
    }
}

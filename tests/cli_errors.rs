//! Clear errors from the real binary on inputs shaped the way users write them, against the real
//! API server: a directory whose name is not a Kubernetes name, invalid object names, an
//! Application name the server would refuse, a rejection by the server, a missing object and a
//! malformed duration. Each error names what is wrong, and nothing is written to the cluster
//! (the operation record aside, when the server itself rejects an object).
//! (Feature `controlplane`; the errors that need no cluster are in cli_errors_offline.rs.)

mod cli_errors_support;
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde_json::Value;
use support::TestNamespace;

use cli_errors_support::{WEB_CONFIG, flotilla, manifests, sync, text, unreachable_kubeconfig};

/// The ConfigMap every namespace gets from the controller manager.
const ROOT_CA: &str = "kube-root-ca.crt";

/// The names of the ConfigMaps in the test's namespace, but the one every namespace has.
async fn config_maps(ns: &TestNamespace) -> Vec<String> {
    let api: Api<ConfigMap> = ns.api();
    let listed = api
        .list(&ListParams::default())
        .await
        .expect("listing ConfigMaps");
    listed
        .items
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| name != ROOT_CA)
        .collect()
}

/// Asserts that the run failed, that its stderr holds every one of `lines`, and that the
/// namespace holds no ConfigMap (neither a synced one nor an operation record).
async fn assert_refused_writing_nothing(output: &Output, lines: &[&str], ns: &TestNamespace) {
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    for line in lines {
        assert!(stderr.contains(line), "{stderr}\n!~ {line}");
    }
    assert_eq!(config_maps(ns).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_directory_named_my_dir_syncs_as_my_dir_and_says_so() {
    let ns = support::namespace(1, "my-dir").await;
    let source = manifests("My_Dir", &[("config.yaml", WEB_CONFIG)]);
    let dir = &source.dir;

    let output = sync(dir, &ns, &[]).await;
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "{stderr}\n{}",
        text(&output.stdout)
    );
    assert!(
        stderr.contains(
            "note: \"My_Dir\" is not a valid Application name; syncing as Application \"my-dir\" (pass --app NAME to choose another)"
        ),
        "{stderr}"
    );
    let api: Api<ConfigMap> = ns.api();
    let synced = api
        .get("web-config")
        .await
        .expect("the ConfigMap was synced");
    assert_eq!(
        synced.annotations().get("flotilla.dev/tracking-id"),
        Some(&format!("my-dir:/ConfigMap:{}/web-config", ns.name))
    );
    let mut names = config_maps(&ns).await;
    names.sort();
    assert_eq!(names, ["flotilla-operation-my-dir", "web-config"]);
}

#[tokio::test]
async fn an_application_name_the_server_would_refuse_is_an_error_before_any_write() {
    let ns = support::namespace(1, "bad-app").await;
    let source = manifests("web", &[("config.yaml", WEB_CONFIG)]);
    let dir = &source.dir;

    let output = sync(dir, &ns, &["--app", "My_App"]).await;
    assert_refused_writing_nothing(
        &output,
        &["error: --app \"My_App\": upper-case 'M' is not allowed; an Application name must be a DNS-1123 subdomain"],
        &ns,
    )
    .await;
}

#[tokio::test]
async fn invalid_object_names_are_all_reported_by_plan_and_sync_writes_nothing() {
    let ns = support::namespace(1, "bad-names").await;
    let source = manifests(
        "shop",
        &[
            ("config.yaml", WEB_CONFIG),
            (
                "settings.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Shop_Settings\ndata: {}\n",
            ),
            (
                "service.yaml",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: 1-api\nspec:\n  ports:\n  - port: 80\n",
            ),
            (
                "namespace.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team.eu\n",
            ),
        ],
    );
    let dir = &source.dir;
    let expected = [
        "error: namespace.yaml (document 0) Namespace team.eu: metadata.name \"team.eu\": '.' is not allowed; a Namespace name must be a DNS-1123 label",
        "error: service.yaml (document 0) Service 1-api: metadata.name \"1-api\": \"1-api\" starts with '1', not a letter; a Service name must be a DNS-1035 label",
        "error: settings.yaml (document 0) ConfigMap Shop_Settings: metadata.name \"Shop_Settings\": upper-case 'S' is not allowed; a ConfigMap name must be a DNS-1123 subdomain",
        "3 validation error(s)",
    ];

    let plan = flotilla(vec!["plan".to_owned(), dir.display().to_string()]).await;
    let stderr = text(&plan.stderr);
    assert!(!plan.status.success());
    for line in expected {
        assert!(stderr.contains(line), "{stderr}\n!~ {line}");
    }

    let output = sync(dir, &ns, &["--app", &ns.name]).await;
    assert_refused_writing_nothing(&output, &expected, &ns).await;
    assert!(text(&output.stderr).contains("nothing was applied"));
}

#[tokio::test]
async fn an_object_the_server_rejects_fails_with_the_servers_message() {
    let ns = support::namespace(1, "rejected").await;
    let source = manifests(
        "web",
        &[(
            "deployment.yaml",
            "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: -1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
",
        )],
    );
    let dir = &source.dir;

    let output = sync(dir, &ns, &["--app", &ns.name, "-o", "json"]).await;
    assert!(!output.status.success());
    let state: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", text(&output.stderr)));
    let message = state["message"].as_str().unwrap_or_default();
    assert_eq!(state["phase"], "Failed", "{state:#}");
    assert!(
        message.contains(
            "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        ) && message.contains("(HTTP 422 Invalid)"),
        "{message}"
    );
    assert!(!message.contains("Status {"), "{message}");
    let deployments: Api<Deployment> = ns.api();
    assert_eq!(deployments.get_opt("web").await.expect("reading"), None);
    assert_eq!(
        config_maps(&ns).await,
        [format!("flotilla-operation-{}", ns.name)]
    );
}

#[tokio::test]
async fn a_missing_object_reads_as_the_servers_not_found() {
    let ns = support::namespace(1, "not-found").await;
    support::install_flotilla_crds(&ns.client).await;
    let output = flotilla(
        [
            "app",
            "sync",
            "missing",
            "-n",
            &ns.name,
            "--kubeconfig",
            &support::kubeconfig_path(1).display().to_string(),
        ]
        .map(str::to_owned)
        .to_vec(),
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim(),
        format!(
            "error: reading Application {}/missing: applications.flotilla.dev \"missing\" not found (HTTP 404 NotFound)",
            ns.name
        )
    );
    let apps: Api<flotilla_core::api::Application> = ns.api();
    let listed = apps.list(&ListParams::default()).await.expect("listing");
    assert!(listed.items.is_empty());
}

#[tokio::test]
async fn a_malformed_duration_names_the_flag_and_the_syntax() {
    let ns = support::namespace(1, "bad-duration").await;
    let source = manifests("web", &[("config.yaml", WEB_CONFIG)]);
    let dir = &source.dir;

    let output = sync(dir, &ns, &["--app", &ns.name, "--timeout", "1d"]).await;
    assert_refused_writing_nothing(
        &output,
        &["invalid value '1d' for '--timeout <TIMEOUT>': invalid duration \"1d\": unknown unit \"d\" (write numbers with units ns, us, ms, s, m or h, e.g. 1m30s, 1.5s or 500ms)"],
        &ns,
    )
    .await;

    let output = sync(dir, &ns, &["--app", &ns.name, "--timeout", "1m30s"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut names = config_maps(&ns).await;
    names.sort();
    assert_eq!(
        names,
        [
            format!("flotilla-operation-{}", ns.name),
            "web-config".to_owned()
        ]
    );
}

/// `flotilla ARGS...` with `KUBECONFIG` set to `files` joined by `:`, no `--kubeconfig`.
async fn with_kubeconfig_list(files: &[&Path], args: &[&str]) -> Output {
    let list = std::env::join_paths(files).expect("a path list");
    let mut command = Command::new(env!("CARGO_BIN_EXE_flotilla"));
    command
        .args(args)
        .env("KUBECONFIG", list)
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || command.output().expect("flotilla runs"))
        .await
        .expect("joined")
}

/// As kubectl: a `KUBECONFIG` list skips files that do not exist and merges the others, the
/// first file to set a value winning (current-context included); contexts of later files can
/// be chosen with `--context`; a server that cannot be reached is named with the file its
/// context came from, in one line.
#[tokio::test]
async fn a_kubeconfig_list_skips_missing_files_and_merges_the_rest_as_kubectl() {
    let ns = support::namespace(1, "kubeconfig-list").await;
    support::install_flotilla_crds(&ns.client).await;
    let work = tempfile::tempdir().expect("a temporary directory");
    let missing = work.path().join("missing.kubeconfig");
    let staging = work.path().join("staging.kubeconfig");
    let port = unreachable_kubeconfig(&staging);
    let real = support::kubeconfig_path(1);
    let list = ["get", "apps", "-n", &ns.name, "-o", "name"];

    // A missing file first: skipped, the real cluster's kubeconfig used.
    let apps: Api<flotilla_core::api::Application> = ns.api();
    let app: flotilla_core::api::Application = support::object(serde_json::json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": ns.name},
        "spec": {"project": "default", "source": {"repoURL": "file:///nowhere", "path": "web"},
                 "destination": {"name": "in-cluster", "namespace": ns.name}},
    }));
    support::apply(&apps, &app).await;
    let listed = with_kubeconfig_list(&[&missing, &real, &staging], &list).await;
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert_eq!(text(&listed.stdout), "application.flotilla.dev/web\n");

    // The first file that sets current-context wins: staging's, whose server is down.
    let down = with_kubeconfig_list(&[&missing, &staging, &real], &list).await;
    let stderr = text(&down.stderr);
    assert_eq!(down.status.code(), Some(3), "{stderr}");
    let expected = format!(
        "error: cannot reach the Kubernetes API server https://127.0.0.1:{port}/ (kubeconfig context \"staging-admin\" of {}): ",
        staging.display()
    );
    assert!(
        stderr.starts_with(&expected) && stderr.lines().count() == 1,
        "{stderr}\n!~ {expected}"
    );
    assert!(!stderr.contains("client error (Connect)"), "{stderr}");

    // A context of a later file is merged in and can be chosen.
    let chosen = [&list[..], &["--context", "staging-admin"]].concat();
    let chosen = with_kubeconfig_list(&[&real, &missing, &staging], &chosen).await;
    assert_eq!(chosen.status.code(), Some(3), "{}", text(&chosen.stderr));
    assert!(text(&chosen.stderr).contains(&format!("of {})", staging.display())));

    // Nothing listed exists: said, naming the files.
    let nothing = with_kubeconfig_list(&[&missing], &list).await;
    assert!(!nothing.status.success());
    assert!(
        text(&nothing.stderr).contains(&format!(
            "none of the files KUBECONFIG lists exists ({})",
            missing.display()
        )),
        "{}",
        text(&nothing.stderr)
    );
}

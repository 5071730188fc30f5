//! Config Management Plugins through the controller on the real control plane: plugins written
//! for the test (Argo CD `ConfigManagementPlugin` files in a plugins directory) render sources
//! of a bare repository served by `git daemon`. A plugin named by the Application (with a
//! version) runs its `init` then its shell `generate` in the checkout, and the ConfigMap it
//! prints carries the Application's `env` (`ARGOCD_ENV_*`, build variables expanded), its
//! parameters (`PARAM_*`, `ARGOCD_APP_PARAMETERS`), Argo CD's build variables and what `init`
//! left in the checkout. An Application naming no plugin gets the one whose `discover.fileName`
//! matches its path. A failing plugin is a ComparisonError naming the Application, the plugin,
//! the command and its stderr, and nothing is applied.

mod controller_support;
mod support;

use flotilla::source::Tools;
use flotilla_core::api::Application;
use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::{Value, json};

use controller_support::{Options, application_spec, setup, start_with};
use support::git_remote::{GitDaemon, Remote};
use support::{apply, object, wait_until};

/// A plugin that prints a ConfigMap of what it was given; found by `greeting*.txt`.
const GREETER: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: greeter
spec:
  version: v1
  init:
    command: [sh, -c]
    args: ['printf initialized > .init-done']
  generate:
    command: [sh, -c]
    args:
      - |
        set -e
        cat <<EOF
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: $ARGOCD_APP_NAME-greeting
        data:
          greeting: '$ARGOCD_ENV_GREETING'
          color: '${PARAM_COLOR:-blue}'
          first-size: '$PARAM_SIZES_0'
          tier: '$PARAM_LABELS_TIER'
          parameters: '$ARGOCD_APP_PARAMETERS'
          project: '$ARGOCD_APP_PROJECT_NAME'
          path: '$ARGOCD_APP_SOURCE_PATH'
          revision: '$ARGOCD_APP_REVISION'
          kube-version: '$KUBE_VERSION'
          file: '$(cat greeting.txt)'
          init: '$(cat .init-done)'
        EOF
  discover:
    fileName: "./greeting*.txt"
  parameters:
    static:
      - name: color
        string: blue
    dynamic:
      command: [sh, -c, 'echo "[{\"name\": \"sizes\", \"collectionType\": \"array\"}]"']
"#;

/// A plugin whose `generate` fails; no discovery rule (only named Applications use it).
const BROKEN: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: broken
spec:
  generate:
    command: [sh, -c, 'echo "secret store unreachable" >&2; exit 7']
"#;

/// The controller's tools with the plugins of a directory (as `--plugins-dir`), which is kept
/// while the test runs.
fn with_plugins() -> (tempfile::TempDir, Tools) {
    let dir = tempfile::tempdir().expect("a plugins directory");
    std::fs::write(dir.path().join("greeter.yaml"), GREETER).expect("writes");
    std::fs::write(dir.path().join("broken.yaml"), BROKEN).expect("writes");
    let plugins = flotilla::source::plugin::load_dir(dir.path()).expect("the plugins load");
    assert_eq!(plugins.len(), 2, "both plugins load");
    (
        dir,
        Tools {
            plugins,
            ..controller_support::tools()
        },
    )
}

/// An Application of `path` in `url` rendered by `plugin`, synced automatically into
/// `namespace`.
fn application(name: &str, namespace: &str, url: &str, plugin: Value) -> Application {
    let mut spec = application_spec(url, "apps/hello", namespace);
    spec["source"]["plugin"] = plugin;
    object(
        json!({"apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
                  "metadata": {"name": name}, "spec": spec}),
    )
}

/// The data of ConfigMap `name`, once it exists.
async fn data_of(api: &Api<ConfigMap>, name: &str) -> std::collections::BTreeMap<String, String> {
    wait_until(api, name, "the plugin's ConfigMap", |_| true)
        .await
        .data
        .unwrap_or_default()
}

#[tokio::test]
async fn plugins_render_sources_through_the_controller() {
    let (_plugins, tools) = with_plugins();
    let remote = Remote::new("plugin-source");
    remote.write("apps/hello/greeting.txt", "from the repository");
    let commit = remote.push("first");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let ns = setup("cmp").await;
    // The CRDs are shared with other tests' runs: installed again just before the writes.
    support::install_flotilla_crds(&ns.client).await;
    let apps: Api<Application> = ns.api();
    let named = json!({
        "name": "greeter-v1",
        "env": [{"name": "GREETING", "value": "hello $ARGOCD_APP_NAME at $$HOME"}],
        "parameters": [
            {"name": "color", "string": "red"},
            {"name": "sizes", "array": ["small", "large"]},
            {"name": "labels", "map": {"tier": "gold"}}
        ]
    });
    let discovered = json!({"env": [{"name": "GREETING", "value": "found"}]});
    for app in [
        application("hello", &ns.name, &url, named),
        application("found", &ns.name, &url, discovered),
        application("failing", &ns.name, &url, json!({"name": "broken"})),
    ] {
        apply(&apps, &app).await;
    }
    let stored = apps.get("hello").await.expect("stored");
    assert_eq!(
        stored.spec.source.plugin.map(|p| p.name),
        Some("greeter-v1".to_owned()),
        "the API server keeps source.plugin"
    );
    let controller = start_with(
        &ns,
        "cmp",
        Options {
            tools,
            ..Options::default()
        },
    );

    let configs = ns.api::<ConfigMap>();
    let data = data_of(&configs, "hello-greeting").await;
    let get = |key: &str| data.get(key).map(String::as_str).unwrap_or_default();
    assert_eq!(
        get("greeting"),
        "hello hello at $HOME",
        "ARGOCD_ENV_, expanded"
    );
    assert_eq!(get("color"), "red", "PARAM_COLOR");
    assert_eq!(get("first-size"), "small", "PARAM_SIZES_0");
    assert_eq!(get("tier"), "gold", "PARAM_LABELS_TIER");
    assert_eq!(
        get("parameters"),
        r#"[{"name":"color","string":"red"},{"array":["small","large"],"name":"sizes"},{"map":{"tier":"gold"},"name":"labels"}]"#,
        "ARGOCD_APP_PARAMETERS"
    );
    assert_eq!(get("project"), "default");
    assert_eq!(get("path"), "apps/hello");
    assert_eq!(get("revision"), commit);
    assert!(
        get("kube-version").starts_with("1."),
        "KUBE_VERSION: {:?}",
        get("kube-version")
    );
    assert_eq!(get("file"), "from the repository", "run in the checkout");
    assert_eq!(
        get("init"),
        "initialized",
        "init ran first, in the same copy"
    );
    let hello = wait_until(&apps, "hello", "hello synced", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
    })
    .await;
    let resources = hello.status.expect("a status").resources;
    assert!(
        resources.iter().any(|r| r.name == "hello-greeting"),
        "the ConfigMap is the Application's: {resources:?}"
    );

    let found = data_of(&configs, "found-greeting").await;
    assert_eq!(
        (found.get("greeting"), found.get("color")),
        (Some(&"found".to_owned()), Some(&"blue".to_owned())),
        "discovered by fileName; no parameters given"
    );

    let failing = wait_until(&apps, "failing", "failing's ComparisonError", |app| {
        app.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ApplicationConditionType::ComparisonError)
        })
    })
    .await;
    let status = failing.status.expect("a status");
    let message = &status.conditions[0].message;
    for part in [
        "Application failing",
        "plugin \"broken\" generate",
        "sh -c echo \"secret store unreachable\" >&2; exit 7",
        "exit status: 7",
        "secret store unreachable",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(status.operation_state.is_none(), "no sync was started");
    controller.stop().await;
}

//! The `flotilla app|appset|proj` commands as a CI pipeline runs them: the built binary, no
//! terminal, stdout and stderr captured, exit codes asserted. One shell pipeline creates an
//! Application from flags, requests its sync (the real controller, in this test process, syncs
//! it from a local git repository), waits until it is Healthy, prints its manifests and deletes
//! it with its resources; on the way its resources, live manifests and pods' logs are read.
//! Without a controller: a differing Application is refused without `--upsert`, `set` keeps the
//! fields it does not name, `-o name|json|yaml|wide` print their shapes, a wait times out with
//! 1, a missing Application, ApplicationSet or AppProject exits 20 naming it, and `appset
//! generate` renders a list generator, from a file or from the live ApplicationSet.

mod controller_support;
mod support;

use std::process::{Command, Output, Stdio};

use flotilla_core::api::Application;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::{Value, json};

use controller_support::{commit, repository, setup, start};
use support::{TestNamespace, eventually, run_flotilla};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A ConfigMap and a one-replica Deployment whose container prints two lines.
const MANIFESTS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  colour: blue\n---\n\
apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: pipeline-web}\n  \
template:\n    metadata:\n      labels: {app: pipeline-web}\n      annotations:\n        sim.flotilla.dev/log: \"listening on 8080\\nready\"\n    \
spec:\n      containers:\n        - name: web\n          image: registry.example.com/web:1\n";

/// `sh -c script` with `flotilla` on its PATH and the test's cluster as its kubeconfig, its
/// namespace in `$NS`: as a CI job runs it (no terminal, output captured).
async fn shell(ns: &TestNamespace, script: &str) -> Output {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_flotilla"));
    let path = format!(
        "{}:{}",
        binary.parent().expect("a directory").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", script])
        .env("PATH", path)
        .env("KUBECONFIG", support::kubeconfig_path(1))
        .env("NS", &ns.name)
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || command.output().expect("sh runs"))
        .await
        .expect("joined")
}

#[tokio::test]
async fn a_pipeline_creates_syncs_waits_for_reads_and_deletes_an_application() {
    let repo = repository();
    commit(repo.path(), &[("apps/web/app.yaml", MANIFESTS)], "web");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("cli-pipeline").await;
    support::require_node_sim(&ns.client, 1).await;
    let controller = start(&ns, "only");

    let created = shell(
        &ns,
        &format!(
            "set -e\n\
             flotilla app create web -n \"$NS\" --repo {url} --path apps/web --revision main \
               --dest-server https://kubernetes.default.svc --dest-namespace \"$NS\"\n\
             flotilla app sync web -n \"$NS\"\n\
             flotilla app wait web -n \"$NS\" --health --timeout 120s\n\
             flotilla app manifests web -n \"$NS\""
        ),
    )
    .await;
    let stdout = text(&created.stdout);
    assert_eq!(created.status.code(), Some(0), "{created:?}");
    assert!(stdout.contains("application 'web' created"), "{stdout}");
    assert!(
        stdout.contains("sync of Application web requested"),
        "{stdout}"
    );
    assert!(stdout.contains("Application web is ready"), "{stdout}");
    assert!(
        stdout.contains("kind: ConfigMap") && stdout.contains("kind: Deployment"),
        "{stdout}"
    );
    assert!(ns.api::<ConfigMap>().get("web-config").await.is_ok());

    // The same create again changes nothing; the managed objects, their live manifests and the
    // pod's log can be read.
    let again = shell(
        &ns,
        &format!(
            "flotilla app create web -n \"$NS\" --repo {url} --path apps/web --revision main \
               --dest-server https://kubernetes.default.svc --dest-namespace \"$NS\""
        ),
    )
    .await;
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert_eq!(text(&again.stdout), "application 'web' unchanged\n");
    let resources = run_flotilla(&ns, &["app", "resources", "web", "-o", "name"]).await;
    assert_eq!(
        text(&resources.stdout),
        "configmap/web-config\ndeployment.apps/web\n",
        "{resources:?}"
    );
    let live = run_flotilla(
        &ns,
        &["app", "manifests", "web", "--source", "live", "-o", "json"],
    )
    .await;
    let objects: Vec<Value> = serde_json::from_slice(&live.stdout).expect("a JSON list");
    assert_eq!(objects.len(), 2, "{live:?}");
    assert_eq!(objects[0]["data"]["colour"], "blue");
    assert!(
        objects[1]["status"].is_object(),
        "live objects have a status"
    );
    let logs = eventually("the pod's log", async || {
        let logs = run_flotilla(&ns, &["app", "logs", "web", "--kind", "Deployment"]).await;
        let out = text(&logs.stdout);
        if logs.status.success() && out == "listening on 8080\nready\n" {
            Ok(out)
        } else {
            Err(format!("{logs:?}"))
        }
    })
    .await;
    assert_eq!(logs, "listening on 8080\nready\n");
    let tail = run_flotilla(&ns, &["app", "logs", "web", "--tail", "1"]).await;
    assert_eq!(text(&tail.stdout), "ready\n", "{tail:?}");

    let deleted = shell(
        &ns,
        "flotilla app delete web -n \"$NS\" --wait --timeout 120s",
    )
    .await;
    assert_eq!(deleted.status.code(), Some(0), "{deleted:?}");
    assert_eq!(
        text(&deleted.stdout),
        "application 'web' and its resources deleted\n"
    );
    assert!(
        ns.api::<Application>()
            .get_opt("web")
            .await
            .unwrap()
            .is_none(),
        "the Application is gone"
    );
    assert!(
        ns.api::<ConfigMap>()
            .get_opt("web-config")
            .await
            .unwrap()
            .is_none(),
        "its resources went with it"
    );
    let gone = run_flotilla(&ns, &["app", "wait", "web"]).await;
    assert_eq!(gone.status.code(), Some(20), "{gone:?}");
    controller.stop().await;
}

const CREATE: &[&str] = &[
    "app",
    "create",
    "shop",
    "--repo",
    "https://git.example/shop.git",
    "--path",
    "charts/shop",
    "--revision",
    "v1",
    "--dest-name",
    "in-cluster",
    "--dest-namespace",
    "shop",
    "--helm-set",
    "replicas=2",
    "--values",
    "prod.yaml",
    "--sync-option",
    "CreateNamespace=true",
];

#[tokio::test]
async fn create_set_unset_and_the_output_shapes_without_a_controller() {
    let ns = setup("cli-pipeline-set").await;
    let apps: Api<Application> = ns.api();

    let created = run_flotilla(&ns, &[CREATE, &["-o", "name"]].concat()).await;
    assert_eq!(created.status.code(), Some(0), "{created:?}");
    assert_eq!(text(&created.stdout), "application.flotilla.dev/shop\n");

    // A differing create is refused, and changes nothing, unless --upsert.
    let differing: Vec<&str> = CREATE
        .iter()
        .map(|arg| if *arg == "v1" { "v9" } else { arg })
        .collect();
    let refused = run_flotilla(&ns, &differing).await;
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        text(&refused.stderr).contains("Application shop exists and its spec differs"),
        "{refused:?}"
    );
    assert_eq!(
        apps.get("shop").await.unwrap().spec.source.target_revision,
        "v1"
    );
    let upserted = run_flotilla(&ns, &[differing.as_slice(), &["--upsert"]].concat()).await;
    assert_eq!(text(&upserted.stdout), "application 'shop' updated\n");

    // set changes what it names and keeps every other field, including one set by someone
    // else (a label, an annotation) since.
    let label = json!({"metadata": {"labels": {"team": "payments"}}});
    apps.patch(
        "shop",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(label),
    )
    .await
    .unwrap();
    let before = apps.get("shop").await.unwrap();
    let set = run_flotilla(
        &ns,
        &[
            "app",
            "set",
            "shop",
            "--revision",
            "v2",
            "--helm-set",
            "image.tag=2",
            "--sync-policy",
            "automated",
            "--self-heal",
        ],
    )
    .await;
    assert_eq!(text(&set.stdout), "application 'shop' updated\n", "{set:?}");
    let after = apps.get("shop").await.unwrap();
    let mut expected = before.spec.clone();
    expected.source.target_revision = "v2".into();
    let helm = expected.source.helm.as_mut().unwrap();
    helm.parameters
        .push(serde_json::from_value(json!({"name": "image.tag", "value": "2"})).unwrap());
    expected.sync_policy.as_mut().unwrap().automated =
        Some(serde_json::from_value(json!({"selfHeal": true})).unwrap());
    assert_eq!(after.spec, expected);
    assert_eq!(after.metadata.labels, before.metadata.labels);
    let helm = after.spec.source.helm.as_ref().unwrap();
    assert_eq!(helm.value_files, ["prod.yaml"]);
    assert_eq!(helm.parameters[0].value, "2");

    let unset = run_flotilla(
        &ns,
        &[
            "app",
            "unset",
            "shop",
            "-p",
            "replicas",
            "--values",
            "prod.yaml",
        ],
    )
    .await;
    assert!(unset.status.success(), "{unset:?}");
    let helm = apps.get("shop").await.unwrap().spec.source.helm.unwrap();
    assert_eq!(helm.value_files, Vec::<String>::new());
    assert_eq!(helm.parameters.len(), 1);

    // The output shapes.
    let json_out = run_flotilla(&ns, &["app", "get", "shop", "-o", "json"]).await;
    let object: Value = serde_json::from_slice(&json_out.stdout).expect("one JSON object");
    assert_eq!(object["spec"]["source"]["targetRevision"], "v2");
    let yaml_out = run_flotilla(&ns, &["app", "get", "shop", "-o", "yaml"]).await;
    assert!(
        text(&yaml_out.stdout).contains("kind: Application\n"),
        "{yaml_out:?}"
    );
    let wide = run_flotilla(&ns, &["app", "list", "-o", "wide"]).await;
    let table = text(&wide.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("DESTINATION"),
        "{table}"
    );
    assert!(
        lines[1].contains("in-cluster") && lines[1].contains("charts/shop"),
        "{table}"
    );
    let names = run_flotilla(&ns, &["app", "list", "-o", "name"]).await;
    assert_eq!(text(&names.stdout), "application.flotilla.dev/shop\n");

    // A wait that times out exits 1 and says what it waited for.
    let waited = run_flotilla(&ns, &["app", "wait", "shop", "--sync", "--timeout", "1s"]).await;
    assert_eq!(waited.status.code(), Some(1), "{waited:?}");
    assert!(
        text(&waited.stderr).contains("timed out after 1s waiting for Application shop"),
        "{waited:?}"
    );

    // Deleting without cascade leaves the resources finalizer off, and the Application goes.
    let deleted = run_flotilla(
        &ns,
        &[
            "app",
            "delete",
            "shop",
            "--cascade=false",
            "--wait",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(deleted.status.code(), Some(0), "{deleted:?}");
    assert_eq!(text(&deleted.stdout), "application.flotilla.dev/shop\n");
}

#[tokio::test]
async fn what_does_not_exist_exits_20_naming_it() {
    let ns = setup("cli-pipeline-missing").await;
    for args in [
        &["app", "get", "ghost"][..],
        &["app", "wait", "ghost", "--timeout", "1s"],
        &["app", "delete", "ghost"],
        &["app", "set", "ghost", "--revision", "v2"],
        &["app", "sync", "ghost"],
        &["app", "manifests", "ghost"],
        &["appset", "get", "ghost"],
        &["appset", "generate", "ghost"],
        &["appset", "delete", "ghost"],
        &["proj", "get", "ghost"],
    ] {
        let out = run_flotilla(&ns, args).await;
        assert_eq!(out.status.code(), Some(20), "{args:?}: {out:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("ghost"), "{args:?}: {stderr}");
    }
    let out = run_flotilla(&ns, &["app", "get", "ghost"]).await;
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: Application ghost does not exist in namespace {}\n",
            ns.name
        )
    );
}

#[tokio::test]
async fn appsets_and_projects_are_listed_shown_generated_and_deleted() {
    let ns = setup("cli-pipeline-appset").await;
    support::permissive_project(&ns, "platform").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("appset.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: flotilla.dev/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: tiers\n  namespace: {ns}\n\
             spec:\n  generators:\n    - list:\n        elements:\n          - tier: db\n          - tier: web\n  \
             template:\n    metadata:\n      name: 'shop-{{{{tier}}}}'\n    spec:\n      project: platform\n      \
             source: {{repoURL: 'https://git.example/shop.git', path: 'tiers/{{{{tier}}}}', targetRevision: main}}\n      \
             destination: {{server: 'https://kubernetes.default.svc', namespace: shop}}\n",
            ns = ns.name
        ),
    )
    .unwrap();
    let path = file.to_str().unwrap();

    let generated = run_flotilla(&ns, &["appset", "generate", path, "-o", "name"]).await;
    assert_eq!(generated.status.code(), Some(0), "{generated:?}");
    assert_eq!(
        text(&generated.stdout),
        "application.flotilla.dev/shop-db\napplication.flotilla.dev/shop-web\n"
    );
    let table = run_flotilla(&ns, &["appset", "generate", path, "-o", "table"]).await;
    let table = text(&table.stdout);
    assert!(
        table.lines().nth(1).unwrap().contains("tiers/db"),
        "{table}"
    );

    let applied = Command::new(support::kubectl())
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(["apply", "-f", path])
        .output()
        .unwrap();
    assert!(applied.status.success(), "{applied:?}");
    let live = run_flotilla(&ns, &["appset", "generate", "tiers", "-o", "name"]).await;
    assert_eq!(live.stdout, generated.stdout, "{live:?}");
    let listed = run_flotilla(&ns, &["appset", "list", "-o", "name"]).await;
    assert_eq!(
        text(&listed.stdout),
        "applicationset.flotilla.dev/tiers\n",
        "{listed:?}"
    );
    let shown = run_flotilla(&ns, &["appset", "get", "tiers", "-o", "json"]).await;
    let object: Value = serde_json::from_slice(&shown.stdout).expect("one JSON object");
    assert_eq!(object["metadata"]["name"], "tiers");
    let wide = run_flotilla(&ns, &["appset", "get", "tiers", "-o", "wide"]).await;
    assert!(
        text(&wide.stdout)
            .starts_with("NAME   STRATEGY   APPS  HEALTHY  ROLLOUT  ERROR  GENERATORS  STEPS\n"),
        "{wide:?}"
    );

    let projects = run_flotilla(&ns, &["proj", "list"]).await;
    let table = text(&projects.stdout);
    assert_eq!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["platform", "*", "*,*"],
        "{table}"
    );
    let project = run_flotilla(&ns, &["proj", "get", "platform", "-o", "yaml"]).await;
    assert!(
        text(&project.stdout).contains("sourceRepos:\n"),
        "{project:?}"
    );

    let deleted = run_flotilla(&ns, &["appset", "delete", "tiers", "--wait"]).await;
    assert_eq!(deleted.status.code(), Some(0), "{deleted:?}");
    assert_eq!(text(&deleted.stdout), "applicationset 'tiers' deleted\n");
}

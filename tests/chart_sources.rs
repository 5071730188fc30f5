//! Helm charts beyond a chart directory, with the real helm and kubectl (tests/tools/install.sh)
//! and real servers on loopback: chart dependencies built from a chart repository once per
//! commit (vendored ones without network; an unreachable repository named in the error), a
//! chart repository whose index sends the archives to another host (`passCredentials`), charts
//! from an OCI registry (Debian's `docker-registry` behind a password, both `oci://` and Argo
//! CD's `enableOCI` form, version ranges), and a kustomization inflating a chart whose
//! `.Capabilities` show `kustomize.kubeVersion` and `apiVersions`. Repository credentials are
//! `type: helm` Secrets on the real API server, read through the controller's watch. Through the
//! controller: the OCI chart and a git chart with a built dependency deploy, and a chart whose
//! dependency repository is unreachable fails the compare naming the Application, with
//! nothing applied.

mod controller_support;
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flotilla::cluster::watches::watched_secrets::WatchedSecrets;
use flotilla::repo::LocalRepos;
use flotilla::repo::cache::{Manifests, RepoCache};
use flotilla::source::{SourceOptions, generate};
use flotilla_core::api::Application;
use flotilla_core::api::application::ApplicationSource;
use flotilla_core::api::helm_source::HelmSource;
use flotilla_core::api::kustomize_source::KustomizeSource;
use flotilla_core::manifest::Resource;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use serde_json::{Value, json};
use support::chart_repository::ChartRepository;
use support::fixture_dir::copy_dir;
use support::git_remote::{GitDaemon, Remote};
use support::oci_registry::OciRegistry;
use support::{apply, object, wait_until};

const PASSWORD: &str = "pw-Hc4r7Tq9Ws";
const WRONG_PASSWORD: &str = "pw-wrong-Nb6Yd3";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sources")
}

/// The objects generated at `manifests`, as the Application `orders` into `prod`.
fn objects(manifests: &Manifests, source: &ApplicationSource) -> Vec<Resource> {
    let options = SourceOptions {
        revision: manifests.revision.clone(),
        ..SourceOptions::of(source, Default::default(), "orders", Some("prod"))
    };
    let (resources, errors) = generate(&Default::default(), &manifests.root, &options);
    assert!(errors.is_empty(), "{errors:#?}");
    resources
}

fn find<'a>(resources: &'a [Resource], kind: &str, name: &str) -> &'a Value {
    let found = resources
        .iter()
        .find(|r| r.kind == kind && r.name.as_str() == name);
    &found
        .unwrap_or_else(|| panic!("no {kind} {name} in {resources:#?}"))
        .body
}

/// A git source of `path` in `url` at `main`, with `helm` options.
fn git_source(url: &str, path: &str, helm: Option<HelmSource>) -> ApplicationSource {
    ApplicationSource {
        repo_url: url.into(),
        target_revision: "main".into(),
        path: path.into(),
        helm: helm.map(Box::new),
        ..ApplicationSource::default()
    }
}

/// A chart source `db` of `url` at `version`.
fn chart_source(url: &str, version: &str, pass_credentials: bool) -> ApplicationSource {
    ApplicationSource {
        repo_url: url.into(),
        target_revision: version.into(),
        chart: "db".into(),
        helm: Some(Box::new(HelmSource {
            pass_credentials,
            ..HelmSource::default()
        })),
        ..ApplicationSource::default()
    }
}

/// Writes the fixture chart `app` to `path` in `remote`, its dependency `db` from `repository`.
fn write_app_chart(remote: &Remote, path: &str, repository: &str) {
    let chart = remote.work().join(path);
    std::fs::create_dir_all(&chart).unwrap();
    copy_dir(&fixtures().join("charts/app"), &chart);
    let metadata = std::fs::read_to_string(chart.join("Chart.yaml")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        metadata.replace("REPOSITORY_URL", repository),
    )
    .unwrap();
}

/// `source` read by `repos` off the async workers (credentials are read through a watch).
async fn read(repos: &Arc<RepoCache>, source: &ApplicationSource) -> Result<Manifests, String> {
    let (repos, source) = (Arc::clone(repos), source.clone());
    tokio::task::spawn_blocking(move || repos.source(&source, "", None).map_err(|e| e.to_string()))
        .await
        .expect("joined")
}

/// A repository Secret for `url` with `fields` besides its URL.
fn repository_secret(name: &str, url: &str, fields: Value) -> Secret {
    let mut data = json!({"type": "helm", "url": url});
    data.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    object(json!({
        "metadata": {"name": name, "labels": {"argocd.argoproj.io/secret-type": "repository"}},
        "stringData": data
    }))
}

/// A cache reading credentials from the repository Secrets of a fresh namespace holding
/// `secrets`.
async fn cache_with_secrets(
    label: &str,
    secrets: &[Secret],
) -> (Arc<RepoCache>, tempfile::TempDir) {
    let ns = support::namespace(1, label).await;
    for secret in secrets {
        apply(&ns.api::<Secret>(), secret).await;
    }
    let cache = tempfile::tempdir().unwrap();
    let credentials = WatchedSecrets::repository_credentials(ns.client.clone(), &ns.name);
    let repos = RepoCache::new(cache.path(), LocalRepos::default(), Default::default())
        .with_credentials(Arc::new(credentials), None);
    (Arc::new(repos), cache)
}

#[tokio::test]
async fn chart_dependencies_are_built_once_and_vendored_ones_need_no_network() {
    let charts = ChartRepository::start(&["0.1.0", "0.1.4", "0.2.0"]);
    let remote = Remote::new("dependencies");
    write_app_chart(&remote, "app", &charts.server.url());
    // Vendored: `charts/db` is there, its repository a closed port.
    write_app_chart(&remote, "vendored", "http://127.0.0.1:9");
    let vendored_db = remote.work().join("vendored/charts/db");
    std::fs::create_dir_all(&vendored_db).unwrap();
    copy_dir(&fixtures().join("charts/db"), &vendored_db);
    // Missing, from a repository nobody serves.
    let closed = support::git_remote::free_port();
    write_app_chart(
        &remote,
        "unreachable",
        &format!("http://127.0.0.1:{closed}"),
    );
    let commit = remote.push("charts with dependencies");
    let cache = tempfile::tempdir().unwrap();
    let repos = Arc::new(RepoCache::new(
        cache.path(),
        LocalRepos::default(),
        Default::default(),
    ));
    let url = remote.file_url();

    let app = git_source(&url, "app", None);
    let built = read(&repos, &app).await.expect("dependencies built");
    assert_eq!(built.revision.as_deref(), Some(commit.as_str()));
    assert!(
        built.root.starts_with(cache.path().join("built")),
        "a copy beside the tree: {}",
        built.root.display()
    );
    let resources = objects(&built, &app);
    find(&resources, "StatefulSet", "orders-db");
    let app_config = find(&resources, "ConfigMap", "orders-app");
    assert_eq!(app_config["data"]["dependencies"], "1");
    let archives: Vec<String> = std::fs::read_dir(built.root.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(archives, ["db-0.1.4.tgz"], "the newest in ~0.1");
    let tree = std::fs::read_dir(cache.path().join("trees"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(
        !tree.join(&commit).join("app/charts").exists(),
        "the commit's tree is not written"
    );

    // Steady state: the repository gone, the kept build serves (helm is not run again).
    drop(charts);
    let again = read(&repos, &app).await.expect("the kept build");
    assert_eq!(again, built);

    let vendored = git_source(&url, "vendored", None);
    let manifests = read(&repos, &vendored).await.expect("vendored");
    assert!(
        manifests.root.starts_with(cache.path().join("trees")),
        "used in place: {}",
        manifests.root.display()
    );
    find(&objects(&manifests, &vendored), "StatefulSet", "orders-db");

    let error = read(&repos, &git_source(&url, "unreachable", None))
        .await
        .unwrap_err();
    assert!(
        error.starts_with(&format!(
            "repository {url} at {commit}: chart \"unreachable\": dependencies: `"
        )),
        "{error}"
    );
    assert!(error.contains("dependency build"), "the command: {error}");
    assert!(
        error.contains(&format!("127.0.0.1:{closed}")) && error.contains("connection refused"),
        "helm's message: {error}"
    );
}

#[tokio::test]
async fn pass_credentials_sends_the_password_where_the_index_points() {
    let charts = ChartRepository::start_split_with_password(&["0.1.0"], "deploy", PASSWORD);
    let url = charts.server.url();
    let secret = repository_secret(
        "split-charts",
        &url,
        json!({"username": "deploy", "password": PASSWORD}),
    );
    let (repos, _cache) = cache_with_secrets("pass-credentials", &[secret]).await;

    let refused = read(&repos, &chart_source(&url, "0.1.0", false))
        .await
        .unwrap_err();
    assert!(
        refused.contains("401"),
        "the archive host asks too: {refused}"
    );
    assert!(!refused.contains(PASSWORD), "{refused}");
    let source = chart_source(&url, "0.1.0", true);
    let pulled = read(&repos, &source).await.expect("passCredentials");
    find(&objects(&pulled, &source), "StatefulSet", "orders-db");

    // The same for a dependency of a chart in git, its repository's Secret used.
    let remote = Remote::new("split-dependencies");
    write_app_chart(&remote, "app", &url);
    remote.push("a dependency behind a password");
    let without = git_source(&remote.file_url(), "app", None);
    let refused = read(&repos, &without).await.unwrap_err();
    assert!(refused.contains("401"), "{refused}");
    assert!(!refused.contains(PASSWORD), "{refused}");
    let with = git_source(
        &remote.file_url(),
        "app",
        Some(HelmSource {
            pass_credentials: true,
            ..HelmSource::default()
        }),
    );
    let built = read(&repos, &with).await.expect("built with the Secret");
    find(&objects(&built, &with), "StatefulSet", "orders-db");
}

#[tokio::test]
async fn charts_of_an_oci_registry_behind_a_password() {
    let registry = OciRegistry::start(&["0.1.0", "0.1.7", "0.2.0"], "deploy", PASSWORD);
    let oci_url = registry.url();
    // Argo CD's form: the URL without a scheme, the Secret enabling OCI; on another name of
    // the same host, a wrong password.
    let bare_url = format!(
        "localhost:{}/charts",
        registry.host.rsplit(':').next().unwrap()
    );
    let plain_url = format!("{}/charts", registry.host);
    let secrets = [
        repository_secret(
            "registry",
            &oci_url,
            json!({"username": "deploy", "password": PASSWORD, "insecureOCIForceHttp": "true"}),
        ),
        repository_secret(
            "registry-argo-cd",
            &plain_url,
            json!({"username": "deploy", "password": PASSWORD, "enableOCI": "true",
                   "insecureOCIForceHttp": "true"}),
        ),
        repository_secret(
            "registry-wrong",
            &bare_url,
            json!({"username": "deploy", "password": WRONG_PASSWORD, "enableOCI": "true",
                   "insecureOCIForceHttp": "true"}),
        ),
    ];
    let (repos, cache) = cache_with_secrets("oci-registry", &secrets).await;

    for (url, range, expected) in [
        (&oci_url, "~0.1", "0.1.7"),
        (&oci_url, "0.1.0", "0.1.0"),
        (&plain_url, "", "0.2.0"),
    ] {
        let source = chart_source(url, range, false);
        let pulled = read(&repos, &source)
            .await
            .unwrap_or_else(|error| panic!("{url} at {range:?}: {error}"));
        assert_eq!(
            pulled.revision.as_deref(),
            Some(expected),
            "{url} {range:?}"
        );
        find(&objects(&pulled, &source), "StatefulSet", "orders-db");
    }

    let wrong = read(&repos, &chart_source(&bare_url, "0.1.0", false))
        .await
        .unwrap_err();
    assert!(
        wrong.starts_with(&format!("chart repository {bare_url}: ")),
        "{wrong}"
    );
    assert!(wrong.contains("registry login"), "{wrong}");
    assert!(wrong.contains("401"), "{wrong}");
    assert!(!wrong.contains(WRONG_PASSWORD), "{wrong}");

    let anonymous = RepoCache::new(
        cache.path().join("anonymous"),
        LocalRepos::default(),
        Default::default(),
    );
    let refused = anonymous
        .chart(&oci_url, "db", "0.1.0", None, false)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("authorization") || refused.contains("401"),
        "the registry checks the password: {refused}"
    );
}

#[test]
fn a_kustomization_inflates_a_chart_with_the_capabilities_given() {
    let root = fixtures().join("kustomize/inflate");
    let before = std::fs::read_dir(&root).unwrap().count();
    let generated = |kustomize: KustomizeSource| {
        let options = SourceOptions {
            kustomize: Some(kustomize),
            application: "orders".into(),
            namespace: Some("prod".into()),
            ..SourceOptions::default()
        };
        let (resources, errors) = generate(&Default::default(), &root, &options);
        assert!(errors.is_empty(), "{errors:#?}");
        find(&resources, "ConfigMap", "inflated-capabilities")["data"].clone()
    };
    let given = generated(KustomizeSource {
        kube_version: "1.29.3".into(),
        api_versions: vec!["monitoring.coreos.com/v1".into()],
        ..KustomizeSource::default()
    });
    assert_eq!(given["kubeVersion"], "v1.29.3");
    assert_eq!(given["monitoring"], "true");
    let defaults = generated(KustomizeSource::default());
    assert_ne!(defaults["kubeVersion"], "v1.29.3");
    assert_eq!(defaults["monitoring"], "false");
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        before,
        "nothing written into the source"
    );
}

/// An Application `name` of `source`, synced automatically into `namespace`.
fn application(name: &str, namespace: &str, source: &ApplicationSource) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": source,
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }))
}

/// The messages of the Application's conditions.
fn conditions(app: &Application) -> String {
    app.status
        .as_ref()
        .map(|status| {
            let messages: Vec<&str> = status
                .conditions
                .iter()
                .map(|c| c.message.as_str())
                .collect();
            messages.join("\n")
        })
        .unwrap_or_default()
}

/// Waits until Application `name`'s sync of `revision` Succeeded.
async fn synced_at(apps: &Api<Application>, name: &str, revision: &str) {
    wait_until(apps, name, &format!("{name} synced at {revision}"), |app| {
        let status = app.status.as_ref();
        status
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
            && status
                .and_then(|s| s.sync.as_ref())
                .is_some_and(|s| s.revision == revision)
    })
    .await;
}

#[tokio::test]
async fn oci_charts_and_dependencies_deploy_through_the_controller() {
    let registry = OciRegistry::start(&["0.1.0", "0.1.2"], "deploy", PASSWORD);
    let charts = ChartRepository::start(&["0.1.0", "0.1.1"]);
    let remote = Remote::new("chart-sources");
    write_app_chart(&remote, "app", &charts.server.url());
    let closed = support::git_remote::free_port();
    write_app_chart(
        &remote,
        "unreachable",
        &format!("http://127.0.0.1:{closed}"),
    );
    let commit = remote.push("charts with dependencies");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());

    let ns = controller_support::setup("chart-sources").await;
    support::require_node_sim(&ns.client, 1).await;
    let secret = repository_secret(
        "registry",
        &registry.url(),
        json!({"username": "deploy", "password": PASSWORD, "insecureOCIForceHttp": "true"}),
    );
    apply(&ns.api::<Secret>(), &secret).await;
    let apps: Api<Application> = ns.api();
    let mut from_registry = chart_source(&registry.url(), "~0.1", false);
    from_registry.helm = Some(Box::new(HelmSource {
        values: "greeting: ahoj".into(),
        ..HelmSource::default()
    }));
    apply(&apps, &application("registry", &ns.name, &from_registry)).await;
    apply(
        &apps,
        &application("with-dependency", &ns.name, &git_source(&url, "app", None)),
    )
    .await;
    apply(
        &apps,
        &application(
            "unreachable",
            &ns.name,
            &git_source(&url, "unreachable", None),
        ),
    )
    .await;
    let controller = controller_support::start(&ns, "chart-sources");

    synced_at(&apps, "registry", "0.1.2").await;
    let config = ns
        .api::<ConfigMap>()
        .get("registry-config")
        .await
        .expect("the OCI chart's release");
    assert_eq!(
        config
            .data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("ahoj")
    );
    synced_at(&apps, "with-dependency", &commit).await;
    ns.api::<ConfigMap>()
        .get("with-dependency-app")
        .await
        .expect("the chart's own object");
    ns.api::<StatefulSet>()
        .get("with-dependency-db")
        .await
        .expect("the dependency's object");

    let refused = wait_until(&apps, "unreachable", "the compare failed", |app| {
        conditions(app).contains("connection refused")
    })
    .await;
    let message = conditions(&refused);
    assert!(
        message.contains("Application unreachable"),
        "names the Application: {message}"
    );
    assert!(
        message.contains("dependency build"),
        "the command: {message}"
    );
    assert!(
        message.contains(&format!("127.0.0.1:{closed}")),
        "helm's message: {message}"
    );
    for name in ["unreachable-app", "unreachable-config"] {
        assert!(
            ns.api::<ConfigMap>().get_opt(name).await.unwrap().is_none(),
            "nothing of {name} applied"
        );
    }
    assert!(
        refused
            .status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_none(),
        "no sync ran: {:#?}",
        refused.status
    );
    controller.stop().await;
}

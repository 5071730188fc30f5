//! Helpers for the `tests/controller_*.rs` integration tests: the controller (both reconcilers,
//! one Lease) run in-process on cluster 1 for a fresh namespace, stopped gracefully or killed,
//! and local git repositories to sync from.
// Each integration test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use flotilla::cluster::destinations::clients::plain_connect;
use flotilla::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP;
use flotilla::cluster::watches::watched_secrets::WatchedSecrets;
use flotilla::controller::application::ApplicationContext;
use flotilla::controller::appset::AppSetContext;
use flotilla::controller::leases::lease_lock::{LeaseConfig, LeaseLock};
use flotilla::controller::leases::readiness::Readiness;
use flotilla::controller::runtime::metrics::Metrics;
use flotilla::controller::runtime::namespace_controllers::{
    ApplicationControllers, ApplicationSetControllers,
};
use flotilla::repo::LocalRepos;
use flotilla::repo::cache::RepoCache;
use flotilla::source::{Toolchain, Tools};
use flotilla::sync::execute::ExecuteSettings;
use flotilla_core::controller::leader::LeaseTiming;
use flotilla_core::health::HealthDefaults;

use flotilla_core::api::{Application, ApplicationSet};
use serde_json::{Value, json};

use crate::support::{self, TestNamespace};

/// How often the test controllers compare Applications without a change.
pub const RESYNC: Duration = Duration::from_secs(2);

/// A controller running in this test process.
pub struct Running {
    pub metrics: Arc<Metrics>,
    /// Ready once its Lease was read (what `/readyz` reports).
    pub readiness: Readiness,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
    _cache: tempfile::TempDir,
}

impl Running {
    /// Stops it gracefully (it releases the Lease) and waits until it has.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.expect("the controller task ends cleanly");
    }

    /// Ends it as a killed process would: nothing is finished or released.
    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// A namespace of cluster 1 with the CRDs installed.
pub async fn setup(label: &str) -> TestNamespace {
    let ns = support::namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    ns
}

/// Starts a controller for the namespace with a short Lease and resync.
pub fn start(ns: &TestNamespace, identity: &str) -> Running {
    start_with(ns, identity, Options::default())
}

/// How a test's controller is configured, each field as a flag of `flotilla controller` sets it;
/// [`Options::default`] is [`start`]'s.
pub struct Options {
    /// One fetch of a repository serves every resolve for this long (`--repo-refresh`); zero
    /// fetches on every resolve, so a pushed commit is seen at once.
    pub refresh: Duration,
    /// Applications without a change are compared again this often (`--app-resync`): what is
    /// seen sooner is seen from the watches.
    pub resync: Duration,
    /// The health flags (`--resource-customizations-dir`, `--health-status-grace`).
    pub health: HealthDefaults,
    /// How sync operations run (`--sync-timeout`, `--sync-wave-delay`).
    pub settings: ExecuteSettings,
    /// The tools manifests are generated with (the tool flags, `--plugins-dir`).
    pub tools: Tools,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            refresh: Duration::ZERO,
            resync: RESYNC,
            health: HealthDefaults::default(),
            settings: ExecuteSettings::default(),
            tools: tools(),
        }
    }
}

/// Starts a controller for the namespace configured by `options`.
pub fn start_with(ns: &TestNamespace, identity: &str, options: Options) -> Running {
    let Options {
        refresh,
        resync,
        health,
        settings,
        tools,
    } = options;
    let metrics = Arc::new(Metrics::default());
    let cache = tempfile::tempdir().expect("a repository cache directory");
    // One cache for both controllers, as `flotilla controller` has.
    // Repository credentials from the namespace's Secrets, as `flotilla controller` reads them.
    let credentials = WatchedSecrets::repository_credentials(ns.client.clone(), &ns.name);
    let repos = Arc::new(
        RepoCache::new(
            cache.path(),
            LocalRepos::default(),
            Arc::new(Toolchain::new(tools)),
        )
        .with_fetch_reuse(refresh)
        .with_credentials(Arc::new(credentials), None),
    );
    let applications = {
        let (client, namespace) = (ns.client.clone(), ns.name.clone());
        let (repos, metrics) = (Arc::clone(&repos), Arc::clone(&metrics));
        ApplicationControllers::new(
            tokio::sync::watch::channel(vec![ns.name.clone()]).1,
            Box::new(move |_: &str| {
                ApplicationContext::new(
                    client.clone(),
                    plain_connect(),
                    namespace.clone(),
                    Arc::clone(&repos),
                    resync,
                    Arc::clone(&metrics),
                )
                .with_settings_config_map(DEFAULT_CONFIG_MAP, health.clone())
                .with_execute_settings(settings.clone())
            }),
        )
    };
    let appsets = {
        let (client, namespace, metrics) =
            (ns.client.clone(), ns.name.clone(), Arc::clone(&metrics));
        ApplicationSetControllers::new(
            tokio::sync::watch::channel(vec![ns.name.clone()]).1,
            Box::new(move |_: &str| {
                AppSetContext::new(
                    client.clone(),
                    plain_connect(),
                    namespace.clone(),
                    Arc::clone(&repos),
                    Duration::from_secs(180),
                    Arc::clone(&metrics),
                )
            }),
        )
    };
    let lease = LeaseLock::new(
        ns.client.clone(),
        &ns.name,
        LeaseConfig {
            name: "flotilla-controller".into(),
            identity: identity.into(),
            timing: LeaseTiming::new(
                Duration::from_secs(2),
                Duration::from_millis(1500),
                Duration::from_millis(300),
            )
            .expect("valid Lease timings"),
        },
    );
    let readiness = lease.readiness();
    let for_lead = Arc::clone(&metrics);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        flotilla::controller::run(for_lead, appsets, applications, lease, async {
            let _ = stopped.await;
        })
        .await
        .expect("the Lease is released");
    });
    Running {
        metrics,
        readiness,
        stop,
        task,
        _cache: cache,
    }
}

/// The tools of a controller of this test process, as `flotilla controller` has them, but for
/// the binary that evaluates Jsonnet: the controller runs in this test binary, which has no
/// `jsonnet-eval`.
#[must_use]
pub fn tools() -> Tools {
    Tools {
        flotilla: env!("CARGO_BIN_EXE_flotilla").into(),
        ..Tools::default()
    }
}

/// Runs `git` in `dir` with a fixed identity.
pub fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Writes `files` (path → content) into `repo` and commits them; returns the commit.
pub fn commit(repo: &Path, files: &[(&str, &str)], message: &str) -> String {
    for (path, content) in files {
        let target = repo.join(path);
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("creating directories");
        std::fs::write(target, content).expect("writing a file");
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Commits `apps/<name>/app.yaml` with `manifests(name, version)` for each of `names`, with
/// `version` as the message; returns the commit.
pub fn commit_apps(
    repo: &Path,
    names: &[&str],
    version: &str,
    manifests: impl Fn(&str, &str) -> String,
) -> String {
    let files: Vec<(String, String)> = names
        .iter()
        .map(|n| (format!("apps/{n}/app.yaml"), manifests(n, version)))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    commit(repo, &files, version)
}

/// A new git repository (branch `main`) in a temporary directory.
pub fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("a temporary directory");
    git(repo.path(), &["init", "-q", "-b", "main"]);
    repo
}

/// `value` as an object, with `extra`'s fields added to its spec.
fn with_spec<K: serde::de::DeserializeOwned>(mut value: Value, extra: Value) -> K {
    if let (Some(spec), Value::Object(extra)) = (value["spec"].as_object_mut(), extra) {
        spec.extend(extra);
    }
    support::object(value)
}

/// An Application's spec syncing `path` of `url`'s `main` automatically (with prune) into
/// `namespace` of the controller's cluster.
pub fn application_spec(url: &str, path: &str, namespace: &str) -> Value {
    json!({
        "project": "default",
        "source": {"repoURL": url, "targetRevision": "main", "path": path},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
        "syncPolicy": {"automated": {"prune": true}}
    })
}

/// The Application `web` of namespace `namespace`, syncing `apps/web` of `url`'s `main`
/// automatically (with prune) into that namespace, with `extra` fields added to its spec.
pub fn web_application(namespace: &str, url: &str, extra: Value) -> Application {
    let value = json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": application_spec(url, "apps/web", namespace)
    });
    with_spec(value, extra)
}

/// An ApplicationSet with a list generator over `names`, syncing `apps/<name>` automatically
/// into `namespace`, with `extra` fields added to its spec.
pub fn appset(namespace: &str, url: &str, names: &[&str], extra: Value) -> ApplicationSet {
    let elements: Vec<Value> = names.iter().map(|n| json!({ "name": n })).collect();
    let value = json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "stack"},
        "spec": {
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {"name": "{{name}}"},
                "spec": application_spec(url, "apps/{{name}}", namespace)
            }
        }
    });
    with_spec(value, extra)
}

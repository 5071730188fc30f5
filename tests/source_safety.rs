//! Sources read safely, on the real control plane and with the `flotilla` binary: a renamed
//! `path` keeps every object and is reported (controller with automated prune, and
//! `flotilla sync --prune`) until the Application follows; emptied manifests are not pruned
//! away unless allowed (`syncPolicy.automated.allowEmpty`, `--allow-empty`); symbolic links and
//! paths leading outside the repository are refused; oversized sources fail fast with errors
//! naming the file. Git sources are bare repositories pushed to from a scratch clone, as a
//! server would hold them.

mod controller_support;
mod support;
mod sync_support;

use std::path::Path;
use std::process::Output;
use std::time::Instant;

use flotilla_core::api::Application;
use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use controller_support::{git, setup, start};
use support::{TestNamespace, apply, eventually, object, wait_until};
use sync_support::{sync, sync_command};

/// A ConfigMap manifest named `name`.
fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

/// A scratch clone (`work`) and the bare repository it pushes to (`bare`, the `repoURL`).
struct Remote {
    work: tempfile::TempDir,
    bare: tempfile::TempDir,
}

impl Remote {
    fn new() -> Self {
        let work = tempfile::tempdir().expect("a scratch clone");
        let bare = tempfile::Builder::new()
            .suffix(".git")
            .tempdir()
            .expect("a bare repository");
        git(bare.path(), &["init", "-q", "--bare", "-b", "main"]);
        git(work.path(), &["init", "-q", "-b", "main"]);
        Self { work, bare }
    }

    fn url(&self) -> String {
        format!("file://{}", self.bare.path().display())
    }

    /// Writes `files` (path → content) into the clone, commits everything and pushes; returns
    /// the commit.
    fn push(&self, files: &[(&str, &str)], message: &str) -> String {
        for (path, content) in files {
            let target = self.work.path().join(path);
            std::fs::create_dir_all(target.parent().expect("a parent")).expect("directories");
            std::fs::write(target, content).expect("a file");
        }
        self.commit_and_push(message)
    }

    /// Runs `git` in the clone, then commits everything and pushes.
    fn change(&self, args: &[&str], message: &str) -> String {
        git(self.work.path(), args);
        self.commit_and_push(message)
    }

    fn commit_and_push(&self, message: &str) -> String {
        git(self.work.path(), &["add", "-A"]);
        git(self.work.path(), &["commit", "-q", "-m", message]);
        let bare = self.bare.path().display().to_string();
        git(self.work.path(), &["push", "-q", &bare, "main"]);
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(self.work.path())
            .args(["rev-parse", "HEAD"])
            .output()
            .expect("git runs");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

/// An Application syncing `path` of `url` into the test namespace.
fn application(
    ns: &TestNamespace,
    url: &str,
    path: &str,
    automated: serde_json::Value,
) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web"},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "syncPolicy": {"automated": automated}
        }
    }))
}

/// Writes an Application YAML for `flotilla sync` into `dir` and returns its path.
fn application_file(dir: &Path, ns: &TestNamespace, url: &str, path: &str) -> std::path::PathBuf {
    let file = dir.join("app.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {0}}}\n\
             spec:\n  project: default\n  source: {{repoURL: '{url}', targetRevision: main, path: '{path}'}}\n  \
             destination: {{namespace: {0}}}\n",
            ns.name
        ),
    )
    .expect("the Application file");
    file
}

/// The uid of ConfigMap `name`, or None when it does not exist.
async fn uid_of(ns: &TestNamespace, name: &str) -> Option<String> {
    let api: Api<ConfigMap> = ns.api();
    api.get_opt(name)
        .await
        .expect("reads ConfigMaps")
        .and_then(|cm| cm.uid())
}

/// Waits until the Application `web` has an operation at `revision` that ended in `phase`.
async fn operation_ended(
    apps: &Api<Application>,
    revision: &str,
    phase: OperationPhase,
) -> Application {
    wait_until(
        apps,
        "web",
        &format!("an operation at {revision} ended {phase:?}"),
        |app| {
            app.status
                .as_ref()
                .and_then(|s| s.operation_state.as_ref())
                .is_some_and(|op| op.revision.as_deref() == Some(revision) && op.phase == phase)
        },
    )
    .await
}

/// Awaits `run`, printing how long it took (measured for the report, never asserted).
async fn timed(what: &str, run: impl Future<Output = Output>) -> Output {
    let started = Instant::now();
    let output = run.await;
    eprintln!("{what}: answered in {:?}", started.elapsed());
    output
}

/// `flotilla ARGS...` run to its end.
async fn flotilla(args: Vec<std::ffi::OsString>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(args)
            .output()
            .expect("flotilla runs")
    })
    .await
    .expect("joined")
}

/// `flotilla sync FILE --prune` against cluster 1 (with `-o json`), to its end.
async fn sync_output(file: &Path, ns: &TestNamespace) -> Output {
    let mut command = sync_command(file, &ns.name, &["--prune"]);
    tokio::task::spawn_blocking(move || command.output().expect("flotilla sync runs"))
        .await
        .expect("joined")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_renamed_path_keeps_every_object_and_is_reported_until_the_application_follows() {
    let remote = Remote::new();
    let first = remote.push(&[("app/settings.yaml", &config_map("settings"))], "app");
    let ns = setup("src-rename").await;
    let controller = start(&ns, "only");
    let apps: Api<Application> = ns.api();
    let automated = json!({"prune": true});
    apply(&apps, &application(&ns, &remote.url(), "app", automated)).await;
    let synced = |revision: String| {
        move |app: &Application| {
            let status = app.status.clone().unwrap_or_default();
            let sync = status.sync.unwrap_or_default();
            sync.status == SyncStatusCode::Synced
                && sync.revision == revision
                && status.conditions.is_empty()
        }
    };
    wait_until(
        &apps,
        "web",
        "Synced at the first commit",
        synced(first.clone()),
    )
    .await;
    let uid = uid_of(&ns, "settings")
        .await
        .expect("the ConfigMap was created");

    let second = remote.change(&["mv", "app", "renamed"], "rename app to renamed");
    let expected = format!(
        "repository {} at {second}: path \"app\" does not exist",
        remote.url()
    );
    let app = wait_until(&apps, "web", "the missing-path condition", |app| {
        app.status.as_ref().is_some_and(|status| {
            status.conditions.iter().any(|c| {
                c.type_ == ApplicationConditionType::ComparisonError
                    && c.message.contains(&expected)
            })
        })
    })
    .await;
    let status = app.status.expect("a status");
    assert_eq!(status.sync.map(|s| s.status), Some(SyncStatusCode::Unknown));
    let last = status.operation_state.expect("the first sync");
    assert_eq!(
        last.revision.as_deref(),
        Some(first.as_str()),
        "no sync ran since"
    );
    assert_eq!(
        uid_of(&ns, "settings").await,
        Some(uid.clone()),
        "never pruned"
    );

    apps.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"source": {"path": "renamed"}}})),
    )
    .await
    .expect("the path corrected");
    wait_until(&apps, "web", "Synced at the rename", synced(second)).await;
    assert_eq!(
        uid_of(&ns, "settings").await,
        Some(uid),
        "the same object throughout"
    );
    controller.stop().await;
}

#[tokio::test]
async fn emptied_manifests_are_not_pruned_away_unless_allow_empty_is_set() {
    let remote = Remote::new();
    remote.push(&[("app/settings.yaml", &config_map("settings"))], "app");
    let ns = setup("src-empty").await;
    let controller = start(&ns, "only");
    let apps: Api<Application> = ns.api();
    let automated = json!({"prune": true});
    apply(&apps, &application(&ns, &remote.url(), "app", automated)).await;
    eventually("the ConfigMap synced", async || {
        uid_of(&ns, "settings").await.ok_or("not yet".to_owned())
    })
    .await;

    git(remote.work.path(), &["rm", "-q", "app/settings.yaml"]);
    let empty = remote.push(&[("app/README.md", "nothing deployed here\n")], "empty app");
    let refused = operation_ended(&apps, &empty, OperationPhase::Failed).await;
    let message = refused.status.unwrap().operation_state.unwrap().message;
    assert!(
        message.starts_with("refused to delete all 1 live object(s) of the Application")
            && message.contains("allowEmpty: true"),
        "{message}"
    );
    assert!(
        uid_of(&ns, "settings").await.is_some(),
        "nothing was pruned"
    );

    apps.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"syncPolicy": {"automated": {"allowEmpty": true}}}})),
    )
    .await
    .expect("allowEmpty set");
    operation_ended(&apps, &empty, OperationPhase::Succeeded).await;
    assert_eq!(uid_of(&ns, "settings").await, None, "pruned once allowed");
    controller.stop().await;
}

#[tokio::test]
async fn flotilla_sync_prune_refuses_a_missing_path_and_syncs_once_corrected() {
    let remote = Remote::new();
    remote.push(&[("app/settings.yaml", &config_map("settings"))], "app");
    let ns = support::namespace(1, "src-sync-rename").await;
    let files = tempfile::tempdir().unwrap();
    let app = application_file(files.path(), &ns, &remote.url(), "app");
    let first = sync_output(&app, &ns).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let uid = uid_of(&ns, "settings").await.expect("created");

    let second = remote.change(&["mv", "app", "renamed"], "rename");
    let missing = sync_output(&app, &ns).await;
    assert_eq!(missing.status.code(), Some(1));
    let expected = format!(
        "repository {} at {second}: path \"app\" does not exist",
        remote.url()
    );
    assert!(stderr(&missing).contains(&expected), "{}", stderr(&missing));
    assert_eq!(
        uid_of(&ns, "settings").await,
        Some(uid.clone()),
        "never pruned"
    );

    let outside = application_file(files.path(), &ns, &remote.url(), "../other");
    let escaping = sync_output(&outside, &ns).await;
    assert_eq!(escaping.status.code(), Some(1));
    assert!(
        stderr(&escaping).contains("path \"../other\" is outside the repository"),
        "{}",
        stderr(&escaping)
    );

    let corrected = application_file(files.path(), &ns, &remote.url(), "renamed");
    let run = sync_support::parse(&sync_output(&corrected, &ns).await);
    run.assert_succeeded();
    assert_eq!(run.state.revision.as_deref(), Some(second.as_str()));
    assert_eq!(uid_of(&ns, "settings").await, Some(uid));
}

#[tokio::test]
async fn flotilla_sync_prune_of_an_empty_directory_needs_allow_empty() {
    let ns = support::namespace(1, "src-sync-empty").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("settings.yaml"), config_map("settings")).unwrap();
    sync(dir.path(), &ns.name, &["--prune"])
        .await
        .assert_succeeded();
    std::fs::remove_file(dir.path().join("settings.yaml")).unwrap();

    let refused = sync(dir.path(), &ns.name, &["--prune"]).await;
    refused.assert_failed_with("refused to delete all 1 live object(s) of the Application");
    assert!(refused.state.resources.is_empty(), "nothing was written");
    assert!(uid_of(&ns, "settings").await.is_some());

    let dry = sync(dir.path(), &ns.name, &["--prune", "--dry-run"]).await;
    dry.assert_failed_with("dry run: refused to delete all 1 live object(s)");

    let allowed = sync(dir.path(), &ns.name, &["--prune", "--allow-empty"]).await;
    allowed.assert_succeeded();
    assert_eq!(uid_of(&ns, "settings").await, None);
}

#[tokio::test]
async fn links_inside_the_repository_work_and_links_leading_outside_are_refused() {
    let remote = Remote::new();
    remote.push(&[("common/base.yaml", &config_map("base"))], "common");
    let link = |at: &str, target: &str| {
        let path = remote.work.path().join(at);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    };
    link("app/base.yaml", "../common/base.yaml");
    remote.commit_and_push("link inside");
    let ns = support::namespace(1, "src-links").await;
    let files = tempfile::tempdir().unwrap();
    let app = application_file(files.path(), &ns, &remote.url(), "app");
    let inside = sync_support::parse(&sync_output(&app, &ns).await);
    inside.assert_succeeded();
    assert!(uid_of(&ns, "base").await.is_some(), "read through the link");

    // Links in the source tree may not lead outside it: to a file, to a directory, or at the
    // end of a chain (whose first link is named).
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.yaml"), config_map("stolen")).unwrap();
    let secret = outside.path().join("secret.yaml").display().to_string();
    let directory = outside.path().display().to_string();
    let cases: [&[(&str, &str)]; 3] = [
        &[("app/secret.yaml", &secret)],
        &[("app/dir", &directory)],
        &[("app/chain.yaml", "hop.yaml"), ("app/hop.yaml", &secret)],
    ];
    for links in cases {
        for (at, target) in links {
            link(at, target);
        }
        let (at, target) = links[0];
        remote.commit_and_push(&format!("link {at}"));
        let refused = sync_output(&app, &ns).await;
        assert_eq!(refused.status.code(), Some(1), "{at}");
        let expected = format!("symbolic link {at} points outside the repository: {target}");
        assert!(stderr(&refused).contains(&expected), "{}", stderr(&refused));
        assert_eq!(
            uid_of(&ns, "stolen").await,
            None,
            "{at}: nothing read outside"
        );
        for (at, _) in links {
            git(remote.work.path(), &["rm", "-q", at]);
        }
    }

    // A plain directory is checked the same way.
    let plain = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), plain.path().join("elsewhere")).unwrap();
    let planned = flotilla(vec!["plan".into(), plain.path().into()]).await;
    assert_eq!(planned.status.code(), Some(1));
    assert!(
        stderr(&planned).contains(&format!(
            "symbolic link elsewhere points outside the repository: {}",
            outside.path().display()
        )),
        "{}",
        stderr(&planned)
    );
}

#[tokio::test]
async fn oversized_sources_fail_fast_naming_the_file() {
    // A 50 MB manifest file: refused from its size, never read.
    let dir = tempfile::tempdir().unwrap();
    let big = std::fs::File::create(dir.path().join("big.yaml")).unwrap();
    big.set_len(50_000_000).unwrap();
    let planned = timed(
        "50 MB manifest file",
        flotilla(vec!["plan".into(), dir.path().into()]),
    )
    .await;
    assert_eq!(planned.status.code(), Some(1));
    assert!(
        stderr(&planned)
            .contains("big.yaml: 50000000 bytes, more than the limit of 8388608 per manifest file"),
        "{}",
        stderr(&planned)
    );

    // 100,000 tiny files: counted before any is read (or, from git, before any is written).
    let remote = Remote::new();
    let many = remote.work.path().join("app");
    std::fs::create_dir_all(&many).unwrap();
    for i in 0..100_000 {
        std::fs::write(many.join(format!("f{i:06}.yaml")), "a: 1\n").unwrap();
    }
    let planned = timed(
        "100,000 files in a directory",
        flotilla(vec!["plan".into(), many.clone().into()]),
    )
    .await;
    assert_eq!(planned.status.code(), Some(1));
    let expected = format!(
        "{}: more than 50000 files (the limit of a repository or source directory)",
        many.display()
    );
    assert!(stderr(&planned).contains(&expected), "{}", stderr(&planned));

    let second = remote.commit_and_push("many files");
    let files = tempfile::tempdir().unwrap();
    let ns = support::namespace(1, "src-limits").await;
    let app = application_file(files.path(), &ns, &remote.url(), "app");
    let synced = timed("100,000 files in a git repository", sync_output(&app, &ns)).await;
    assert_eq!(synced.status.code(), Some(1));
    let expected = format!(
        "repository {}: commit {second} has more than 50000 files (the limit of a repository); nothing was checked out",
        remote.url()
    );
    assert!(stderr(&synced).contains(&expected), "{}", stderr(&synced));
}

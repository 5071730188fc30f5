//! Helpers for the `tests/sync_*.rs` integration tests: a fixture directory with the test's
//! namespace filled in, and the `flotilla sync` binary run against cluster 1 with `-o json`.
// Each integration test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;

use flotilla_core::sync::{OperationPhase, OperationState, ResourceAction, ResourceResult};

use crate::support;

/// A fixture of `tests/fixtures/sync/<name>` copied to a temporary directory, `NAMESPACE`
/// replaced by `namespace`.
pub fn fixture(name: &str, namespace: &str) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sync")
        .join(name);
    let dir = tempfile::Builder::new()
        .prefix(&format!("{name}-"))
        .tempdir()
        .expect("a temporary directory");
    for entry in std::fs::read_dir(&source).expect("the fixture directory") {
        let path = entry.expect("a fixture file").path();
        let text = std::fs::read_to_string(&path).expect("a readable fixture");
        let target = dir.path().join(path.file_name().expect("a file name"));
        std::fs::write(target, text.replace("NAMESPACE", namespace)).expect("writing the fixture");
    }
    dir
}

/// `flotilla sync DIR --namespace NS --app NS --kubeconfig <cluster 1> -o json ARGS...`, not yet
/// run. The Application is named after the namespace, so tests never prune each other's objects.
pub fn sync_command(dir: &Path, namespace: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_flotilla"));
    command
        .arg("sync")
        .arg(dir)
        .args(["--namespace", namespace, "--app", namespace, "-o", "json"])
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(args)
        .stdin(Stdio::null());
    command
}

/// Starts `flotilla sync` (output piped) and waits until it has applied the Deployment `name`.
pub async fn start_sync_until_applied(
    ns: &support::TestNamespace,
    dir: &Path,
    args: &[&str],
    name: &str,
) -> Child {
    let child = sync_command(dir, &ns.name, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting flotilla sync");
    let deployments: Api<Deployment> = ns.api();
    support::eventually(
        &format!("Deployment {name} to be applied"),
        async || match deployments.get_opt(name).await.map_err(|e| e.to_string())? {
            Some(_) => Ok(()),
            None => Err("not yet".to_owned()),
        },
    )
    .await;
    child
}

/// The outcome of one `flotilla sync` run.
pub struct SyncRun {
    /// Whether it exited 0.
    pub success: bool,
    /// The operation state it printed.
    pub state: OperationState,
    /// Its live view.
    pub stderr: String,
}

impl SyncRun {
    /// Fails the test, showing the live view and the result, unless the sync exited 0.
    pub fn assert_succeeded(&self) {
        assert!(self.success, "{}\n{:#?}", self.stderr, self.state);
    }

    /// Fails the test unless the sync exited non-zero with a Failed operation whose message
    /// contains `text`.
    pub fn assert_failed_with(&self, text: &str) {
        assert!(!self.success, "the exit code is non-zero");
        assert_eq!(self.state.phase, OperationPhase::Failed);
        assert!(self.state.message.contains(text), "{}", self.state.message);
    }
}

/// Runs `flotilla sync` to its end.
pub async fn sync(dir: &Path, namespace: &str, args: &[&str]) -> SyncRun {
    let mut command = sync_command(dir, namespace, args);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the sync task")
        .expect("running flotilla sync");
    parse(&output)
}

/// A namespace for the test (named after `label`), the fixture `name` in it, and a first sync
/// of the fixture that must succeed.
pub async fn synced(
    label: &str,
    name: &str,
) -> (support::TestNamespace, tempfile::TempDir, SyncRun) {
    let ns = support::namespace(1, label).await;
    let dir = fixture(name, &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    run.assert_succeeded();
    (ns, dir, run)
}

/// Reads a finished run's output.
pub fn parse(output: &Output) -> SyncRun {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let state = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "flotilla sync printed no operation state ({error}); stdout: {} stderr: {stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    SyncRun {
        success: output.status.success(),
        state,
        stderr,
    }
}

/// The names of the objects `api` lists, sorted.
pub async fn names<K>(api: &Api<K>) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut names: Vec<String> = api
        .list(&kube::api::ListParams::default())
        .await
        .expect("listing objects")
        .items
        .iter()
        .map(kube::ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

/// `Kind name` of each record, in the order they were recorded.
pub fn recorded(state: &OperationState) -> Vec<String> {
    state
        .resources
        .iter()
        .map(|r| format!("{} {}", r.kind, r.name))
        .collect()
}

/// The record of `kind name`, failing the test unless it exists and its action is `action`.
pub fn record_with_action<'s>(
    state: &'s OperationState,
    kind: &str,
    name: &str,
    action: ResourceAction,
) -> &'s ResourceResult {
    let found = record(state, kind, name);
    assert_eq!(found.action, Some(action), "{found:#?}");
    found
}

/// The record of `kind name`, failing the test when there is none.
pub fn record<'s>(state: &'s OperationState, kind: &str, name: &str) -> &'s ResourceResult {
    state
        .resources
        .iter()
        .find(|r| r.kind == kind && r.name == name)
        .unwrap_or_else(|| panic!("no record of {kind} {name}: {:#?}", recorded(state)))
}

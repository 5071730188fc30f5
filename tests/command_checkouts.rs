//! The command line reads sources through the controller's resolver: `flotilla simulate` of
//! hundreds of Applications over a monorepo of thousands of directories resolves the revision
//! once and checks the commit out once (counted from the `git` commands the binary runs, through
//! a logging `git` first on its PATH), and a command's temporary checkouts are gone when it
//! ends: normally, with an error, or on Ctrl-C.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::git_remote::git;

const URL: &str = "https://git.example.com/acme/monorepo.git";

/// A ConfigMap, ready at once in the simulation.
const CONFIG_MAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n";

/// A Job, ready after `--duration Job=…` in the simulation.
const JOB: &str = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n  \
    template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n";

/// A git repository of `dirs` application directories `apps/gG/sS/app-NNNN` (group G of
/// `per_group` directories, step S of 3), each with the one manifest `manifest`, in one commit.
fn monorepo(dirs: usize, per_group: usize, manifest: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("a repository directory");
    for i in 0..dirs {
        let dir = repo
            .path()
            .join(format!("apps/g{}/s{}/app-{i:04}", i / per_group, i % 3 + 1));
        std::fs::create_dir_all(&dir).expect("a directory");
        std::fs::write(dir.join("manifest.yaml"), manifest).expect("a manifest");
    }
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "monorepo"]);
    repo
}

/// A monorepo ([`monorepo`]), the ApplicationSet of its group 0 and the `--repo` mapping of
/// its URL, as `flotilla simulate` arguments.
struct Fleet {
    repo: tempfile::TempDir,
    files: tempfile::TempDir,
}

impl Fleet {
    fn new(dirs: usize, per_group: usize, manifest: &str) -> Self {
        let files = tempfile::tempdir().expect("a directory");
        write_appset(&files.path().join("appset.yaml"));
        Self {
            repo: monorepo(dirs, per_group, manifest),
            files,
        }
    }

    /// `simulate APPSET --repo URL=REPO` and `more`.
    fn simulate(&self, more: &[&str]) -> Vec<String> {
        let appset = self.files.path().join("appset.yaml");
        let mapping = format!("--repo={URL}={}", self.repo.path().display());
        let mut args = vec!["simulate".to_owned(), appset.display().to_string(), mapping];
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        args
    }
}

/// An ApplicationSet of the directories of group 0, in a RollingSync of three steps.
fn write_appset(path: &Path) {
    let text = format!(
        r"apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: monorepo, namespace: flotilla}}
spec:
  generators:
    - git:
        repoURL: {URL}
        revision: HEAD
        directories:
          - path: apps/g0/*/*
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - matchExpressions: [{{key: step, operator: In, values: [s1]}}]
        - matchExpressions: [{{key: step, operator: In, values: [s2]}}]
        - matchExpressions: [{{key: step, operator: In, values: [s3]}}]
  template:
    metadata:
      name: '{{{{path.basename}}}}'
      labels: {{step: '{{{{path[2]}}}}'}}
    spec:
      project: default
      source: {{repoURL: {URL}, targetRevision: HEAD, path: '{{{{path}}}}'}}
      destination: {{server: https://kubernetes.default.svc, namespace: '{{{{path.basename}}}}'}}
      syncPolicy: {{syncOptions: [CreateNamespace=true]}}
"
    );
    std::fs::write(path, text).expect("the ApplicationSet");
}

/// Where the binary runs: its own temporary directory (`TMPDIR`) and a `git` that logs every
/// command line to a file before running the real one.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a sandbox");
        std::fs::create_dir(dir.path().join("tmp")).expect("tmp");
        std::fs::create_dir(dir.path().join("bin")).expect("bin");
        let real = String::from_utf8(
            Command::new("sh")
                .args(["-c", "command -v git"])
                .output()
                .expect("sh runs")
                .stdout,
        )
        .expect("a path");
        let wrapper = dir.path().join("bin/git");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                dir.path().join("git.log").display(),
                real.trim()
            ),
        )
        .expect("the wrapper");
        let mut permissions = std::fs::metadata(&wrapper).expect("written").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&wrapper, permissions).expect("executable");
        Self { dir }
    }

    fn command(&self, args: &[impl AsRef<std::ffi::OsStr>]) -> Command {
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new(env!("CARGO_BIN_EXE_flotilla"));
        command
            .args(args)
            .env("PATH", path)
            .env("TMPDIR", self.dir.path().join("tmp"));
        command
    }

    fn run(&self, args: &[impl AsRef<std::ffi::OsStr>]) -> Output {
        self.command(args).output().expect("flotilla runs")
    }

    /// The `git` command lines run so far that contain `words`.
    fn git_runs(&self, words: &str) -> usize {
        std::fs::read_to_string(self.dir.path().join("git.log"))
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains(words))
            .count()
    }

    /// What is left in the binary's temporary directory.
    fn leftovers(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.dir.path().join("tmp"))
            .expect("tmp")
            .map(|entry| entry.expect("an entry").path())
            .collect()
    }
}

#[test]
fn simulate_of_hundreds_of_applications_checks_the_monorepo_out_once() {
    let fleet = Fleet::new(3_000, 300, CONFIG_MAP);
    let sandbox = Sandbox::new();
    let out = sandbox.run(&fleet.simulate(&["--instant", "-o", "name"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = String::from_utf8(out.stdout).expect("text");
    assert_eq!(names.lines().count(), 300, "{names}");
    assert!(names.contains("/app-0299\n"), "{names}");
    assert_eq!(sandbox.git_runs("checkout-index"), 1, "checked out once");
    assert_eq!(sandbox.git_runs("read-tree"), 1);
    assert_eq!(sandbox.git_runs("clone --mirror"), 1, "cloned once");
    assert_eq!(sandbox.git_runs(" fetch "), 0, "never fetched again");
    assert_eq!(
        sandbox.git_runs("rev-parse --verify --quiet HEAD^{commit}"),
        1,
        "HEAD resolved once, for the generator and every Application"
    );
    assert_eq!(
        sandbox.leftovers(),
        Vec::<PathBuf>::new(),
        "removed at the end"
    );
}

#[test]
fn a_failing_command_removes_its_checkout() {
    let repo = monorepo(3, 3, CONFIG_MAP);
    let files = tempfile::tempdir().expect("a directory");
    let app = files.path().join("app.yaml");
    std::fs::write(
        &app,
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: gone}}\n\
             spec:\n  project: default\n  source: {{repoURL: {URL}, path: apps/renamed}}\n  \
             destination: {{namespace: shop}}\n"
        ),
    )
    .expect("the Application");
    let sandbox = Sandbox::new();
    let mapping = format!("--repo={URL}={}", repo.path().display());
    let out = sandbox.run(&["plan", app.to_str().expect("a path"), mapping.as_str()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("repository {URL} at "))
            && stderr.contains("path \"apps/renamed\" does not exist"),
        "{stderr}"
    );
    assert_eq!(
        sandbox.git_runs("checkout-index"),
        1,
        "the commit was checked out"
    );
    assert_eq!(sandbox.leftovers(), Vec::<PathBuf>::new(), "and removed");

    let remote = files.path().join("remote.yaml");
    std::fs::write(
        &remote,
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: far}\n\
         spec:\n  project: default\n  source: {repoURL: 'https://git.example.com/other.git', path: a}\n  \
         destination: {namespace: shop}\n",
    )
    .expect("the Application");
    let out = sandbox.run(&["plan", remote.to_str().expect("a path")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "repository https://git.example.com/other.git is not available on this machine; \
             map it with --repo https://git.example.com/other.git=PATH"
        ),
        "an offline command never reaches a remote: {stderr}"
    );
    assert_eq!(sandbox.leftovers(), Vec::<PathBuf>::new());
}

#[test]
fn ctrl_c_removes_the_checkouts_before_the_command_exits() {
    let fleet = Fleet::new(30, 30, JOB);
    let sandbox = Sandbox::new();
    // Slow enough to be interrupted in the middle: a Job takes an hour to complete, a minute of
    // real time.
    let mut child = sandbox
        .command(&fleet.simulate(&["--duration", "Job=1h"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("flotilla starts");
    let started = Instant::now();
    // A commit's tree moved into place (trees/REPOSITORY/COMMIT), not one being written.
    let checked_out = || {
        let trees = sandbox
            .leftovers()
            .iter()
            .map(|dir| dir.join("trees"))
            .collect::<Vec<_>>();
        trees
            .iter()
            .filter_map(|trees| std::fs::read_dir(trees).ok())
            .flatten()
            .filter_map(|repository| std::fs::read_dir(repository.ok()?.path()).ok())
            .flatten()
            .any(|tree| tree.is_ok_and(|tree| tree.file_name().len() == 40))
    };
    while !checked_out() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no checkout within a minute"
        );
        assert!(child.try_wait().expect("waits").is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The checkout stays while the rollout runs.
    std::thread::sleep(Duration::from_millis(500));
    assert!(checked_out(), "still there while the command runs");
    assert!(child.try_wait().expect("waits").is_none(), "still running");
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let out = child.wait_with_output().expect("flotilla ends");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sandbox.leftovers(),
        Vec::<PathBuf>::new(),
        "removed on Ctrl-C"
    );
}

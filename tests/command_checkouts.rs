//! The command line reads sources through the controller's resolver: `flotilla simulate` of
//! hundreds of Applications over a monorepo of thousands of directories resolves the revision
//! once and checks the commit out once (counted from the `git` commands the binary runs, through
//! a logging `git` first on its PATH), and a command's temporary checkouts are gone when it
//! ends: normally, with an error, or on Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const URL: &str = "https://git.example.com/acme/monorepo.git";

/// A git repository of `dirs` application directories `apps/gG/sS/app-NNNN` (group G of
/// `per_group` directories, step S of 3), one ConfigMap each, in one commit.
fn monorepo(dirs: usize, per_group: usize) -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("a repository directory");
    for i in 0..dirs {
        let dir = repo
            .path()
            .join(format!("apps/g{}/s{}/app-{i:04}", i / per_group, i % 3 + 1));
        std::fs::create_dir_all(&dir).expect("a directory");
        std::fs::write(
            dir.join("configmap.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n",
        )
        .expect("a manifest");
    }
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "monorepo"]);
    repo
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// An ApplicationSet of the directories of group 0, in a RollingSync of three steps.
fn appset(dir: &Path) -> PathBuf {
    let path = dir.join("appset.yaml");
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
    std::fs::write(&path, text).expect("the ApplicationSet");
    path
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

    fn command(&self, args: &[&str]) -> Command {
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

    fn run(&self, args: &[&str]) -> Output {
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
    let repo = monorepo(3_000, 300);
    let files = tempfile::tempdir().expect("a directory");
    let appset = appset(files.path());
    let sandbox = Sandbox::new();
    let mapping = format!("--repo={URL}={}", repo.path().display());
    let out = sandbox.run(&[
        "simulate",
        appset.to_str().expect("a path"),
        &mapping,
        "--instant",
        "-o",
        "name",
    ]);
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
    let repo = monorepo(3, 3);
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
    let out = sandbox.run(&["plan", app.to_str().expect("a path"), &mapping]);
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
    let repo = monorepo(30, 30);
    let files = tempfile::tempdir().expect("a directory");
    let appset = appset(files.path());
    let sandbox = Sandbox::new();
    let mapping = format!("--repo={URL}={}", repo.path().display());
    // Slow enough to be interrupted in the middle: a ConfigMap takes an hour to be ready, a
    // minute of real time.
    let mut child = sandbox
        .command(&[
            "simulate",
            appset.to_str().expect("a path"),
            &mapping,
            "--duration",
            "ConfigMap=1h",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("flotilla starts");
    let started = Instant::now();
    let checked_out = || {
        sandbox
            .leftovers()
            .iter()
            .any(|dir| dir.join("trees").is_dir())
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
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let status = child.wait().expect("flotilla ends");
    assert_eq!(status.code(), Some(130), "{status}");
    assert_eq!(
        sandbox.leftovers(),
        Vec::<PathBuf>::new(),
        "removed on Ctrl-C"
    );
}

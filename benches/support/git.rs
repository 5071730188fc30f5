//! The benchmarks' git repositories: files committed on `main` by `git` with a fixed identity.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs git in `dir` as the benchmark's author; fails the benchmark when git fails.
pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("running git");
    assert!(status.success(), "git {args:?} in {} failed", dir.display());
}

/// Makes `dir` (holding the files already written) a repository with one commit on `main`.
pub fn commit_all(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "manifests"]);
}

//! Reading repositories: `--repo URL=PATH` mappings, `file://` URLs and local paths, each
//! served by the `git` CLI (a repository) or read as a plain directory (a quick preview), and
//! the one source resolver ([`cache`]) the controller and every command read sources through;
//! what is read stays inside its repository ([`bounds`]); its git requests are counted
//! ([`git_requests`]).

pub mod bounds;
pub mod cache;
mod cache_reader;
pub mod checkout;
pub mod directory;
pub mod git_auth;
pub mod git_cli;
pub mod git_requests;
pub mod local;
pub mod temporary;

pub use local::{LocalRepos, RepoError};

/// Running `git` in unit tests that build repositories.
#[cfg(test)]
pub(crate) mod test_git {
    use std::path::Path;

    /// Runs `git` in `dir` with a fixed identity; fails the test when it fails.
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
}

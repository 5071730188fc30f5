//! Checking out one commit to a directory, through the `git` CLI: the tree a source's `path` is
//! read from. No working tree of the repository is touched.
//!
//! The whole commit is written once (not only the source's `path`): a link inside the
//! repository may lead anywhere in it (`app/base.yaml -> ../common/base.yaml`), so its target
//! has to be there; and one `git read-tree` + `git checkout-index` writes a tree of any size in
//! two processes. Before anything is written, the commit is measured from its tree listing
//! against the repository limits (so a hostile commit fails in a fraction of a second rather
//! than after filling the disk); after it is written, every symbolic link is checked to stay
//! inside the tree ([`super::bounds::check_links`]), before any file is parsed.

use std::path::{Path, PathBuf};

use super::bounds::{BoundsError, check_links};
use super::git_cli::{GitCli, GitError};
use flotilla_core::manifest::limits::{MAX_REPOSITORY_BYTES, MAX_REPOSITORY_FILES};

/// The files could not be written, or may not be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "commit {commit} has more than {MAX_REPOSITORY_FILES} files (the limit of a repository); nothing was checked out"
    )]
    TooManyFiles { commit: String },
    #[error(
        "commit {commit} holds {bytes} bytes, more than the limit of {MAX_REPOSITORY_BYTES}; nothing was checked out"
    )]
    TooLarge { commit: String, bytes: u64 },
    #[error("commit {commit}: {error}")]
    Bounds {
        commit: String,
        #[source]
        error: BoundsError,
    },
    #[error("cannot write the files of commit {commit} to {dir}: {error}")]
    Io {
        commit: String,
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// Writes every file of `commit` into `dir` (created, even for an empty commit), after checking
/// the commit's size against the repository limits; then checks its links. On any error `dir`
/// is removed.
///
/// # Errors
/// A commit over the limits, a link leading outside the tree, a failing `git` or an unwritable
/// directory.
pub fn checkout(git: &GitCli, commit: &str, dir: &Path) -> Result<(), CheckoutError> {
    let size = git.measure(commit, MAX_REPOSITORY_FILES)?;
    if size.files > MAX_REPOSITORY_FILES {
        return Err(CheckoutError::TooManyFiles {
            commit: commit.to_owned(),
        });
    }
    if size.bytes > MAX_REPOSITORY_BYTES {
        return Err(CheckoutError::TooLarge {
            commit: commit.to_owned(),
            bytes: size.bytes,
        });
    }
    std::fs::create_dir_all(dir).map_err(|error| CheckoutError::Io {
        commit: commit.to_owned(),
        dir: dir.to_owned(),
        error,
    })?;
    let written = git
        .write_tree(commit, dir)
        .map_err(CheckoutError::from)
        .and_then(|()| {
            check_links(dir).map_err(|error| CheckoutError::Bounds {
                commit: commit.to_owned(),
                error,
            })
        });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(dir);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::repo::test_git::git;

    fn repository(build: impl FnOnce(&Path)) -> (tempfile::TempDir, GitCli, String) {
        let repo = tempfile::tempdir().unwrap();
        build(repo.path());
        git(repo.path(), &["init", "-q", "-b", "main"]);
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
        let cli = GitCli::new(repo.path());
        let commit = cli.resolve("main").unwrap();
        (repo, cli, commit)
    }

    #[test]
    fn writes_the_commit_exactly_with_its_links() {
        let (repo, cli, commit) = repository(|root| {
            std::fs::create_dir_all(root.join("app")).unwrap();
            std::fs::create_dir_all(root.join("common")).unwrap();
            std::fs::write(root.join("common/base.yaml"), "a: 1\nb: 2\n").unwrap();
            std::fs::write(root.join(".gitattributes"), "* text eol=crlf\n").unwrap();
            symlink("../common/base.yaml", root.join("app/base.yaml")).unwrap();
        });
        // An uncommitted change is not part of the commit.
        std::fs::write(repo.path().join("common/base.yaml"), "changed").unwrap();
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("tree");
        checkout(&cli, &commit, &dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("app/base.yaml")).unwrap(),
            "a: 1\nb: 2\n",
            "the link works and no line ending was converted"
        );
        assert!(
            std::fs::symlink_metadata(dir.join("app/base.yaml"))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitattributes")).unwrap(),
            "* text eol=crlf\n",
            "the attributes are written as committed"
        );
        assert!(!out.path().join("tree.index").exists(), "index removed");
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(repo.path())
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&status.stdout),
            " M common/base.yaml\n",
            "the repository's own index and work tree are untouched"
        );
    }

    #[test]
    fn an_empty_commit_is_an_empty_directory() {
        let (_repo, cli, commit) = repository(|_| {});
        let out = tempfile::tempdir().unwrap();
        checkout(&cli, &commit, &out.path().join("tree")).unwrap();
        assert_eq!(
            std::fs::read_dir(out.path().join("tree")).unwrap().count(),
            0
        );
    }

    #[test]
    fn a_link_leading_outside_removes_the_tree_and_names_the_link() {
        let (_repo, cli, commit) = repository(|root| {
            std::fs::create_dir_all(root.join("app")).unwrap();
            symlink("../../outside/secret.yaml", root.join("app/secret.yaml")).unwrap();
        });
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("tree");
        let error = checkout(&cli, &commit, &dir).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "commit {commit}: symbolic link app/secret.yaml points outside the repository: ../../outside/secret.yaml"
            )
        );
        assert!(!dir.exists());
    }
}

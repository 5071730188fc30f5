//! The controller's repository cache: every `repoURL` is cloned once as a bare mirror (with the
//! `git` CLI) under a cache directory and fetched again before each resolve; the files of a
//! commit below a path are written once to a directory named by the commit and reused. `file://`
//! URLs, local paths and `--repo URL=PATH` mappings are cloned from the local repository; a local
//! directory that is not a repository is read as it is, without a revision.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::checkout::{CheckoutError, checkout};
use super::git_cli::{GitCli, GitError};
use super::local::LocalRepos;

/// A source that could not be fetched or written out.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("repository {url}: {error}")]
    Git { url: String, error: GitError },
    #[error("repository {url}: {error}")]
    Checkout { url: String, error: CheckoutError },
    #[error("repository {url}: cannot use the cache directory {dir}: {error}")]
    Cache {
        url: String,
        dir: PathBuf,
        error: std::io::Error,
    },
}

/// The manifests of a source at one revision, on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifests {
    /// The directory to load (the source's `path` within the commit).
    pub root: PathBuf,
    /// The commit, or None for a plain local directory.
    pub revision: Option<String>,
}

/// Mirrors and commit trees under one directory.
#[derive(Debug)]
pub struct RepoCache {
    root: PathBuf,
    repos: LocalRepos,
    /// One lock per mirror: concurrent fetches into one repository would fight over its refs.
    locks: Mutex<BTreeMap<String, Arc<Mutex<()>>>>,
    temporaries: AtomicU64,
}

impl RepoCache {
    /// A cache under `root` (created on first use); `repos` maps URLs to local repositories.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>, repos: LocalRepos) -> Self {
        Self {
            root: root.into(),
            repos,
            locks: Mutex::default(),
            temporaries: AtomicU64::new(0),
        }
    }

    /// The manifests of `repo_url` at `revision` (a branch, tag, commit or empty for `HEAD`)
    /// below `path`. Blocking: runs `git`.
    ///
    /// # Errors
    /// The repository cannot be cloned or fetched, the revision is unknown, or the cache
    /// directory is unwritable.
    pub fn manifests(
        &self,
        repo_url: &str,
        revision: &str,
        path: &str,
    ) -> Result<Manifests, FetchError> {
        let local = self.repos.local_path(repo_url);
        if let Some(local) = local.as_ref().filter(|l| !GitCli::is_repository(l)) {
            return Ok(Manifests {
                root: local.join(path),
                revision: None,
            });
        }
        let git_error = |error| FetchError::Git {
            url: repo_url.to_owned(),
            error,
        };
        let origin = local.map_or_else(|| repo_url.to_owned(), |l| l.display().to_string());
        let mirror = self.fetch(repo_url, &origin)?;
        let commit = mirror.resolve(revision).map_err(git_error)?;
        let tree = self
            .root
            .join("trees")
            .join(&commit)
            .join(directory_name(path));
        if !tree.is_dir() {
            self.write_tree(repo_url, &mirror, &commit, path, &tree)?;
        }
        Ok(Manifests {
            root: tree,
            revision: Some(commit),
        })
    }

    /// Clones the mirror of `repo_url` from `origin` on first use, fetches it afterwards.
    fn fetch(&self, repo_url: &str, origin: &str) -> Result<GitCli, FetchError> {
        let lock = self
            .locks
            .lock()
            .map(|mut locks| Arc::clone(locks.entry(repo_url.to_owned()).or_default()))
            .unwrap_or_default();
        let _held = lock.lock();
        let dir = self.root.join("repos").join(directory_name(repo_url));
        let git_error = |error| FetchError::Git {
            url: repo_url.to_owned(),
            error,
        };
        if dir.is_dir() {
            let mirror = GitCli::new(&dir);
            mirror.fetch().map_err(git_error)?;
            return Ok(mirror);
        }
        let parent = self.root.join("repos");
        std::fs::create_dir_all(&parent).map_err(|error| FetchError::Cache {
            url: repo_url.to_owned(),
            dir: parent,
            error,
        })?;
        GitCli::clone_mirror(origin, &dir).map_err(git_error)
    }

    /// Writes the tree to a temporary directory, then renames it into place (a concurrent
    /// writer of the same tree may win; its files are the same).
    fn write_tree(
        &self,
        repo_url: &str,
        mirror: &GitCli,
        commit: &str,
        path: &str,
        tree: &Path,
    ) -> Result<(), FetchError> {
        let number = self.temporaries.fetch_add(1, Ordering::Relaxed);
        let temporary = tree.with_extension(format!("tmp-{}-{number}", std::process::id()));
        checkout(mirror, commit, path, &temporary).map_err(|error| FetchError::Checkout {
            url: repo_url.to_owned(),
            error,
        })?;
        if std::fs::rename(&temporary, tree).is_err() {
            let _ = std::fs::remove_dir_all(&temporary);
            if !tree.is_dir() {
                return Err(FetchError::Cache {
                    url: repo_url.to_owned(),
                    dir: tree.to_owned(),
                    error: std::io::Error::other("cannot move the checkout into place"),
                });
            }
        }
        Ok(())
    }
}

/// A file name for `text` (a URL or path): its safe characters and a hash, so distinct texts
/// get distinct names.
fn directory_name(text: &str) -> String {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    let safe: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let safe = safe.trim_matches('-');
    let safe = safe.get(safe.len().saturating_sub(40)..).unwrap_or(safe);
    format!("{safe}-{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::test_git::git;

    #[test]
    fn clones_once_fetches_new_commits_and_reuses_commit_trees() {
        let repo = tempfile::tempdir().unwrap();
        let cache_dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join("apps/a")).unwrap();
        std::fs::write(repo.path().join("apps/a/cm.yaml"), "v: 1\n").unwrap();
        std::fs::write(repo.path().join("top.yaml"), "top\n").unwrap();
        git(repo.path(), &["init", "-q", "-b", "main"]);
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-q", "-m", "one"]);
        let url = format!("file://{}", repo.path().display());
        let cache = RepoCache::new(cache_dir.path(), LocalRepos::default());

        let first = cache.manifests(&url, "main", "apps/a").unwrap();
        assert_eq!(first.revision.as_ref().map(String::len), Some(40));
        assert_eq!(
            std::fs::read_to_string(first.root.join("cm.yaml")).unwrap(),
            "v: 1\n"
        );
        assert!(!first.root.join("top.yaml").exists());
        assert_eq!(cache.manifests(&url, "main", "apps/a").unwrap(), first);

        std::fs::write(repo.path().join("apps/a/cm.yaml"), "v: 2\n").unwrap();
        git(repo.path(), &["commit", "-q", "-am", "two"]);
        let second = cache.manifests(&url, "", "apps/a").unwrap();
        assert_ne!(second.revision, first.revision);
        assert_eq!(
            std::fs::read_to_string(second.root.join("cm.yaml")).unwrap(),
            "v: 2\n"
        );
        let pinned = cache
            .manifests(&url, first.revision.as_deref().unwrap(), "apps/a")
            .unwrap();
        assert_eq!(pinned, first, "an older commit by its SHA");
        assert!(matches!(
            cache.manifests(&url, "no-such-branch", ""),
            Err(FetchError::Git { .. })
        ));
    }

    #[test]
    fn a_plain_directory_is_read_in_place_and_names_are_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let cache = RepoCache::new(dir.path().join("cache"), LocalRepos::default());
        let url = format!("file://{}", dir.path().display());
        let read = cache.manifests(&url, "main", "apps").unwrap();
        assert_eq!((read.root, read.revision), (dir.path().join("apps"), None));
        assert_ne!(directory_name("a/b"), directory_name("a-b"));
        assert!(directory_name("https://x/y.git").starts_with("https---x-y-git-"));
    }
}

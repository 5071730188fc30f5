//! Repositories available on this machine, as the generators' [`GitReader`]: a `repoURL` is mapped
//! by `--repo URL=PATH`, or is itself a `file://` URL or a local path. A path inside a git
//! repository is read with the `git` CLI; any other directory is read as it is on disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flotilla_generators::source::{GitError, GitReader};

use super::bounds::BoundsError;
use super::directory::{DirectoryTree, WORKING_TREE};
use super::git_cli::GitCli;

/// A `--repo` argument that is not `URL=PATH`, or a repository that is not on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepoError {
    #[error("--repo {0:?}: expected URL=PATH")]
    Mapping(String),
    #[error("--repo {url}: {path} is not a directory")]
    NotADirectory { url: String, path: PathBuf },
}

/// How one repository is read.
#[derive(Clone, Debug)]
enum Reader {
    Git(GitCli),
    Directory(DirectoryTree),
}

/// The repositories this machine can read, by `repoURL`.
#[derive(Clone, Debug, Default)]
pub struct LocalRepos {
    mapped: BTreeMap<String, PathBuf>,
}

impl LocalRepos {
    /// Parses `URL=PATH` mappings (the last `=` separates them, so URLs may contain `=`).
    ///
    /// # Errors
    /// A malformed mapping or a path that is not a directory.
    pub fn from_mappings<S: AsRef<str>>(mappings: &[S]) -> Result<Self, RepoError> {
        let mut mapped = BTreeMap::new();
        for mapping in mappings {
            let mapping = mapping.as_ref();
            let (url, path) = mapping
                .rsplit_once('=')
                .filter(|(url, path)| !url.is_empty() && !path.is_empty())
                .ok_or_else(|| RepoError::Mapping(mapping.to_string()))?;
            let path = PathBuf::from(path);
            if !path.is_dir() {
                return Err(RepoError::NotADirectory {
                    url: url.to_string(),
                    path,
                });
            }
            mapped.insert(url.to_string(), path);
        }
        Ok(Self { mapped })
    }

    /// The local directory behind `repo_url`, if any.
    #[must_use]
    pub fn local_path(&self, repo_url: &str) -> Option<PathBuf> {
        if let Some(path) = self.mapped.get(repo_url) {
            return Some(path.clone());
        }
        let path = Path::new(repo_url.strip_prefix("file://").unwrap_or(repo_url));
        let local =
            path.is_absolute() || repo_url.starts_with("file://") || repo_url.starts_with('.');
        if !local {
            return None;
        }
        // As `git clone` does, `/srv/git/platform` also finds `/srv/git/platform.git`.
        let with_suffix = PathBuf::from(format!("{}.git", path.display()));
        [path.to_path_buf(), with_suffix]
            .into_iter()
            .find(|candidate| candidate.is_dir())
    }

    fn reader(&self, repo_url: &str) -> Result<Reader, GitError> {
        let path = self.local_path(repo_url).ok_or_else(|| GitError::Unavailable {
            message: format!(
                "repository {repo_url} is not available on this machine; map it with --repo {repo_url}=PATH"
            ),
        })?;
        Ok(if GitCli::is_repository(&path) {
            Reader::Git(GitCli::new(path))
        } else {
            Reader::Directory(DirectoryTree::new(path))
        })
    }
}

impl GitReader for LocalRepos {
    /// Local repositories need no credentials: `project` is not used.
    fn resolve(
        &self,
        repo_url: &str,
        revision: &str,
        _project: Option<&str>,
    ) -> Result<String, GitError> {
        match self.reader(repo_url)? {
            Reader::Git(git) => git
                .resolve(revision)
                .map_err(|_| GitError::RevisionNotFound {
                    revision: if revision.is_empty() {
                        "HEAD".into()
                    } else {
                        revision.to_string()
                    },
                }),
            Reader::Directory(_) => Ok(WORKING_TREE.to_string()),
        }
    }

    fn list_files(&self, repo_url: &str, commit: &str) -> Result<Vec<String>, GitError> {
        match self.reader(repo_url)? {
            Reader::Git(git) => git
                .list_files(commit)
                .map_err(|error| GitError::read("", error)),
            Reader::Directory(tree) => tree.list_files().map_err(|error| GitError::read("", error)),
        }
    }

    fn read_file(&self, repo_url: &str, commit: &str, path: &str) -> Result<Vec<u8>, GitError> {
        let missing = || GitError::FileNotFound {
            commit: commit.to_string(),
            path: path.to_string(),
        };
        match self.reader(repo_url)? {
            Reader::Git(git) => git.read_file(commit, path).map_err(|_| missing()),
            Reader::Directory(tree) => tree.read_file(path).map_err(|error| match error {
                BoundsError::PathMissing { .. } => missing(),
                error => GitError::read("", error),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::test_git::git;

    #[test]
    fn reads_a_git_repository_at_a_commit_and_a_plain_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("apps/a")).unwrap();
        std::fs::write(dir.path().join("apps/a/config.json"), "{\"v\": 1}").unwrap();
        let plain =
            LocalRepos::from_mappings(&[format!("https://x/repo.git={}", dir.path().display())])
                .unwrap();
        assert_eq!(
            plain.resolve("https://x/repo.git", "main", None).unwrap(),
            WORKING_TREE
        );
        assert_eq!(
            plain
                .list_files("https://x/repo.git", WORKING_TREE)
                .unwrap(),
            ["apps/a/config.json"]
        );

        git(dir.path(), &["init", "-q", "-b", "main"]);
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "one"]);
        let first = plain.resolve("https://x/repo.git", "main", None).unwrap();
        assert_eq!(first.len(), 40);
        std::fs::write(dir.path().join("apps/a/config.json"), "{\"v\": 2}").unwrap();
        git(dir.path(), &["commit", "-q", "-am", "two"]);
        // The first commit still reads as it was: a generation sees one snapshot.
        assert_eq!(
            plain
                .read_file("https://x/repo.git", &first, "apps/a/config.json")
                .unwrap(),
            b"{\"v\": 1}"
        );
        assert!(matches!(
            plain.resolve("https://x/repo.git", "no-such-branch", None),
            Err(GitError::RevisionNotFound { .. })
        ));
        assert!(matches!(
            plain.read_file("https://x/repo.git", &first, "missing.yaml"),
            Err(GitError::FileNotFound { .. })
        ));
    }

    #[test]
    fn unmapped_remote_urls_say_how_to_map_them() {
        let repos = LocalRepos::default();
        let err = repos
            .resolve("https://git.example.com/x.git", "main", None)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("--repo https://git.example.com/x.git=PATH"),
            "{err}"
        );
        assert!(matches!(
            LocalRepos::from_mappings(&["no-equals"]),
            Err(RepoError::Mapping(_))
        ));
    }
}

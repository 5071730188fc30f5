//! The controller's repository cache as the generators' [`GitReader`]: the ApplicationSet
//! controller resolves revisions and reads git generators' trees from the same mirrors the
//! Application controller syncs from, so remote repositories (`git://`, `http(s)://`, `ssh`)
//! work for both, and a repository is fetched once for both.

use flotilla_generators::source::{GitError, GitReader};

use super::cache::{FetchError, RepoCache};

impl GitReader for RepoCache {
    fn resolve(
        &self,
        repo_url: &str,
        revision: &str,
        project: Option<&str>,
    ) -> Result<String, GitError> {
        match self.commit(repo_url, revision, project) {
            Ok(Some((_, commit))) => Ok(commit),
            Ok(None) => self.local_repos().resolve(repo_url, revision, project),
            Err(FetchError::Revision { revision, .. }) => {
                Err(GitError::RevisionNotFound { revision })
            }
            Err(error @ FetchError::Unavailable { .. }) => Err(GitError::Unavailable {
                message: error.to_string(),
            }),
            Err(error) => Err(GitError::read("", error)),
        }
    }

    fn list_files(&self, repo_url: &str, commit: &str) -> Result<Vec<String>, GitError> {
        if self.is_plain_directory(repo_url) {
            return self.local_repos().list_files(repo_url, commit);
        }
        self.mirror(repo_url)
            .list_files(commit)
            .map_err(|error| GitError::read(format!("repository {repo_url}"), error))
    }

    fn read_file(&self, repo_url: &str, commit: &str, path: &str) -> Result<Vec<u8>, GitError> {
        if self.is_plain_directory(repo_url) {
            return self.local_repos().read_file(repo_url, commit, path);
        }
        self.mirror(repo_url)
            .read_file(commit, path)
            .map_err(|_| GitError::FileNotFound {
                commit: commit.to_owned(),
                path: path.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::LocalRepos;
    use crate::repo::test_git::git;

    #[test]
    fn reads_a_remote_through_its_mirror() {
        let origin = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(origin.path().join("apps/a")).unwrap();
        std::fs::write(origin.path().join("apps/a/config.json"), "{}").unwrap();
        git(origin.path(), &["init", "-q", "-b", "main"]);
        git(origin.path(), &["add", "-A"]);
        git(origin.path(), &["commit", "-q", "-m", "one"]);
        // Read from the mirror (cloned from the mapping's repository: this test has no network).
        let cache_dir = tempfile::tempdir().unwrap();
        let url = "https://git.example.com/acme/apps.git";
        let mapped =
            LocalRepos::from_mappings(&[format!("{url}={}", origin.path().display())]).unwrap();
        let cache = RepoCache::new(cache_dir.path(), mapped, std::sync::Arc::default());
        let commit = GitReader::resolve(&cache, url, "main", None).unwrap();
        assert_eq!(commit.len(), 40);
        assert_eq!(
            cache.list_files(url, &commit).unwrap(),
            ["apps/a/config.json"]
        );
        assert_eq!(
            cache.read_file(url, &commit, "apps/a/config.json").unwrap(),
            b"{}"
        );
        assert!(matches!(
            GitReader::resolve(&cache, url, "nope", None),
            Err(GitError::RevisionNotFound { .. })
        ));
        assert!(matches!(
            cache.read_file(url, &commit, "missing"),
            Err(GitError::FileNotFound { .. })
        ));
    }
}

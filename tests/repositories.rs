//! Repositories in every form users write them, read by the controller's repository cache:
//! bare and work-tree repositories through `file://` URLs and plain paths (with and without
//! `.git`), the same bare repository served over `git://` (`git daemon`) and `http://`
//! (`git http-backend`) from loopback, `targetRevision` as `HEAD`, a branch, a tag, a full or
//! short SHA, and a `path` below the root. Errors name the repository, the revision and the path.

mod support;

use flotilla::repo::LocalRepos;
use flotilla::repo::cache::RepoCache;
use support::git_remote::{GitDaemon, GitHttp, Remote, git};

/// A remote with two commits of `apps/web/config.yaml` (`v1`, tagged `v1`, then `v2` on `main`);
/// returns it with the two commits.
fn two_versions() -> (Remote, String, String) {
    let remote = Remote::new("platform");
    let config = |version: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web}}\ndata: {{version: {version}}}\n"
        )
    };
    remote.write("apps/web/config.yaml", &config("v1"));
    remote.write("README.md", "platform manifests\n");
    let first = remote.push("v1");
    git(remote.work(), &["tag", "-a", "v1", "-m", "release v1"]);
    git(remote.work(), &["push", "-q", "origin", "v1"]);
    remote.write("apps/web/config.yaml", &config("v2"));
    let second = remote.push("v2");
    (remote, first, second)
}

/// The `data.version` that `url` at `revision` holds below `apps/web`, read through a fresh
/// cache.
fn version_at(url: &str, revision: &str) -> (String, Option<String>) {
    let cache_dir = tempfile::tempdir().expect("a cache directory");
    let cache = RepoCache::new(cache_dir.path(), LocalRepos::default(), Default::default());
    let manifests = cache
        .manifests(url, revision, "apps/web", None)
        .unwrap_or_else(|error| panic!("{url} at {revision:?}: {error}"));
    let text = std::fs::read_to_string(manifests.root.join("config.yaml"))
        .unwrap_or_else(|error| panic!("{url} at {revision:?}: config.yaml: {error}"));
    let version = text
        .split("version: ")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("a version")
        .to_owned();
    (version, manifests.revision)
}

#[test]
fn every_url_form_and_revision_form_reads_the_same_commits() {
    let (remote, first, second) = two_versions();
    let daemon = GitDaemon::start(remote.exported());
    let http = GitHttp::start(remote.exported());
    // A team member's clone: a work-tree repository.
    let clone = tempfile::tempdir().expect("a temporary directory");
    let clone_dir = clone.path().join("platform");
    git(
        clone.path(),
        &["clone", "-q", &remote.file_url(), "platform"],
    );
    git(&clone_dir, &["fetch", "-q", "origin", "tag", "v1"]);
    let bare = remote.bare().display().to_string();
    let urls = [
        remote.file_url(),
        format!("file://{}", bare.trim_end_matches(".git")),
        bare.clone(),
        bare.trim_end_matches(".git").to_owned(),
        format!("file://{}", clone_dir.display()),
        clone_dir.display().to_string(),
        clone_dir.join(".git").display().to_string(),
        daemon.url(&remote.served_name()),
        http.url(&remote.served_name()),
    ];
    let short = &first[..7];
    let revisions = [
        ("HEAD", "v2", &second),
        ("", "v2", &second),
        ("main", "v2", &second),
        ("v1", "v1", &first),
        (first.as_str(), "v1", &first),
        (short, "v1", &first),
    ];
    for url in &urls {
        for (revision, version, commit) in &revisions {
            assert_eq!(
                version_at(url, revision),
                ((*version).to_owned(), Some((*commit).clone())),
                "{url} at {revision:?}"
            );
        }
    }
}

#[test]
fn a_commit_pushed_to_the_served_repository_is_fetched() {
    let (remote, _, second) = two_versions();
    let daemon = GitDaemon::start(remote.exported());
    let http = GitHttp::start(remote.exported());
    let cache_dir = tempfile::tempdir().expect("a cache directory");
    let cache = RepoCache::new(cache_dir.path(), LocalRepos::default(), Default::default());
    for url in [
        daemon.url(&remote.served_name()),
        http.url(&remote.served_name()),
    ] {
        let before = cache
            .manifests(&url, "main", "apps/web", None)
            .expect("reads main");
        assert_eq!(before.revision.as_deref(), Some(second.as_str()), "{url}");
    }
    remote.write(
        "apps/web/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: v3}\n",
    );
    let third = remote.push("v3");
    for url in [
        daemon.url(&remote.served_name()),
        http.url(&remote.served_name()),
    ] {
        let after = cache
            .manifests(&url, "main", "apps/web", None)
            .expect("reads main");
        assert_eq!(after.revision.as_deref(), Some(third.as_str()), "{url}");
        let text = std::fs::read_to_string(after.root.join("config.yaml")).expect("reads");
        assert!(text.contains("v3"), "{url}: {text}");
    }
}

#[test]
fn an_unknown_revision_or_repository_is_named_in_the_error() {
    let (remote, _, _) = two_versions();
    let http = GitHttp::start(remote.exported());
    let cache_dir = tempfile::tempdir().expect("a cache directory");
    let cache = RepoCache::new(cache_dir.path(), LocalRepos::default(), Default::default());
    for url in [remote.file_url(), http.url(&remote.served_name())] {
        let error = cache
            .manifests(&url, "release-9", "apps/web", None)
            .expect_err("no such branch")
            .to_string();
        assert!(
            error.starts_with(&format!(
                "repository {url}: revision \"release-9\" not found"
            )),
            "{error}"
        );
    }
    let missing = http.url("no-such-repo.git");
    let error = cache
        .manifests(&missing, "main", "apps/web", None)
        .expect_err("no such repository")
        .to_string();
    assert!(
        error.starts_with(&format!("repository {missing}: ")),
        "{error}"
    );
}

//! The controller's repository cache: every `repoURL` is cloned once as a bare mirror (with the
//! `git` CLI) under a cache directory and fetched again before each resolve — unless a fetch
//! started at most [`RepoCache::with_fetch_reuse`] before the resolve was asked for (by default
//! only one started after it: concurrent resolves share one fetch and see every commit pushed
//! before they asked); revisions are resolved once per fetch. The files of a commit are written
//! once (see [`super::checkout`]) to a directory named by the repository and the commit, and
//! reused: Applications of one repository at one commit share that tree (read only), and
//! Applications of different repositories never share one, nor can a link of one reach another
//! (links must stay inside their own tree). `file://` URLs, local paths and `--repo URL=PATH`
//! mappings are cloned from the local repository (bare or not); a local directory that is not a
//! repository is read as it is, without a revision, after the same link check. A source's
//! `path` must exist in the tree and stay inside it.
//!
//! The one resolver of sources: the command line (`sync`, `diff`, `plan`, `render`,
//! `simulate`) uses it too, in a temporary directory removed when the command ends
//! ([`RepoCache::temporary`]), fetching each repository once per process, so a commit is
//! checked out once however many Applications read it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;

use super::bounds::{BoundsError, check_links, source_path};
use super::checkout::{CheckoutError, checkout};
use super::directory::WORKING_TREE;
use super::git_auth::GitAuth;
use super::git_cli::{GitCli, GitError};
use super::git_requests::{GitRequest, counted};
use super::local::LocalRepos;
use super::temporary::TemporaryDir;
use crate::source::Toolchain;
use flotilla_core::secrets::repository::{
    CredentialSource, CredentialsError, RepoCredentials, is_remote,
};

/// A source that could not be fetched or written out.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// A remote repository asked of a cache that reads only this machine's
    /// ([`RepoCache::local_only`]).
    #[error("repository {url} is not available on this machine; map it with --repo {url}=PATH")]
    Unavailable { url: String },
    #[error("repository {url}{}: {error}", used(credentials.as_deref()))]
    Git {
        url: String,
        /// The Secret whose credentials git was given, if any.
        credentials: Option<String>,
        #[source]
        error: GitError,
    },
    /// The credentials Secret for the repository is unusable or unreadable.
    #[error("repository {url}: {error}")]
    Credentials {
        url: String,
        #[source]
        error: CredentialsError,
    },
    #[error("repository {url}: revision {revision:?} not found")]
    Revision {
        url: String,
        revision: String,
        #[source]
        error: GitError,
    },
    #[error("repository {url}: {error}")]
    Checkout {
        url: String,
        #[source]
        error: CheckoutError,
    },
    /// The source's `path` is missing or outside the tree, or a plain directory has a link
    /// leading outside it.
    #[error("repository {url} at {revision}: {error}")]
    Source {
        url: String,
        /// The commit, or `working-tree` for a plain directory.
        revision: String,
        #[source]
        error: BoundsError,
    },
    /// A chart of a Helm chart repository could not be fetched.
    #[error("chart repository {url}: chart {chart:?} at {version:?}: {error}")]
    Chart {
        url: String,
        chart: String,
        version: String,
        #[source]
        error: Box<crate::source::SourceError>,
    },
    /// The dependencies of a chart in a repository could not be built.
    #[error("repository {url} at {revision}: chart {path:?}: dependencies: {error}")]
    Dependencies {
        url: String,
        revision: String,
        path: String,
        #[source]
        error: Box<crate::source::SourceError>,
    },
    /// A requested revision that does not name one revision per source.
    #[error("{0}")]
    Revisions(String),
    #[error("repository {url}: cannot use the cache directory {dir}: {error}")]
    Cache {
        url: String,
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// How a git error says which credentials were used.
fn used(secret: Option<&str>) -> String {
    secret.map_or_else(String::new, |secret| {
        format!(" (with the credentials of Secret {secret})")
    })
}

/// The manifests of a source at one revision, on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifests {
    /// The directory to load (the source's `path` within the commit).
    pub root: PathBuf,
    /// The commit, or None for a plain local directory; for an Application with `sources`, the
    /// revisions of its sources joined ([`crate::source::multi::join_revisions`]).
    pub revision: Option<String>,
    /// For an Application with `sources`: each source checked out (empty otherwise).
    pub sources: Vec<crate::source::multi::SourceCheckout>,
}

/// Mirrors and commit trees under one directory.
#[derive(Debug)]
pub struct RepoCache {
    root: PathBuf,
    repos: LocalRepos,
    /// One lock per mirror: concurrent fetches into one repository would fight over its refs.
    mirrors: Mutex<BTreeMap<String, Arc<Mutex<Mirror>>>>,
    /// Local paths known to be repositories (a repository stays one).
    repositories: Mutex<BTreeSet<PathBuf>>,
    /// How old a fetch may be (from its start) and still serve a resolve.
    fetch_reuse: Duration,
    /// When a push to each mirrored repository was last announced ([`RepoCache::expire`]): a
    /// fetch that started before it serves no resolve.
    pushes: Mutex<HashMap<String, Instant>>,
    temporaries: AtomicU64,
    /// Where credentials for remote repositories come from (none: every one is anonymous).
    credentials: Option<Arc<dyn CredentialSource>>,
    /// The known-hosts file ssh checks host keys against (none: ssh's own).
    known_hosts: Option<PathBuf>,
    /// Whether git repositories are read only from this machine (mapped or local paths).
    local_only: bool,
    /// The tools that fetch charts and build chart dependencies, and generate what is fetched
    /// ([`RepoCache::toolchain`]).
    toolchain: Arc<Toolchain>,
    /// The temporary directory `root` is, removed with the cache.
    _temporary: Option<TemporaryDir>,
}

/// What is known of one mirror since its last fetch.
#[derive(Debug, Default)]
struct Mirror {
    /// When the last fetch (or the clone) with each credentials Secret (None: anonymous)
    /// started: a resolve serves from a recent fetch with its own credentials only, so a
    /// project never reads through another's Secret, and projects with different Secrets do
    /// not undo each other's freshness.
    fetched: HashMap<Option<String>, Instant>,
    /// Revisions resolved since the last fetch (with any credentials).
    resolved: HashMap<String, String>,
}

impl RepoCache {
    /// A cache under `root` (created on first use); `repos` maps URLs to local repositories;
    /// `toolchain` runs helm for charts and bounds each git command by its timeout.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>, repos: LocalRepos, toolchain: Arc<Toolchain>) -> Self {
        Self {
            root: root.into(),
            repos,
            mirrors: Mutex::default(),
            repositories: Mutex::default(),
            fetch_reuse: Duration::ZERO,
            pushes: Mutex::default(),
            temporaries: AtomicU64::new(0),
            credentials: None,
            known_hosts: None,
            local_only: false,
            toolchain,
            _temporary: None,
        }
    }

    /// A cache for one command, in a new temporary directory removed when the cache is dropped
    /// (or, by the command line's interrupt handler, on Ctrl-C): each repository is fetched once
    /// for the whole command ([`RepoCache::with_fetch_reuse`] without end), so each revision is
    /// resolved and each commit checked out once, shared by every Application that reads it.
    ///
    /// # Errors
    /// The temporary directory cannot be created.
    pub fn temporary(repos: LocalRepos, toolchain: Arc<Toolchain>) -> std::io::Result<Self> {
        let directory = TemporaryDir::new("flotilla-repos-")?;
        let mut cache =
            Self::new(directory.path(), repos, toolchain).with_fetch_reuse(Duration::MAX);
        cache._temporary = Some(directory);
        Ok(cache)
    }

    /// Reads git repositories only from this machine (`--repo` mappings, `file://` URLs, local
    /// paths): any other `repoURL` is [`FetchError::Unavailable`], never fetched. Chart
    /// repositories are still pulled.
    #[must_use]
    pub fn local_only(mut self) -> Self {
        self.local_only = true;
        self
    }

    /// Reaches remote repositories and chart repositories with the credentials `source` has for
    /// their URLs; ssh checks host keys against `known_hosts` (none: ssh's own files).
    #[must_use]
    pub fn with_credentials(
        mut self,
        source: Arc<dyn CredentialSource>,
        known_hosts: Option<PathBuf>,
    ) -> Self {
        self.credentials = Some(source);
        self.known_hosts = known_hosts;
        self
    }

    /// The credentials for `url` read for an Application of `project`, if any source has some.
    fn credentials_for(
        &self,
        url: &str,
        project: Option<&str>,
    ) -> Result<Option<RepoCredentials>, FetchError> {
        self.credentials
            .as_ref()
            .map(|source| source.credentials(url, project))
            .transpose()
            .map(Option::flatten)
            .map_err(|error| FetchError::Credentials {
                url: url.to_owned(),
                error,
            })
    }

    /// Lets a fetch that started at most `reuse` before a resolve serve it (new commits are
    /// then noticed up to `reuse` later), so many Applications of one repository cost one fetch.
    #[must_use]
    pub fn with_fetch_reuse(mut self, reuse: Duration) -> Self {
        self.fetch_reuse = reuse;
        self
    }

    /// Makes the next resolve of every mirrored repository whose `repoURL` `pushed` accepts fetch
    /// again, however recent its last fetch (a webhook announced a push to it); returns those
    /// URLs. Repositories not cloned yet are fetched at their first resolve anyway.
    pub fn expire(&self, pushed: impl Fn(&str) -> bool) -> Vec<String> {
        self.expire_since(pushed, Instant::now())
    }

    /// [`Self::expire`] for a push announced by another replica at the wall-clock time `stamp`
    /// (the RFC 3339 value of the refresh annotation its webhook wrote): fetches that started
    /// before that moment no longer serve; a stamp that is not a time is ignored. Only the
    /// replica that received a webhook forgot its own fetches; this lets the others follow.
    pub fn expire_announced(&self, stamp: &str, pushed: impl Fn(&str) -> bool) {
        let Ok(at) = stamp.parse::<Timestamp>() else {
            return;
        };
        let ago = Timestamp::now()
            .duration_since(at)
            .try_into()
            .unwrap_or(Duration::ZERO);
        let now = Instant::now();
        self.expire_since(pushed, now.checked_sub(ago).unwrap_or(now));
    }

    /// Makes fetches started before `at` of the repositories `pushed` accepts serve no more.
    fn expire_since(&self, pushed: impl Fn(&str) -> bool, at: Instant) -> Vec<String> {
        let urls: Vec<String> = self
            .mirrors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .filter(|url| pushed(url))
            .cloned()
            .collect();
        let mut pushes = self.pushes.lock().unwrap_or_else(PoisonError::into_inner);
        for url in &urls {
            let last = pushes.entry(url.clone()).or_insert(at);
            *last = (*last).max(at);
        }
        urls
    }

    /// The manifests of an Application's `source` at `revision` (its `targetRevision` when
    /// empty): a chart of a chart repository when it names one, else a path of a git repository.
    /// Blocking: runs `git` or `helm pull`.
    ///
    /// # Errors
    /// See [`RepoCache::manifests`] and [`RepoCache::chart`].
    pub fn source(
        &self,
        source: &flotilla_core::api::application::ApplicationSource,
        revision: &str,
        project: Option<&str>,
    ) -> Result<Manifests, FetchError> {
        let revision = if revision.is_empty() {
            source.target_revision.as_str()
        } else {
            revision
        };
        let pass_credentials = source.helm.as_ref().is_some_and(|h| h.pass_credentials);
        if source.chart.is_empty() {
            let manifests = self.manifests(&source.repo_url, revision, &source.path, project)?;
            self.with_dependencies(source, manifests, project, pass_credentials)
        } else {
            self.chart(
                &source.repo_url,
                &source.chart,
                revision,
                project,
                pass_credentials,
            )
        }
    }

    /// The manifests of an Application's sources at `revision` (each source's `targetRevision`
    /// when empty): [`RepoCache::source`] of its one `source`, or each of its `sources` checked
    /// out ([`crate::source::multi::check_out`]). Blocking: runs `git` or `helm pull`.
    ///
    /// # Errors
    /// The first source that cannot be read, or a revision that does not fit the sources.
    pub fn application(
        &self,
        spec: &flotilla_core::api::ApplicationSpec,
        revision: &str,
        project: Option<&str>,
    ) -> Result<Manifests, FetchError> {
        use crate::source::multi::{check_out, join_revisions};
        if !spec.is_multi_source() {
            return self.source(&spec.source, revision, project);
        }
        let sources = check_out(
            &spec.sources,
            revision,
            |source, revision| {
                let read = self.source(source, revision, project)?;
                Ok((read.root, read.revision))
            },
            FetchError::Revisions,
        )?;
        Ok(Manifests {
            root: sources.first().map(|s| s.root.clone()).unwrap_or_default(),
            revision: join_revisions(&sources),
            sources,
        })
    }

    /// The chart `chart` of the Helm chart repository or OCI registry `repo_url` at `version`
    /// (a version or semver range), kept under the cache's `charts/` directory; its revision is
    /// the resolved version; `pass_credentials` is `helm.passCredentials`. Blocking: runs
    /// `helm pull`.
    ///
    /// # Errors
    /// helm's failure (unknown chart, no version in range, unreachable repository) or an
    /// unwritable cache.
    pub fn chart(
        &self,
        repo_url: &str,
        chart: &str,
        version: &str,
        project: Option<&str>,
        pass_credentials: bool,
    ) -> Result<Manifests, FetchError> {
        let tools = &self.toolchain.tools;
        let credentials = self.credentials_for(repo_url, project)?;
        let charts = self.root.join("charts");
        let request = crate::source::chart_repo::ChartRequest {
            url: repo_url,
            chart,
            version,
            credentials: credentials.as_ref(),
            pass_credentials,
        };
        crate::source::chart_repo::pull(&charts, &request, tools)
            .map(|pulled| Manifests {
                root: pulled.root,
                revision: Some(pulled.version),
                sources: Vec::new(),
            })
            .map_err(|error| FetchError::Chart {
                url: repo_url.to_owned(),
                chart: chart.to_owned(),
                version: version.to_owned(),
                error: Box::new(error),
            })
    }

    /// `manifests` of a Helm `source` at a commit whose chart lacks dependencies in `charts/`:
    /// its copy with them built ([`crate::source::dependencies::prepare`]), kept under the
    /// cache's `built/` directory per (repository, commit, path), so they are fetched once.
    /// Other manifests are returned as they are.
    ///
    /// # Errors
    /// The dependency build failed (helm's message), naming the repository, commit and path.
    fn with_dependencies(
        &self,
        source: &flotilla_core::api::application::ApplicationSource,
        manifests: Manifests,
        project: Option<&str>,
        pass_credentials: bool,
    ) -> Result<Manifests, FetchError> {
        use crate::source::{Generator, SourceOptions};
        let Some(commit) = &manifests.revision else {
            return Ok(manifests);
        };
        let options = SourceOptions::of(
            source,
            flotilla_core::manifest::DirectoryOptions::default(),
            "",
            None,
        );
        if options.generator(&manifests.root) != Generator::Helm {
            return Ok(manifests);
        }
        let kept = self
            .root
            .join("built")
            .join(directory_name(&source.repo_url))
            .join(commit)
            .join(directory_name(&source.path));
        let lookup = |url: &str| {
            self.credentials_for(url, project)
                .map_err(|error| error.to_string())
        };
        let tools = &self.toolchain.tools;
        crate::source::dependencies::prepare(
            &manifests.root,
            &kept,
            &lookup,
            pass_credentials,
            tools,
        )
        .map(|root| Manifests {
            root,
            revision: manifests.revision.clone(),
            sources: Vec::new(),
        })
        .map_err(|error| FetchError::Dependencies {
            url: source.repo_url.clone(),
            revision: commit.clone(),
            path: source.path.clone(),
            error: Box::new(error),
        })
    }

    /// The manifests of `repo_url` at `revision` (a branch, tag, commit or empty for `HEAD`)
    /// below `path`. Blocking: runs `git`.
    ///
    /// # Errors
    /// The repository cannot be cloned or fetched, the revision is unknown, the commit is over
    /// the repository limits or has a link leading outside, `path` is missing or outside the
    /// repository, or the cache directory is unwritable.
    pub fn manifests(
        &self,
        repo_url: &str,
        revision: &str,
        path: &str,
        project: Option<&str>,
    ) -> Result<Manifests, FetchError> {
        let source_error = |revision: &str, error| FetchError::Source {
            url: repo_url.to_owned(),
            revision: revision.to_owned(),
            error,
        };
        let Some((mirror, commit)) = self.commit(repo_url, revision, project)? else {
            let local = self.repos.local_path(repo_url).unwrap_or_default();
            let root = check_links(&local)
                .and_then(|()| source_path(&local, path))
                .map_err(|error| source_error(WORKING_TREE, error))?;
            return Ok(Manifests {
                root,
                revision: None,
                sources: Vec::new(),
            });
        };
        let tree = self
            .root
            .join("trees")
            .join(directory_name(repo_url))
            .join(&commit);
        if !tree.is_dir() {
            self.write_tree(repo_url, &mirror, &commit, &tree)?;
        }
        Ok(Manifests {
            root: source_path(&tree, path).map_err(|error| source_error(&commit, error))?,
            revision: Some(commit),
            sources: Vec::new(),
        })
    }

    /// The mirror of `repo_url` and the commit `revision` names in it, or None when the URL is a
    /// local directory that is not a repository (read as it is, without a revision).
    pub(super) fn commit(
        &self,
        repo_url: &str,
        revision: &str,
        project: Option<&str>,
    ) -> Result<Option<(GitCli, String)>, FetchError> {
        if self.is_plain_directory(repo_url) {
            return Ok(None);
        }
        let origin = match self.repos.local_path(repo_url) {
            Some(local) => local.display().to_string(),
            None if self.local_only => {
                return Err(FetchError::Unavailable {
                    url: repo_url.to_owned(),
                });
            }
            None => repo_url.to_owned(),
        };
        self.resolve(repo_url, &origin, revision, project).map(Some)
    }

    /// Whether `repo_url` is a local directory that is not a repository.
    pub(super) fn is_plain_directory(&self, repo_url: &str) -> bool {
        self.repos
            .local_path(repo_url)
            .is_some_and(|local| !self.is_repository(&local))
    }

    /// The tools that generate what this cache fetches, and their kept generations.
    #[must_use]
    pub fn toolchain(&self) -> &Arc<Toolchain> {
        &self.toolchain
    }

    /// The local repositories this cache was given (`--repo` mappings).
    pub(super) fn local_repos(&self) -> &LocalRepos {
        &self.repos
    }

    /// The mirror of `repo_url`, as cloned by an earlier resolve.
    pub(super) fn mirror(&self, repo_url: &str) -> GitCli {
        GitCli::new(self.root.join("repos").join(directory_name(repo_url)))
    }

    /// Whether `path` is a repository (asked of `git` until it is one).
    fn is_repository(&self, path: &Path) -> bool {
        let mut known = self
            .repositories
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if known.contains(path) {
            return true;
        }
        let repository = GitCli::is_repository(path);
        if repository {
            known.insert(path.to_owned());
        }
        repository
    }

    /// The mirror of `repo_url` (cloned from `origin` on first use, fetched unless a recent
    /// enough fetch with the same credentials serves this call) and the commit `revision` names
    /// in it; a remote `origin` is reached with the credentials of `repo_url` for `project`.
    fn resolve(
        &self,
        repo_url: &str,
        origin: &str,
        revision: &str,
        project: Option<&str>,
    ) -> Result<(GitCli, String), FetchError> {
        let asked = Instant::now();
        let credentials = if origin == repo_url && is_remote(repo_url) {
            self.credentials_for(repo_url, project)?
        } else {
            None
        };
        let with = credentials.as_ref().map(|c| c.secret.clone());
        let state = self
            .mirrors
            .lock()
            .map(|mut mirrors| Arc::clone(mirrors.entry(repo_url.to_owned()).or_default()))
            .unwrap_or_default();
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let pushed = self
            .pushes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(repo_url)
            .copied();
        let fresh = state.fetched.get(&with).is_some_and(|&started| {
            (started >= asked || asked.duration_since(started) <= self.fetch_reuse)
                && pushed.is_none_or(|pushed| started >= pushed)
        });
        let dir = self.root.join("repos").join(directory_name(repo_url));
        let mirror = if fresh {
            GitCli::new(&dir)
        } else {
            let started = Instant::now();
            let mirror = counted(repo_url, GitRequest::Fetch, || {
                self.fetch(repo_url, origin, &dir, credentials.as_ref())
            })?;
            state.fetched.insert(with, started);
            state.resolved.clear();
            mirror
        };
        if let Some(commit) = state.resolved.get(revision) {
            return Ok((mirror, commit.clone()));
        }
        let commit = counted(repo_url, GitRequest::LsRemote, || mirror.resolve(revision)).map_err(
            |error| FetchError::Revision {
                url: repo_url.to_owned(),
                revision: if revision.is_empty() {
                    "HEAD"
                } else {
                    revision
                }
                .to_owned(),
                error,
            },
        )?;
        state.resolved.insert(revision.to_owned(), commit.clone());
        Ok((mirror, commit))
    }

    /// Clones the mirror of `repo_url` from `origin` into `dir` on first use, fetches it
    /// afterwards, with `credentials`.
    fn fetch(
        &self,
        repo_url: &str,
        origin: &str,
        dir: &Path,
        credentials: Option<&RepoCredentials>,
    ) -> Result<GitCli, FetchError> {
        let auth =
            GitAuth::new(origin, credentials, self.known_hosts.as_deref()).map_err(|error| {
                FetchError::Cache {
                    url: repo_url.to_owned(),
                    dir: std::env::temp_dir(),
                    error,
                }
            })?;
        let git_error = |error| FetchError::Git {
            url: repo_url.to_owned(),
            credentials: credentials.map(|c| c.secret.clone()),
            error,
        };
        if dir.is_dir() {
            let mirror = GitCli::new(dir);
            mirror
                .fetch(&auth, self.toolchain.tools.timeout)
                .map_err(git_error)?;
            return Ok(mirror);
        }
        let parent = self.root.join("repos");
        std::fs::create_dir_all(&parent).map_err(|error| FetchError::Cache {
            url: repo_url.to_owned(),
            dir: parent,
            error,
        })?;
        GitCli::clone_mirror(origin, dir, &auth, self.toolchain.tools.timeout).map_err(git_error)
    }

    /// Writes the tree to a temporary directory, then renames it into place (a concurrent
    /// writer of the same tree may win; its files are the same). A tree in place has passed
    /// every check.
    fn write_tree(
        &self,
        repo_url: &str,
        mirror: &GitCli,
        commit: &str,
        tree: &Path,
    ) -> Result<(), FetchError> {
        let number = self.temporaries.fetch_add(1, Ordering::Relaxed);
        let temporary = tree.with_extension(format!("tmp-{}-{number}", std::process::id()));
        checkout(mirror, commit, &temporary).map_err(|error| FetchError::Checkout {
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
        let cache = RepoCache::new(cache_dir.path(), LocalRepos::default(), Arc::default());

        let first = cache.manifests(&url, "main", "apps/a", None).unwrap();
        assert_eq!(first.revision.as_ref().map(String::len), Some(40));
        assert_eq!(
            std::fs::read_to_string(first.root.join("cm.yaml")).unwrap(),
            "v: 1\n"
        );
        assert!(!first.root.join("top.yaml").exists());
        assert_eq!(
            cache.manifests(&url, "main", "apps/a", None).unwrap(),
            first
        );

        std::fs::write(repo.path().join("apps/a/cm.yaml"), "v: 2\n").unwrap();
        git(repo.path(), &["commit", "-q", "-am", "two"]);
        let second = cache.manifests(&url, "", "apps/a", None).unwrap();
        assert_ne!(second.revision, first.revision);
        assert_eq!(
            std::fs::read_to_string(second.root.join("cm.yaml")).unwrap(),
            "v: 2\n"
        );
        let pinned = cache
            .manifests(&url, first.revision.as_deref().unwrap(), "apps/a", None)
            .unwrap();
        assert_eq!(pinned, first, "an older commit by its SHA");
        assert!(matches!(
            cache.manifests(&url, "no-such-branch", "", None),
            Err(FetchError::Revision { .. })
        ));
    }

    #[test]
    fn a_recent_fetch_serves_resolves_for_the_reuse_period_until_a_push_is_announced() {
        let repo = tempfile::tempdir().unwrap();
        let cache_dir = tempfile::tempdir().unwrap();
        std::fs::write(repo.path().join("cm.yaml"), "v: 1\n").unwrap();
        git(repo.path(), &["init", "-q", "-b", "main"]);
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-q", "-m", "one"]);
        let url = format!("file://{}", repo.path().display());
        let cache = RepoCache::new(cache_dir.path(), LocalRepos::default(), Arc::default())
            .with_fetch_reuse(Duration::from_secs(3600));
        let first = cache.manifests(&url, "main", "", None).unwrap();
        std::fs::write(repo.path().join("cm.yaml"), "v: 2\n").unwrap();
        git(repo.path(), &["commit", "-q", "-am", "two"]);
        assert_eq!(cache.manifests(&url, "main", "", None).unwrap(), first);
        let strict = RepoCache::new(cache_dir.path(), LocalRepos::default(), Arc::default());
        assert_ne!(strict.manifests(&url, "main", "", None).unwrap(), first);
        // An announced push (a webhook) ends the reuse of fetches made before it, for the
        // repositories it names only.
        assert_eq!(
            cache.expire(|pushed| pushed == "file:///elsewhere"),
            Vec::<String>::new()
        );
        assert_eq!(cache.manifests(&url, "main", "", None).unwrap(), first);
        assert_eq!(
            cache.expire(|pushed| pushed == url),
            std::slice::from_ref(&url)
        );
        let second = cache.manifests(&url, "main", "", None).unwrap();
        assert_ne!(second, first);
        // The fetch after the push serves again for the reuse period.
        git(
            repo.path(),
            &["commit", "-q", "--allow-empty", "-m", "three"],
        );
        assert_eq!(cache.manifests(&url, "main", "", None).unwrap(), second);
        // A push announced by another replica: a stamp before the last fetch changes nothing,
        // one after it ends its reuse; a value that is not a time is ignored.
        let before = Timestamp::now()
            .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(60))
            .unwrap();
        cache.expire_announced(&before.to_string(), |_| true);
        cache.expire_announced("normal", |_| true);
        assert_eq!(cache.manifests(&url, "main", "", None).unwrap(), second);
        std::thread::sleep(Duration::from_millis(20));
        cache.expire_announced(&Timestamp::now().to_string(), |pushed| pushed == url);
        assert_ne!(cache.manifests(&url, "main", "", None).unwrap(), second);
    }

    #[test]
    fn a_plain_directory_is_read_in_place_and_names_are_distinct() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("apps")).unwrap();
        let cache = RepoCache::new(
            dir.path().join("cache"),
            LocalRepos::default(),
            Arc::default(),
        );
        let url = format!("file://{}", dir.path().display());
        let read = cache.manifests(&url, "main", "apps", None).unwrap();
        assert_eq!((read.root, read.revision), (dir.path().join("apps"), None));
        let missing = cache.manifests(&url, "main", "app", None).unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!("repository {url} at working-tree: path \"app\" does not exist")
        );
        std::os::unix::fs::symlink("/etc", dir.path().join("apps/etc")).unwrap();
        let escaping = cache.manifests(&url, "main", "apps", None).unwrap_err();
        assert!(
            escaping
                .to_string()
                .ends_with("symbolic link apps/etc points outside the repository: /etc"),
            "{escaping}"
        );
        assert_ne!(directory_name("a/b"), directory_name("a-b"));
        assert!(directory_name("https://x/y.git").starts_with("https---x-y-git-"));
    }

    #[test]
    fn a_bare_repository_is_cloned_and_a_missing_or_escaping_path_is_an_error() {
        let work = tempfile::tempdir().unwrap();
        let bare = tempfile::tempdir().unwrap();
        let cache_dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(work.path().join("app")).unwrap();
        std::fs::write(work.path().join("app/cm.yaml"), "v: 1\n").unwrap();
        git(work.path(), &["init", "-q", "-b", "main"]);
        git(work.path(), &["add", "-A"]);
        git(work.path(), &["commit", "-q", "-m", "one"]);
        git(bare.path(), &["init", "-q", "--bare", "-b", "main"]);
        let bare_path = bare.path().display().to_string();
        git(work.path(), &["push", "-q", &bare_path, "main"]);
        let url = format!("file://{bare_path}");
        let cache = RepoCache::new(cache_dir.path(), LocalRepos::default(), Arc::default());
        let read = cache.manifests(&url, "main", "app", None).unwrap();
        let commit = read.revision.clone().unwrap();
        assert_eq!(
            std::fs::read_to_string(read.root.join("cm.yaml")).unwrap(),
            "v: 1\n"
        );
        for (path, problem) in [
            ("apps", "path \"apps\" does not exist"),
            ("../other", "path \"../other\" is outside the repository"),
        ] {
            let error = cache.manifests(&url, "main", path, None).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("repository {url} at {commit}: {problem}")
            );
        }
        // Another repository with the same commit gets a tree of its own.
        let other = format!("file://{}", work.path().display());
        let copy = cache.manifests(&other, "main", "app", None).unwrap();
        assert_eq!(copy.revision, read.revision);
        assert_ne!(copy.root, read.root);
    }
}

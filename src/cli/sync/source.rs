//! What `flotilla sync PATH` syncs: a manifest directory or file, or an Application YAML
//! (flotilla.dev or argoproj.io) whose source is a local directory or a git repository. A git
//! source's `targetRevision` is resolved to a commit, and its files at that commit are written to
//! a temporary directory the plan is loaded from.

use std::path::{Path, PathBuf};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

use crate::api::{API_VERSION, ARGO_CD_API_VERSION, ApplicationSpec};
use crate::duration::{DurationError, parse_duration};
use crate::manifest::DirectoryOptions;
use crate::repo::LocalRepos;
use crate::repo::git_cli::{GitCli, GitError};
use crate::sync::execute::RetryPolicy;

/// Retries are capped: Argo CD's negative limit ("forever") becomes this many.
const MAX_RETRIES: usize = 100;

/// A source that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot read {file}: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}: Application: {message}")]
    Application { file: String, message: String },
    #[error(
        "{file}: repository {url} is not available on this machine; map it with --repo {url}=PATH"
    )]
    Unavailable { file: String, url: String },
    #[error("{file}: {error}")]
    Git { file: String, error: GitError },
    #[error("{file}: syncPolicy.retry: {error}")]
    Retry { file: String, error: DurationError },
    #[error("cannot write the files of commit {commit} to {dir}: {error}")]
    Checkout {
        commit: String,
        dir: PathBuf,
        error: std::io::Error,
    },
}

/// Everything the sync needs to know about its source.
#[derive(Debug)]
pub struct SyncSource {
    /// The Application name, when the source is an Application.
    pub app: Option<String>,
    /// `spec.destination.namespace`.
    pub namespace: Option<String>,
    /// The commit synced (git sources only).
    pub revision: Option<String>,
    /// The manifest directory (or file) to load.
    pub root: PathBuf,
    /// `source.directory` options.
    pub options: DirectoryOptions,
    /// `syncPolicy.retry`.
    pub retry: Option<RetryPolicy>,
    /// `syncPolicy.automated.prune`.
    pub prune: bool,
    /// `syncPolicy.syncOptions: [PruneLast=true]`.
    pub prune_last: bool,
    /// The temporary checkout, removed when the source is dropped.
    _checkout: Option<Checkout>,
}

#[derive(Debug)]
struct Checkout(PathBuf);

impl Drop for Checkout {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApplicationDocument {
    #[serde(default)]
    metadata: ObjectMeta,
    spec: ApplicationSpec,
}

impl SyncSource {
    /// Reads `path`: an Application file, or else manifests.
    ///
    /// # Errors
    /// An unreadable or invalid Application, an unavailable repository or revision.
    pub fn open(path: &Path, repos: &LocalRepos) -> Result<Self, SourceError> {
        let file = path.display().to_string();
        if path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|error| SourceError::Read {
                file: file.clone(),
                error,
            })?;
            if let Some(document) = application(&text) {
                let document: ApplicationDocument =
                    serde_json::from_value(document).map_err(|e| SourceError::Application {
                        file: file.clone(),
                        message: e.to_string(),
                    })?;
                return Self::of_application(&file, document, repos);
            }
        }
        Ok(Self {
            app: None,
            namespace: None,
            revision: None,
            root: path.to_owned(),
            options: DirectoryOptions::default(),
            retry: None,
            prune: false,
            prune_last: false,
            _checkout: None,
        })
    }

    /// The source of a rendered Application (e.g. one of an ApplicationSet's).
    ///
    /// # Errors
    /// An unavailable repository or revision, an invalid retry policy.
    pub fn of_rendered(
        application: &crate::api::Application,
        repos: &LocalRepos,
    ) -> Result<Self, SourceError> {
        let name = application.metadata.name.clone().unwrap_or_default();
        let document = ApplicationDocument {
            metadata: application.metadata.clone(),
            spec: application.spec.clone(),
        };
        Self::of_application(&format!("Application {name}"), document, repos)
    }

    fn of_application(
        file: &str,
        document: ApplicationDocument,
        repos: &LocalRepos,
    ) -> Result<Self, SourceError> {
        let spec = document.spec;
        let source = &spec.source;
        let local = repos
            .local_path(&source.repo_url)
            .ok_or_else(|| SourceError::Unavailable {
                file: file.to_owned(),
                url: source.repo_url.clone(),
            })?;
        let git_error = |error| SourceError::Git {
            file: file.to_owned(),
            error,
        };
        let (root, revision, checkout) = if GitCli::is_repository(&local) {
            let git = GitCli::new(&local);
            let commit = git.resolve(&source.target_revision).map_err(git_error)?;
            let dir = checkout(&git, &commit, &source.path).map_err(|e| match e {
                CheckoutError::Git(error) => git_error(error),
                CheckoutError::Io(dir, error) => SourceError::Checkout {
                    commit: commit.clone(),
                    dir,
                    error,
                },
            })?;
            (dir.clone(), Some(commit), Some(Checkout(dir)))
        } else {
            (local.join(&source.path), None, None)
        };
        let options = source
            .directory
            .as_ref()
            .map(|d| DirectoryOptions {
                recurse: d.recurse,
                include: Some(d.include.clone()).filter(|s| !s.is_empty()),
                exclude: Some(d.exclude.clone()).filter(|s| !s.is_empty()),
            })
            .unwrap_or_default();
        let policy = spec.sync_policy.as_ref();
        let retry = policy
            .and_then(|p| p.retry.as_ref())
            .map(|retry| {
                let defaults = RetryPolicy::default();
                let backoff = retry.backoff.as_ref();
                let duration = |text: Option<&String>, default| {
                    text.map_or(Ok(default), |t| parse_duration(t))
                };
                Ok::<_, DurationError>(RetryPolicy {
                    limit: retry.limit.map_or(0, |limit| {
                        usize::try_from(limit).map_or(MAX_RETRIES, |l| l.min(MAX_RETRIES))
                    }),
                    duration: duration(
                        backoff.and_then(|b| b.duration.as_ref()),
                        defaults.duration,
                    )?,
                    factor: backoff
                        .and_then(|b| b.factor)
                        .map_or(defaults.factor, |f| f as f32),
                    max_duration: duration(
                        backoff.and_then(|b| b.max_duration.as_ref()),
                        defaults.max_duration,
                    )?,
                })
            })
            .transpose()
            .map_err(|error| SourceError::Retry {
                file: file.to_owned(),
                error,
            })?;
        Ok(Self {
            app: document.metadata.name,
            namespace: spec.destination.namespace.clone(),
            revision,
            root,
            options,
            retry,
            prune: policy
                .and_then(|p| p.automated.as_ref())
                .is_some_and(|a| a.prune),
            prune_last: policy
                .is_some_and(|p| p.sync_options.iter().any(|o| o == "PruneLast=true")),
            _checkout: checkout,
        })
    }
}

/// The document, when `text` is a single Application.
fn application(text: &str) -> Option<Value> {
    let document: Value = serde_saphyr::from_str(text).ok()?;
    let api_version = document.get("apiVersion")?.as_str()?;
    let is_application = document.get("kind")?.as_str()? == "Application"
        && (api_version == API_VERSION || api_version == ARGO_CD_API_VERSION);
    is_application.then_some(document)
}

enum CheckoutError {
    Git(GitError),
    Io(PathBuf, std::io::Error),
}

/// Writes the files under `path` at `commit` to a new temporary directory.
fn checkout(git: &GitCli, commit: &str, path: &str) -> Result<PathBuf, CheckoutError> {
    let prefix = path.trim_matches('/');
    let prefix = if prefix == "." { "" } else { prefix };
    let short = commit.get(..12).unwrap_or(commit);
    static CHECKOUTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let count = CHECKOUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "flotilla-sync-{}-{count}-{short}",
        std::process::id()
    ));
    let io = |error| CheckoutError::Io(dir.clone(), error);
    for file in git.list_files(commit).map_err(CheckoutError::Git)? {
        let relative = if prefix.is_empty() {
            file.as_str()
        } else {
            match file
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('/'))
            {
                Some(rest) => rest,
                None => continue,
            }
        };
        let target = dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let content = git.read_file(commit, &file).map_err(CheckoutError::Git)?;
        std::fs::write(&target, content).map_err(io)?;
    }
    std::fs::create_dir_all(&dir).map_err(io)?;
    Ok(dir)
}

//! What `flotilla sync PATH` syncs: a manifest directory or file, or an Application YAML
//! (flotilla.dev or argoproj.io) whose source is a local directory or a git repository. A git
//! source's `targetRevision` is resolved to a commit, and its files at that commit are written to
//! a temporary directory the plan is loaded from (its `path` below). A source's links must stay
//! inside its repository or directory, and its `path` must exist. A chart of a Helm chart
//! repository (`chart`) is fetched into a temporary directory at the version `targetRevision`
//! resolves to. An Application with `sources` has each source checked out so
//! ([`crate::source::multi`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

use crate::api::application::ApplicationSource;
use crate::api::{API_VERSION, ARGO_CD_API_VERSION, ApplicationSpec};
use crate::cluster::destination::identity;
use crate::project::{ProjectScope, Projects};
use crate::repo::LocalRepos;
use crate::repo::bounds::{BoundsError, check_links, source_path};
use crate::repo::checkout::{CheckoutError, checkout};
use crate::repo::directory::WORKING_TREE;
use crate::repo::git_cli::{GitCli, GitError};
use crate::source::multi::{SourceCheckout, check_out, join_revisions};
use crate::sync::application_settings::{
    SettingsError, SyncOverrides, SyncSettings, sync_settings,
};
use crate::sync::execute::ExecuteSettings;

/// A source that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot read {file}: {error}")]
    Read {
        file: String,
        #[source]
        error: std::io::Error,
    },
    #[error("{file}: Application: {message}")]
    Application { file: String, message: String },
    #[error("{file}: Application: {error}")]
    Parse {
        file: String,
        #[source]
        error: serde_json::Error,
    },
    #[error(
        "{file}: repository {url} is not available on this machine; map it with --repo {url}=PATH"
    )]
    Unavailable { file: String, url: String },
    #[error("{file}: {error}")]
    Git {
        file: String,
        #[source]
        error: GitError,
    },
    #[error("{file}: {error}")]
    Settings {
        file: String,
        #[source]
        error: SettingsError,
    },
    #[error("{file}: repository {url}: {error}")]
    Checkout {
        file: String,
        url: String,
        #[source]
        error: Box<CheckoutError>,
    },
    #[error("{file}: repository {url} at {revision}: {error}")]
    Bounds {
        file: String,
        url: String,
        /// The commit, or `working-tree` for a plain directory.
        revision: String,
        #[source]
        error: Box<BoundsError>,
    },
    #[error("{path}: {error}")]
    Directory {
        path: String,
        #[source]
        error: BoundsError,
    },
    #[error("{file}: chart repository {url}: {error}")]
    Chart {
        file: String,
        url: String,
        #[source]
        error: Box<crate::source::SourceError>,
    },
}

/// Everything the sync needs to know about its source.
#[derive(Debug)]
pub struct SyncSource {
    /// What errors name: the file, or `Application NAME`.
    label: String,
    /// The Application's metadata (empty for a manifest directory).
    pub metadata: ObjectMeta,
    /// The Application's spec (the defaults for a manifest directory).
    pub spec: ApplicationSpec,
    /// The commit synced (git sources only; for `sources`, their revisions joined).
    pub revision: Option<String>,
    /// The manifest directory (or file) to load.
    pub root: PathBuf,
    /// For an Application with `sources`: each source checked out.
    sources: Vec<SourceCheckout>,
    /// The temporary checkouts, removed when the source is dropped.
    _checkouts: Vec<Checkout>,
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
    /// Reads `path`: an Application file, or else manifests (a directory's links must stay
    /// inside it).
    ///
    /// # Errors
    /// An unreadable or invalid Application, an unavailable repository or revision, a missing
    /// `path`, a link leading outside.
    pub fn open(path: &Path, repos: &LocalRepos) -> Result<Self, SourceError> {
        let file = path.display().to_string();
        if path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|error| SourceError::Read {
                file: file.clone(),
                error,
            })?;
            if let Some(document) = application(&text) {
                let document: ApplicationDocument =
                    serde_json::from_value(document).map_err(|error| SourceError::Parse {
                        file: file.clone(),
                        error,
                    })?;
                return Self::of_application(&file, document, repos);
            }
        }
        if path.is_dir() {
            check_links(path).map_err(|error| SourceError::Directory {
                path: file.clone(),
                error,
            })?;
        }
        Ok(Self {
            label: file,
            metadata: ObjectMeta::default(),
            spec: ApplicationSpec::default(),
            revision: None,
            root: path.to_owned(),
            sources: Vec::new(),
            _checkouts: Vec::new(),
        })
    }

    /// The Application's name, when the source is an Application.
    #[must_use]
    pub fn app(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    /// The settings of a sync of this source: [`sync_settings`] of its Application (an
    /// automated sync) with `overrides` over it, admitted by its project among `projects` (its
    /// destination cluster as the Application names it).
    ///
    /// # Errors
    /// A field of the Application that does not give usable settings, or a project that refuses
    /// it, naming the source.
    pub fn settings(
        &self,
        overrides: &SyncOverrides,
        process: &ExecuteSettings,
        projects: &Projects,
    ) -> Result<SyncSettings, SourceError> {
        let cluster = identity(&self.spec.destination, []);
        let scope = ProjectScope {
            projects,
            cluster: &cluster,
            namespace: self.metadata.namespace.as_deref(),
        };
        let settings = sync_settings(&self.metadata, &self.spec, None, overrides, process, scope)
            .map_err(|error| SourceError::Settings {
            file: self.label.clone(),
            error,
        })?;
        Ok(SyncSettings {
            source: settings
                .source
                .checked_out(self.revision.clone(), &self.sources),
            ..settings
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
        let mut checkouts = Vec::new();
        let (root, revision, sources) = if spec.is_multi_source() {
            let sources = check_out(
                &spec.sources,
                "",
                |source, revision| {
                    let (root, read, checkout) = check_out_one(file, source, revision, repos)?;
                    checkouts.extend(checkout);
                    Ok((root, read))
                },
                |message| SourceError::Application {
                    file: file.to_owned(),
                    message,
                },
            )?;
            let root = sources.first().map(|s| s.root.clone()).unwrap_or_default();
            (root, join_revisions(&sources), sources)
        } else {
            let (root, revision, checkout) = check_out_one(file, &spec.source, "", repos)?;
            checkouts.extend(checkout);
            (root, revision, Vec::new())
        };
        Ok(Self {
            label: file.to_owned(),
            metadata: document.metadata,
            spec,
            revision,
            root,
            sources,
            _checkouts: checkouts,
        })
    }
}

/// One source of the Application in `file` at `revision` (its `targetRevision` when empty):
/// the directory of its `path` (or its chart), the commit or chart version read, and the
/// temporary checkout holding them, if any.
fn check_out_one(
    file: &str,
    source: &ApplicationSource,
    revision: &str,
    repos: &LocalRepos,
) -> Result<(PathBuf, Option<String>, Option<Checkout>), SourceError> {
    let revision = if revision.is_empty() {
        source.target_revision.as_str()
    } else {
        revision
    };
    if !source.chart.is_empty() {
        let checkout = Checkout(scratch_dir("chart"));
        let tools = crate::source::Tools::current();
        let request = crate::source::chart_repo::ChartRequest {
            url: &source.repo_url,
            chart: &source.chart,
            version: revision,
            credentials: None,
            pass_credentials: false,
        };
        let pulled =
            crate::source::chart_repo::pull(&checkout.0, &request, tools).map_err(|error| {
                SourceError::Chart {
                    file: file.to_owned(),
                    url: source.repo_url.clone(),
                    error: Box::new(error),
                }
            })?;
        return Ok((pulled.root, Some(pulled.version), Some(checkout)));
    }
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
    let bounds_error = |revision: &str, error| SourceError::Bounds {
        file: file.to_owned(),
        url: source.repo_url.clone(),
        revision: revision.to_owned(),
        error: Box::new(error),
    };
    if GitCli::is_repository(&local) {
        let git = GitCli::new(&local);
        let commit = git.resolve(revision).map_err(git_error)?;
        let dir = scratch_dir(commit.get(..12).unwrap_or(&commit));
        checkout(&git, &commit, &dir).map_err(|error| match error {
            CheckoutError::Git(error) => git_error(error),
            error => SourceError::Checkout {
                file: file.to_owned(),
                url: source.repo_url.clone(),
                error: Box::new(error),
            },
        })?;
        let checkout = Checkout(dir);
        let root =
            source_path(&checkout.0, &source.path).map_err(|error| bounds_error(&commit, error))?;
        Ok((root, Some(commit), Some(checkout)))
    } else {
        let root = check_links(&local)
            .and_then(|()| source_path(&local, &source.path))
            .map_err(|error| bounds_error(WORKING_TREE, error))?;
        Ok((root, None, None))
    }
}

/// A new temporary directory path for one source of this process, named after `label`
/// (several Applications of one process may check out the same commit).
fn scratch_dir(label: &str) -> PathBuf {
    static CHECKOUTS: AtomicUsize = AtomicUsize::new(0);
    let count = CHECKOUTS.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "flotilla-sync-{}-{count}-{label}",
        std::process::id()
    ))
}

/// The document, when `text` is a single Application.
fn application(text: &str) -> Option<Value> {
    let document: Value = serde_saphyr::from_str(text).ok()?;
    let api_version = document.get("apiVersion")?.as_str()?;
    let is_application = document.get("kind")?.as_str()? == "Application"
        && (api_version == API_VERSION || api_version == ARGO_CD_API_VERSION);
    is_application.then_some(document)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sync::SyncOptionKey;

    /// Opens an Application of a local directory with these metadata annotations and
    /// `syncPolicy` (YAML flow mappings), and derives its settings.
    fn open(annotations: &str, sync_policy: &str) -> Result<SyncSettings, SourceError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("app.yaml");
        let text = format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\n\
             metadata: {{name: shop, annotations: {annotations}}}\n\
             spec:\n  project: default\n  source: {{repoURL: {}, path: .}}\n  \
             destination: {{namespace: shop}}\n  syncPolicy: {sync_policy}\n",
            dir.path().display()
        );
        std::fs::write(&file, text).unwrap();
        let source = SyncSource::open(&file, &LocalRepos::from_mappings::<&str>(&[]).unwrap())?;
        assert_eq!(source.app(), Some("shop"));
        source.settings(
            &SyncOverrides::default(),
            &ExecuteSettings::default(),
            &Projects::unchecked(),
        )
    }

    #[test]
    fn an_application_file_gives_its_settings() {
        let settings = open(
            "{flotilla.dev/sync-timeout: 90s}",
            "{syncOptions: [CreateNamespace=true, RespectIgnoreDifferences=true, FailOnSharedResource=true]}",
        )
        .unwrap();
        assert_eq!(settings.execute.timeout, Duration::from_secs(90));
        assert_eq!(
            settings.execute.destination_namespace.as_deref(),
            Some("shop")
        );
        assert!(
            settings
                .execute
                .sync_options
                .get(SyncOptionKey::CreateNamespace)
        );
        assert!(settings.execute.respect_ignore_differences);
        assert_eq!(settings.ignored_options, ["FailOnSharedResource=true"]);
    }

    #[test]
    fn rejects_unreadable_values_naming_the_file_and_field() {
        let cases = [
            (
                "{flotilla.dev/sync-timeout: soon}",
                "{}",
                "annotation flotilla.dev/sync-timeout",
            ),
            (
                "{}",
                "{syncOptions: [Replace=yes]}",
                "syncPolicy.syncOptions: sync option Replace",
            ),
        ];
        for (annotations, policy, expected) in cases {
            let error = open(annotations, policy)
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("app.yaml: ") && error.contains(expected),
                "{error}"
            );
        }
    }
}

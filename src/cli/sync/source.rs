//! What `flotilla sync PATH` syncs: a manifest directory or file, or an Application YAML
//! (flotilla.dev or argoproj.io) whose source is a local directory, a git repository or a chart
//! repository, read through the one source resolver ([`RepoCache`], as the controller reads it):
//! a git source's `targetRevision` is resolved to a commit checked out once per command and
//! shared by every Application that reads it (`simulate`), its links must stay inside the
//! repository and its `path` must exist; a chart is pulled at the version `targetRevision`
//! resolves to, with a chart's dependencies built. An Application with `sources` has each source
//! read so ([`crate::source::multi`]). A manifest directory's links must stay inside it.

use std::path::{Path, PathBuf};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use jiff::Timestamp;

use crate::cluster::destinations::destination::identity;
use crate::repo::bounds::{BoundsError, check_links};
use crate::repo::cache::{FetchError, RepoCache};
use crate::source::multi::SourceCheckout;
use crate::sync::application_settings::{
    SettingsError, SyncOverrides, SyncSettings, sync_settings,
};
use crate::sync::execute::ExecuteSettings;
use flotilla_core::api::document::{DocumentError, parse_application};
use flotilla_core::api::{API_VERSION, ARGO_CD_API_VERSION, Application, ApplicationSpec};
use flotilla_core::controller::application::window_gate::refused_message;
use flotilla_core::project::windows::{SyncKind, sync_block_or_invalid};
use flotilla_core::project::{ProjectScope, Projects};

/// A source that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot read {file}: {error}")]
    Read {
        file: String,
        #[source]
        error: std::io::Error,
    },
    /// An Application file that cannot be read as one, or with a field Flotilla does not
    /// implement (refused by name, as `render` refuses it).
    #[error(transparent)]
    Parse(#[from] Box<DocumentError>),
    #[error("{file}: {error}")]
    Settings {
        file: String,
        #[source]
        error: SettingsError,
    },
    /// A repository, revision, chart or `path` that cannot be read.
    #[error("{file}: {error}")]
    Fetch {
        file: String,
        #[source]
        error: Box<FetchError>,
    },
    #[error("{path}: {error}")]
    Directory {
        path: String,
        #[source]
        error: BoundsError,
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
    /// The manifest directory (or file) to load, inside the resolver's checkouts.
    pub root: PathBuf,
    /// For an Application with `sources`: each source checked out.
    sources: Vec<SourceCheckout>,
}

/// An Application's metadata and spec.
struct ApplicationDocument {
    metadata: ObjectMeta,
    spec: ApplicationSpec,
}

impl SyncSource {
    /// Reads `path`: an Application file (its sources read through `repos`), or else manifests
    /// (a directory's links must stay inside it).
    ///
    /// # Errors
    /// An unreadable or invalid Application, an unavailable repository or revision, a missing
    /// `path`, a link leading outside.
    pub fn open(path: &Path, repos: &RepoCache) -> Result<Self, SourceError> {
        let file = path.display().to_string();
        if path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|error| SourceError::Read {
                file: file.clone(),
                error,
            })?;
            if is_application(&text) {
                let application = parse_application(&file, &text).map_err(Box::new)?;
                let document = ApplicationDocument {
                    metadata: application.metadata,
                    spec: application.spec,
                };
                return Self::of_application(file, document, repos);
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

    /// Why a manual sync of this Application cannot start at `now` under the sync windows of
    /// its project among `projects` (Argo CD refuses it in a deny window unless `manualSync`);
    /// `None` for a manifest directory or when it may.
    #[must_use]
    pub fn manual_sync_block(&self, projects: &Projects, now: Timestamp) -> Option<String> {
        self.metadata.name.as_ref()?;
        let mut app = Application::new("", self.spec.clone());
        app.metadata = self.metadata.clone();
        sync_block_or_invalid(projects, &app, SyncKind::Manual, now)
            .map(|block| format!("{}: {}", self.label, refused_message(&block)))
    }

    /// The source of a rendered Application (e.g. one of an ApplicationSet's).
    ///
    /// # Errors
    /// An unavailable repository or revision, a missing `path`.
    pub fn of_rendered(
        application: &flotilla_core::api::Application,
        repos: &RepoCache,
    ) -> Result<Self, SourceError> {
        let name = application.metadata.name.clone().unwrap_or_default();
        let document = ApplicationDocument {
            metadata: application.metadata.clone(),
            spec: application.spec.clone(),
        };
        Self::of_application(format!("Application {name}"), document, repos)
    }

    fn of_application(
        file: String,
        document: ApplicationDocument,
        repos: &RepoCache,
    ) -> Result<Self, SourceError> {
        let spec = document.spec;
        let read = repos
            .application(&spec, "", Some(&spec.project))
            .map_err(|error| SourceError::Fetch {
                file: file.clone(),
                error: Box::new(error),
            })?;
        Ok(Self {
            label: file,
            metadata: document.metadata,
            spec,
            revision: read.revision,
            root: read.root,
            sources: read.sources,
        })
    }
}

/// Whether `text` is a single Application.
fn is_application(text: &str) -> bool {
    let Ok(document) = serde_saphyr::from_str::<Value>(text) else {
        return false;
    };
    let field = |name: &str| document.get(name).and_then(Value::as_str);
    field("kind") == Some("Application")
        && matches!(field("apiVersion"), Some(API_VERSION | ARGO_CD_API_VERSION))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use flotilla_core::sync::SyncOptionKey;

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
        let repos =
            RepoCache::temporary(crate::repo::LocalRepos::default(), Default::default()).unwrap();
        let source = SyncSource::open(&file, &repos.local_only())?;
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
        assert_eq!(settings.execute.timeout, Some(Duration::from_secs(90)));
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
        assert!(settings.execute.fail_on_shared_resource);
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
            (
                "{}",
                "{automated: {selfHeel: true}}",
                "Application \"shop\": unsupported field spec.syncPolicy.automated.selfHeel: \
                 Flotilla does not implement it",
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

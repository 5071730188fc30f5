//! Where an Application reconcile failed: the error, its cause, and the reason it is reported under.

use crate::cluster::api_server::api_error::ApiError;
use crate::cluster::destinations::clients::ClientsError;
use crate::cluster::watches::watched_customizations::CustomizationsConfigError;
use crate::cluster::watches::watched_projects::ProjectsWatchError;
use crate::repo::cache::FetchError;
use crate::sync::application_settings::SettingsError;
use crate::sync::execute::ExecuteError;
use crate::sync::execute::cluster_api::ClusterError;
use flotilla_core::controller::application::error_reason::ErrorReason;
use flotilla_core::manifest::{ObjectKey, ValidationErrors};
use flotilla_core::project::Refusal;

/// Where a reconcile failed; the variant name is the Event reason and metric label.
#[derive(Debug, thiserror::Error)]
pub enum ApplicationError {
    #[error("Application {app}: {error}")]
    Destination {
        app: String,
        #[source]
        error: ClientsError,
    },
    #[error("Application {app}: {error}")]
    Source {
        app: String,
        #[source]
        error: FetchError,
    },
    #[error("Application {app}: reading the source failed: {error}")]
    SourceTask {
        app: String,
        #[source]
        error: tokio::task::JoinError,
    },
    #[error("Application {app}: {error}")]
    Plan {
        app: String,
        #[source]
        error: ValidationErrors,
    },
    #[error("Application {app}: reading {what}: {error}")]
    Observe {
        app: String,
        what: String,
        #[source]
        error: ClusterError,
    },
    #[error("Application {app}: {error}")]
    Settings {
        app: String,
        #[source]
        error: SettingsError,
    },
    #[error("Application {app}: {error}")]
    Sync {
        app: String,
        #[source]
        error: ExecuteError,
    },
    #[error("Application {app}: {error}")]
    Projects {
        app: String,
        #[source]
        error: ProjectsWatchError,
    },
    #[error("Application {app}: {refusal}")]
    Project {
        app: String,
        #[source]
        refusal: Refusal,
    },
    #[error("Application {app}: {error}")]
    Customizations {
        app: String,
        #[source]
        error: CustomizationsConfigError,
    },
    #[error("Application {app}: deleting {object}: {error}")]
    Delete {
        app: String,
        object: ObjectKey,
        #[source]
        error: ClusterError,
    },
    #[error("Application {app}: reading {what}: {error}")]
    Read {
        app: String,
        what: &'static str,
        #[source]
        error: ApiError,
    },
    #[error("Application {app}: writing {what}: {error}")]
    Write {
        app: String,
        what: &'static str,
        #[source]
        error: ApiError,
    },
}

impl ApplicationError {
    /// The step that failed, as a CamelCase reason for metrics.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Destination { .. } => ErrorReason::DestinationError,
            Self::Source { .. } | Self::SourceTask { .. } => ErrorReason::SourceError,
            Self::Plan { .. } => ErrorReason::PlanError,
            Self::Observe { .. } => ErrorReason::ObserveError,
            Self::Settings { .. } | Self::Project { .. } => ErrorReason::InvalidSpecError,
            Self::Projects { .. } => ErrorReason::ProjectsError,
            Self::Sync { .. } => ErrorReason::SyncError,
            Self::Customizations { .. } => ErrorReason::CustomizationsError,
            Self::Delete { .. } => ErrorReason::DeleteError,
            Self::Read { .. } => ErrorReason::ReadError,
            Self::Write { .. } => ErrorReason::WriteError,
        }
        .as_str()
    }
}

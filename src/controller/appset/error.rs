//! Where an ApplicationSet reconcile failed ([`AppSetError`]: the variant is the condition
//! reason, the Event reason and the metric label) and what the controller does then
//! ([`error_policy`]).

use flotilla_core::controller::appset::error_reason::ErrorReason;
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::controller::Action;

use super::AppSetRun;
use super::rollout::RolloutError;
use crate::cluster::api_server::api_error::ApiError;
use crate::cluster::generator_inputs::live_inventory::LiveInventoryError;
use crate::cluster::watches::watched_projects::ProjectsWatchError;
use crate::render::RenderError;
use flotilla_core::api::ApplicationSet;
use flotilla_core::controller::appset::requeue::rate_limit_requeue;
use flotilla_core::controller::appset::status::Outcome;
use flotilla_core::sync::IgnoreError;
use flotilla_generators::scm_api::rate_limit::RetryAfter;

/// Where a reconcile failed; the variant name is the condition reason and metric label.
#[derive(Debug, thiserror::Error)]
pub enum AppSetError {
    #[error("listing the Applications of ApplicationSet {appset}: {error}")]
    Observe {
        appset: String,
        #[source]
        error: ApiError,
    },
    #[error("reading the cluster inventory: {0}")]
    Generate(#[from] LiveInventoryError),
    #[error("{0}")]
    Projects(#[from] ProjectsWatchError),
    #[error("{0}")]
    Render(#[from] RenderError),
    #[error("the render task of ApplicationSet {appset} failed: {error}")]
    RenderTask {
        appset: String,
        #[source]
        error: tokio::task::JoinError,
    },
    #[error("ApplicationSet {appset} has no UID; it must be read from the API server")]
    Plan { appset: String },
    #[error("ApplicationSet {appset}: spec.{error}")]
    Spec {
        appset: String,
        #[source]
        error: IgnoreError,
    },
    #[error("applying Application {application}: {error}")]
    Apply {
        application: String,
        #[source]
        error: ApiError,
    },
    #[error("deleting Application {application}: {error}")]
    Delete {
        application: String,
        #[source]
        error: ApiError,
    },
    #[error("writing the finalizers of ApplicationSet {appset}: {error}")]
    Finalizer {
        appset: String,
        #[source]
        error: ApiError,
    },
    #[error("writing the status of ApplicationSet {appset}: {error}")]
    Status {
        appset: String,
        #[source]
        error: ApiError,
    },
    /// Removing a request annotation it carried out (`flotilla.dev/refresh`, `flotilla.dev/promote`).
    #[error("removing {annotation} from ApplicationSet {appset}: {error}")]
    Refresh {
        appset: String,
        annotation: &'static str,
        #[source]
        error: ApiError,
    },
    #[error("rollout of ApplicationSet {appset}: {error}")]
    Rollout {
        appset: String,
        #[source]
        error: RolloutError,
    },
}

impl AppSetError {
    /// The step that failed, as a CamelCase reason for conditions, Events and metrics.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Observe { .. } => ErrorReason::ObserveError,
            Self::Projects(_) => ErrorReason::ProjectsError,
            Self::Generate(_) | Self::Render(RenderError::Generate { .. }) => {
                ErrorReason::GenerateError
            }
            Self::Render(_) | Self::RenderTask { .. } => ErrorReason::RenderError,
            Self::Plan { .. } => ErrorReason::PlanError,
            Self::Spec { .. } => ErrorReason::InvalidSpecError,
            Self::Apply { .. } => ErrorReason::ApplyError,
            Self::Delete { .. } => ErrorReason::DeleteError,
            Self::Finalizer { .. } => ErrorReason::FinalizerError,
            Self::Status { .. } => ErrorReason::StatusError,
            Self::Refresh { .. } => ErrorReason::RefreshError,
            Self::Rollout { .. } => ErrorReason::RolloutError,
        }
        .as_str()
    }

    /// The note of the Warning Event saying it: `Reason: message`.
    pub(super) fn event_note(&self) -> String {
        format!("{}: {self}", self.reason())
    }

    /// When a generator's SCM provider, which answered that it is rate limited, may be asked
    /// again.
    #[must_use]
    pub fn retry_after(&self) -> Option<RetryAfter> {
        match self {
            Self::Render(RenderError::Generate { error, .. }) => error.retry_after(),
            _ => None,
        }
    }

    /// How the failure shows in status: before anything was written, nothing changed.
    pub(super) fn outcome(&self) -> Outcome {
        let (reason, message) = (self.reason().to_string(), self.to_string());
        match self {
            Self::Generate(_) | Self::Render(RenderError::Generate { .. }) => {
                Outcome::GenerateFailed { reason, message }
            }
            Self::Render(_) | Self::RenderTask { .. } | Self::Plan { .. } | Self::Spec { .. } => {
                Outcome::Invalid { reason, message }
            }
            _ => Outcome::ApplyFailed { reason, message },
        }
    }
}

/// Requeues a failed ApplicationSet with backoff (see [`FailureBackoff`]); an invalid spec waits
/// for the ApplicationSet to change.
pub(super) fn error_policy(
    appset: Arc<ApplicationSet>,
    error: &AppSetError,
    run: Arc<AppSetRun>,
) -> Action {
    let ctx = &run.ctx;
    ctx.metrics.reconciled(Some(error.reason()));
    if matches!(error, AppSetError::Spec { .. }) {
        // Only a change of the ApplicationSet fixes its spec; status already says what is wrong.
        tracing::warn!(appset = %appset.name_any(), reason = error.reason(), "{error}");
        return Action::await_change();
    }
    if let Some(retry) = error.retry_after() {
        // A rate-limited provider is asked again once its limit is over, not sooner.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let delay = rate_limit_requeue(retry, now);
        tracing::warn!(appset = %appset.name_any(), reason = error.reason(), after = ?delay, "{error}");
        return Action::requeue(delay);
    }
    let (failures, delay) = ctx.failures.failed(&appset.name_any());
    tracing::warn!(appset = %appset.name_any(), reason = error.reason(), failures, "{error}");
    Action::requeue(delay)
}

//! Why an ApplicationSet reconcile failed: the reasons of the `ErrorOccurred` condition, also
//! the prefix of the `ApplicationSetError` Event's note and the `result` label of
//! `flotilla_appset_reconciles`.

/// The step of an ApplicationSet reconcile that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorReason {
    /// The ApplicationSet's Applications, cluster Secrets or other inputs could not be read.
    ObserveError,
    /// The AppProjects could not be read.
    ProjectsError,
    /// A generator failed (a repository, a plugin, an SCM provider, a cluster decision resource); nothing is generated.
    GenerateError,
    /// The template could not be rendered for a parameter set, or a rendered Application is invalid.
    RenderError,
    /// The Applications to write could not be worked out (e.g. `ignoreApplicationDifferences` could not be applied).
    PlanError,
    /// The ApplicationSet's spec cannot be followed (e.g. `deletionOrder: Reverse` without steps).
    InvalidSpecError,
    /// Generated Applications that their project refuses were not written, or their syncs were refused by the project.
    ApplicationValidationError,
    /// An Application could not be written.
    ApplyError,
    /// An Application could not be deleted.
    DeleteError,
    /// The ApplicationSet's finalizer could not be added or removed.
    FinalizerError,
    /// The ApplicationSet's status could not be written (e.g. too large for etcd).
    StatusError,
    /// The refresh annotation could not be removed.
    RefreshError,
    /// The rollout's inputs could not be resolved (a revision, an analysis Job).
    RolloutError,
}

impl ErrorReason {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 13] = [
        Self::ObserveError,
        Self::ProjectsError,
        Self::GenerateError,
        Self::RenderError,
        Self::PlanError,
        Self::InvalidSpecError,
        Self::ApplicationValidationError,
        Self::ApplyError,
        Self::DeleteError,
        Self::FinalizerError,
        Self::StatusError,
        Self::RefreshError,
        Self::RolloutError,
    ];

    /// The value as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ObserveError => "ObserveError",
            Self::ProjectsError => "ProjectsError",
            Self::GenerateError => "GenerateError",
            Self::RenderError => "RenderError",
            Self::PlanError => "PlanError",
            Self::InvalidSpecError => "InvalidSpecError",
            Self::ApplicationValidationError => "ApplicationValidationError",
            Self::ApplyError => "ApplyError",
            Self::DeleteError => "DeleteError",
            Self::FinalizerError => "FinalizerError",
            Self::StatusError => "StatusError",
            Self::RefreshError => "RefreshError",
            Self::RolloutError => "RolloutError",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::ObserveError => {
                "The ApplicationSet's Applications, cluster Secrets or other inputs could not be read."
            }
            Self::ProjectsError => "The AppProjects could not be read.",
            Self::GenerateError => {
                "A generator failed (a repository, a plugin, an SCM provider, a cluster decision resource); nothing is generated."
            }
            Self::RenderError => {
                "The template could not be rendered for a parameter set, or a rendered Application is invalid."
            }
            Self::PlanError => {
                "The Applications to write could not be worked out (e.g. `ignoreApplicationDifferences` could not be applied)."
            }
            Self::InvalidSpecError => {
                "The ApplicationSet's spec cannot be followed (e.g. `deletionOrder: Reverse` without steps)."
            }
            Self::ApplicationValidationError => {
                "Generated Applications that their project refuses were not written, or their syncs were refused by the project."
            }
            Self::ApplyError => "An Application could not be written.",
            Self::DeleteError => "An Application could not be deleted.",
            Self::FinalizerError => "The ApplicationSet's finalizer could not be added or removed.",
            Self::StatusError => {
                "The ApplicationSet's status could not be written (e.g. too large for etcd)."
            }
            Self::RefreshError => "The refresh annotation could not be removed.",
            Self::RolloutError => {
                "The rollout's inputs could not be resolved (a revision, an analysis Job)."
            }
        }
    }
}

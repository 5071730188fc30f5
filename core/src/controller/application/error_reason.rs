//! Why an Application reconcile failed: the `result` label of `flotilla_application_reconciles`
//! (the conditions and Events say what happened in words).

/// The step of an Application reconcile that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorReason {
    /// The destination cluster could not be resolved or reached.
    DestinationError,
    /// The source could not be fetched or generated into manifests.
    SourceError,
    /// The manifests could not be planned (an invalid object).
    PlanError,
    /// The live objects could not be read.
    ObserveError,
    /// The Application's settings or its project refuse it.
    InvalidSpecError,
    /// The AppProjects could not be read.
    ProjectsError,
    /// A sync could not be carried out.
    SyncError,
    /// The settings ConfigMap's customizations could not be read.
    CustomizationsError,
    /// The resources of a deleted Application could not be deleted.
    DeleteError,
    /// The Application could not be read.
    ReadError,
    /// The Application or its status could not be written.
    WriteError,
}

impl ErrorReason {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 11] = [
        Self::DestinationError,
        Self::SourceError,
        Self::PlanError,
        Self::ObserveError,
        Self::InvalidSpecError,
        Self::ProjectsError,
        Self::SyncError,
        Self::CustomizationsError,
        Self::DeleteError,
        Self::ReadError,
        Self::WriteError,
    ];

    /// The value as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DestinationError => "DestinationError",
            Self::SourceError => "SourceError",
            Self::PlanError => "PlanError",
            Self::ObserveError => "ObserveError",
            Self::InvalidSpecError => "InvalidSpecError",
            Self::ProjectsError => "ProjectsError",
            Self::SyncError => "SyncError",
            Self::CustomizationsError => "CustomizationsError",
            Self::DeleteError => "DeleteError",
            Self::ReadError => "ReadError",
            Self::WriteError => "WriteError",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::DestinationError => "The destination cluster could not be resolved or reached.",
            Self::SourceError => "The source could not be fetched or generated into manifests.",
            Self::PlanError => "The manifests could not be planned (an invalid object).",
            Self::ObserveError => "The live objects could not be read.",
            Self::InvalidSpecError => "The Application's settings or its project refuse it.",
            Self::ProjectsError => "The AppProjects could not be read.",
            Self::SyncError => "A sync could not be carried out.",
            Self::CustomizationsError => {
                "The settings ConfigMap's customizations could not be read."
            }
            Self::DeleteError => "The resources of a deleted Application could not be deleted.",
            Self::ReadError => "The Application could not be read.",
            Self::WriteError => "The Application or its status could not be written.",
        }
    }
}

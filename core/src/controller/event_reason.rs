//! Why the controller publishes a Kubernetes Event on an Application or ApplicationSet (or, for
//! its leadership, on its Lease): a closed vocabulary of reasons, each with its type (Warning or Normal) and the action it reports on.

/// Why an Event was published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventReason {
    /// An ApplicationSet created, updated or deleted Applications.
    ApplicationsGenerated,
    /// An ApplicationSet reconcile failed (the note names the step).
    ApplicationSetError,
    /// A sync operation started.
    SyncStarted,
    /// An interrupted sync operation is resumed.
    SyncResumed,
    /// A sync operation succeeded.
    SyncSucceeded,
    /// A sync operation failed or was terminated.
    SyncFailed,
    /// The source, destination or live objects could not be read.
    ComparisonError,
    /// A deleted Application's resources are gone and its finalizer removed.
    ResourcesDeleted,
    /// A deleted Application's resources could not be deleted, or a deleted ApplicationSet's
    /// Applications could not be deleted in the order asked for.
    DeletionError,
    /// A deleted ApplicationSet began deleting the Applications of one step
    /// (`deletionOrder: Reverse`).
    DeletionStepStarted,
    /// A RollingSync step became the one being rolled out.
    RolloutStepStarted,
    /// Every RollingSync step is complete.
    RolloutComplete,
    /// A RollingSync step is stalled (deadline passed, Degraded, sync failed) or failed its
    /// bake.
    RolloutStalled,
    /// A failed RollingSync step is being rolled back (`onFailure: rollback`).
    RolloutRolledBack,
    /// The rollout was paused.
    RolloutPaused,
    /// The rollout was resumed.
    RolloutResumed,
    /// A rollout of `status.rolloutHistory` ended: the note records the whole entry, so the
    /// history older than the status keeps (its last 10) is read back from these Events.
    RolloutEnded,
    /// The RollingSync strategy cannot be followed.
    InvalidRolloutConfig,
    /// A notification was delivered.
    NotificationSent,
    /// A notification could not be delivered (after its retries).
    NotificationFailed,
    /// This replica leads again after it had stopped acting because its Lease was not renewed
    /// by the renew deadline (or was taken); published on the Lease.
    LeadershipLost,
}

impl EventReason {
    /// Every reason, in the order of the reference page.
    pub const ALL: [Self; 21] = [
        Self::ApplicationsGenerated,
        Self::ApplicationSetError,
        Self::SyncStarted,
        Self::SyncResumed,
        Self::SyncSucceeded,
        Self::SyncFailed,
        Self::ComparisonError,
        Self::ResourcesDeleted,
        Self::DeletionError,
        Self::DeletionStepStarted,
        Self::RolloutStepStarted,
        Self::RolloutComplete,
        Self::RolloutStalled,
        Self::RolloutRolledBack,
        Self::RolloutPaused,
        Self::RolloutResumed,
        Self::RolloutEnded,
        Self::InvalidRolloutConfig,
        Self::NotificationSent,
        Self::NotificationFailed,
        Self::LeadershipLost,
    ];

    /// What the reason means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::ApplicationsGenerated => {
                "An ApplicationSet created, updated or deleted Applications."
            }
            Self::ApplicationSetError => {
                "An ApplicationSet reconcile failed; the note starts with the failed step's reason (`RenderError: …`, `StatusError: …`)."
            }
            Self::SyncStarted => "A sync operation started.",
            Self::SyncResumed => "An interrupted sync operation is resumed.",
            Self::SyncSucceeded => "A sync operation succeeded.",
            Self::SyncFailed => "A sync operation failed or was terminated.",
            Self::ComparisonError => "The source, destination or live objects could not be read.",
            Self::ResourcesDeleted => {
                "A deleted Application's resources are gone and its finalizer removed."
            }
            Self::DeletionError => {
                "A deleted Application's resources could not be deleted, or a deleted ApplicationSet's Applications could not be deleted in the order asked for."
            }
            Self::DeletionStepStarted => {
                "A deleted ApplicationSet began deleting the Applications of one step (`deletionOrder: Reverse`)."
            }
            Self::RolloutStepStarted => "A RollingSync step became the one being rolled out.",
            Self::RolloutComplete => "Every RollingSync step is complete.",
            Self::RolloutStalled => {
                "A RollingSync step is stalled (deadline passed, Degraded, sync failed) or failed its bake or analysis."
            }
            Self::RolloutRolledBack => {
                "A failed RollingSync step is being rolled back (`onFailure: rollback`)."
            }
            Self::RolloutPaused => "The rollout was paused.",
            Self::RolloutResumed => "The rollout was resumed.",
            Self::RolloutEnded => {
                "A rollout of `status.rolloutHistory` ended (Complete, Failed, RolledBack or Superseded); the note records it whole, and the web view reads the rollouts older than the status keeps from these Events while they last."
            }
            Self::InvalidRolloutConfig => "The RollingSync strategy cannot be followed.",
            Self::NotificationSent => "A notification was delivered.",
            Self::NotificationFailed => {
                "A notification could not be delivered (after its retries)."
            }
            Self::LeadershipLost => {
                "Published on the controller's Lease when a replica leads again after it stopped acting: its Lease was not renewed by the renew deadline (the API server did not answer) or was taken; the note says when it stopped and for how long."
            }
        }
    }

    /// The CamelCase reason written on the Event.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApplicationsGenerated => "ApplicationsGenerated",
            Self::ApplicationSetError => "ApplicationSetError",
            Self::SyncStarted => "SyncStarted",
            Self::SyncResumed => "SyncResumed",
            Self::SyncSucceeded => "SyncSucceeded",
            Self::SyncFailed => "SyncFailed",
            Self::ComparisonError => "ComparisonError",
            Self::ResourcesDeleted => "ResourcesDeleted",
            Self::DeletionError => "DeletionError",
            Self::DeletionStepStarted => "DeletionStepStarted",
            Self::RolloutStepStarted => "RolloutStepStarted",
            Self::RolloutComplete => "RolloutComplete",
            Self::RolloutStalled => "RolloutStalled",
            Self::RolloutRolledBack => "RolloutRolledBack",
            Self::RolloutPaused => "RolloutPaused",
            Self::RolloutResumed => "RolloutResumed",
            Self::RolloutEnded => "RolloutEnded",
            Self::InvalidRolloutConfig => "InvalidRolloutConfig",
            Self::NotificationSent => "NotificationSent",
            Self::NotificationFailed => "NotificationFailed",
            Self::LeadershipLost => "LeadershipLost",
        }
    }

    /// Whether the Event is a Warning (failures) rather than Normal.
    #[must_use]
    pub fn is_warning(self) -> bool {
        matches!(
            self,
            Self::ApplicationSetError
                | Self::SyncFailed
                | Self::ComparisonError
                | Self::DeletionError
                | Self::RolloutStalled
                | Self::RolloutRolledBack
                | Self::InvalidRolloutConfig
                | Self::NotificationFailed
                | Self::LeadershipLost
        )
    }

    /// Whether every sync of every Application publishes it (Normal): such Events are
    /// rate-limited ([`super::event_budget`]).
    #[must_use]
    pub fn is_routine(self) -> bool {
        matches!(
            self,
            Self::SyncStarted | Self::SyncResumed | Self::SyncSucceeded
        )
    }

    /// The action the Event reports on.
    #[must_use]
    pub fn action(self) -> &'static str {
        match self {
            Self::ApplicationsGenerated | Self::ApplicationSetError => "Generate",
            Self::SyncStarted | Self::SyncResumed | Self::SyncSucceeded | Self::SyncFailed => {
                "Sync"
            }
            Self::ComparisonError => "Compare",
            Self::ResourcesDeleted | Self::DeletionError | Self::DeletionStepStarted => "Delete",
            Self::RolloutStepStarted
            | Self::RolloutComplete
            | Self::RolloutStalled
            | Self::RolloutRolledBack
            | Self::RolloutPaused
            | Self::RolloutResumed
            | Self::RolloutEnded
            | Self::InvalidRolloutConfig => "Rollout",
            Self::NotificationSent | Self::NotificationFailed => "Notify",
            Self::LeadershipLost => "Lead",
        }
    }
}

//! Kubernetes Events the controller publishes on Applications and ApplicationSets, with a closed
//! vocabulary of reasons. Publishing is best effort: a rejected Event is logged, never fails a
//! reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::cluster::api_error::ApiError;

/// The name the controller reports Events as.
pub const REPORTING_CONTROLLER: &str = "flotilla-controller";

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
    /// A deleted Application's resources could not be deleted.
    DeletionError,
    /// A RollingSync step became the one being rolled out.
    RolloutStepStarted,
    /// Every RollingSync step is complete.
    RolloutComplete,
    /// A RollingSync step is stalled (deadline passed, Degraded, sync failed).
    RolloutStalled,
    /// The rollout was paused.
    RolloutPaused,
    /// The rollout was resumed.
    RolloutResumed,
    /// The RollingSync strategy cannot be followed.
    InvalidRolloutConfig,
}

impl EventReason {
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
            Self::RolloutStepStarted => "RolloutStepStarted",
            Self::RolloutComplete => "RolloutComplete",
            Self::RolloutStalled => "RolloutStalled",
            Self::RolloutPaused => "RolloutPaused",
            Self::RolloutResumed => "RolloutResumed",
            Self::InvalidRolloutConfig => "InvalidRolloutConfig",
        }
    }

    /// Warning for failures, Normal otherwise.
    #[must_use]
    pub fn event_type(self) -> EventType {
        match self {
            Self::ApplicationSetError
            | Self::SyncFailed
            | Self::ComparisonError
            | Self::DeletionError
            | Self::RolloutStalled
            | Self::InvalidRolloutConfig => EventType::Warning,
            _ => EventType::Normal,
        }
    }

    /// The action the Event reports on.
    fn action(self) -> &'static str {
        match self {
            Self::ApplicationsGenerated | Self::ApplicationSetError => "Generate",
            Self::SyncStarted | Self::SyncResumed | Self::SyncSucceeded | Self::SyncFailed => {
                "Sync"
            }
            Self::ComparisonError => "Compare",
            Self::ResourcesDeleted | Self::DeletionError => "Delete",
            Self::RolloutStepStarted
            | Self::RolloutComplete
            | Self::RolloutStalled
            | Self::RolloutPaused
            | Self::RolloutResumed
            | Self::InvalidRolloutConfig => "Rollout",
        }
    }
}

/// Publishes Events for one controller process.
pub struct EventPublisher {
    recorder: Recorder,
}

impl EventPublisher {
    /// A publisher reporting as [`REPORTING_CONTROLLER`] (instance: the host name).
    #[must_use]
    pub fn new(client: Client) -> Self {
        let reporter = Reporter {
            controller: REPORTING_CONTROLLER.to_owned(),
            instance: None,
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Publishes an Event on `object`; a failure is logged.
    pub async fn publish(&self, object: &ObjectReference, reason: EventReason, note: String) {
        let mut note = note;
        if note.len() > 1000 {
            let mut end = 1000;
            while !note.is_char_boundary(end) {
                end -= 1;
            }
            note.truncate(end);
        }
        let event = Event {
            type_: reason.event_type(),
            reason: reason.as_str().to_owned(),
            note: Some(note),
            action: reason.action().to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, object).await {
            let error = ApiError::from(error);
            tracing::warn!(reason = reason.as_str(), "publishing an Event: {error}");
        }
    }
}

//! Kubernetes Events the controller publishes on Applications and ApplicationSets, for the closed
//! vocabulary of reasons of [`EventReason`]. Publishing is best effort: a rejected Event is logged, never fails a
//! reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::event_reason::EventReason;

use crate::cluster::api_error::ApiError;

/// The name the controller reports Events as.
pub const REPORTING_CONTROLLER: &str = "flotilla-controller";

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
            type_: if reason.is_warning() {
                EventType::Warning
            } else {
                EventType::Normal
            },
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

//! Kubernetes Events the controller publishes on Applications and ApplicationSets, for the closed
//! vocabulary of reasons of [`EventReason`]. Publishing is best effort: a rejected Event is logged, never fails a
//! reconcile; routine ones beyond the [`EventBudget`] are dropped (and counted in the log).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use flotilla_core::controller::event_budget::EventBudget;
use flotilla_core::controller::event_reason::EventReason;

use crate::cluster::api_server::api_error::ApiError;

/// The name the controller reports Events as.
pub const REPORTING_CONTROLLER: &str = "flotilla-controller";

/// Publishes Events for one controller process.
pub struct EventPublisher {
    recorder: Recorder,
    /// The routine Events left to publish, and how many were dropped so far.
    budget: Mutex<(EventBudget, u64)>,
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
            budget: Mutex::new((EventBudget::new(Instant::now()), 0)),
        }
    }

    /// Publishes an Event on `object` if the budget admits it; a failure is logged. Whether it
    /// was written (not when over the budget, refused or unanswered).
    pub async fn publish(
        &self,
        object: &ObjectReference,
        reason: EventReason,
        note: String,
    ) -> bool {
        self.publish_distinct(object, reason, note, None).await
    }

    /// [`Self::publish`]; with `own`, the Event is not folded into the series of an earlier
    /// Event of the same reason on `object` (as Events are while their note changes): `own`
    /// tells it apart (its `related` object is `object` at that field path). Whether it was
    /// written.
    pub async fn publish_distinct(
        &self,
        object: &ObjectReference,
        reason: EventReason,
        note: String,
        own: Option<String>,
    ) -> bool {
        {
            let mut budget = self.budget.lock().unwrap_or_else(PoisonError::into_inner);
            let (bucket, dropped) = &mut *budget;
            if !bucket.admit(reason, Instant::now()) {
                *dropped += 1;
                tracing::debug!(
                    reason = reason.as_str(),
                    dropped = *dropped,
                    "a routine Event over the budget is not published"
                );
                return false;
            }
        }
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
            secondary: own.map(|own| ObjectReference {
                field_path: Some(own),
                ..object.clone()
            }),
        };
        match self.recorder.publish(&event, object).await {
            Ok(()) => true,
            Err(error) => {
                let error = ApiError::from(error);
                tracing::warn!(reason = reason.as_str(), "publishing an Event: {error}");
                false
            }
        }
    }
}

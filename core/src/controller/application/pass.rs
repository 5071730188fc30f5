//! One Application reconcile, decided whole: from what the shell observed (the Application, its
//! compare or why there is none, the revision compared, who may start syncs, what the project's
//! sync windows say), the status to write, whether a sync starts (or resumes), waits or is
//! refused, the Event, and when to reconcile again. The sync windows are asked once, at the one
//! instant `now`. The shell writes the status once — with the operation's first write when a
//! sync starts — and then acts. Pure: the clock is an argument.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::api::application::{Application, ApplicationConditionType, Operation};
use crate::controller::event_reason::EventReason;
use crate::project::windows::{SyncKind, WindowBlock};
use crate::sync::{OperationPhase, begin};

use super::compare::Comparison;
use super::decide::{NextSync, SyncGate, Trigger, next_sync};
use super::status::{compare_patch, merged, operation_state_patch, with_condition};
use super::window_gate::{WindowGate, refused_message, waiting_message, window_gate};

/// The wait added to a window's opening before the Application is reconciled again (so the
/// window is open by then).
const AFTER_OPENING: Duration = Duration::from_secs(1);

/// What one reconcile observed of an Application.
pub struct PassInput<'a> {
    /// The Application as the reconcile read it.
    pub app: &'a Application,
    /// Its compare, or the condition saying why there is none (the manifests could not be
    /// built, the project refuses it, …).
    pub observed: Result<&'a Comparison, (ApplicationConditionType, &'a str)>,
    /// The revision the compare resolved.
    pub revision: Option<&'a str>,
    /// Who may start its syncs.
    pub gate: SyncGate,
    /// What its project's sync windows say about a sync of a kind at `now` (None: it may run).
    pub windows: &'a dyn Fn(SyncKind) -> Option<WindowBlock>,
    /// The periodic resync: the longest wait before the next reconcile.
    pub resync: Duration,
}

/// What the reconcile does after writing the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassAction {
    /// Nothing to sync: reconcile again after this long.
    Requeue(Duration),
    /// Start (or resume) this sync; the status is written with the operation's first write.
    Sync(Trigger),
    /// The requested operation was refused (the status records it Failed): remove the request
    /// from `spec.operation`, then reconcile again after `requeue`.
    Refuse {
        /// The request to remove.
        request: Operation,
        /// When to reconcile again.
        requeue: Duration,
    },
}

/// The whole decision of one reconcile.
#[derive(Clone, Debug, PartialEq)]
pub struct Pass {
    /// The merge patch of `/status` to write (`{"status": {...}}`), None when nothing changed.
    pub status: Option<Value>,
    /// What to do then.
    pub action: PassAction,
    /// The Event to publish, with its note.
    pub event: Option<(EventReason, String)>,
}

/// The pass of `input` at `now`.
#[must_use]
pub fn decide_pass(input: &PassInput<'_>, now: Timestamp) -> Pass {
    let app = input.app;
    let stamp = Time(now);
    let old = app.status.as_ref();
    let compared = compare_patch(app, input.observed, &stamp);
    let comparison = match input.observed {
        Ok(comparison) => comparison,
        Err((_, message)) => {
            return Pass {
                status: compared,
                action: PassAction::Requeue(input.resync),
                event: Some((EventReason::ComparisonError, message.to_owned())),
            };
        }
    };
    let next = next_sync(
        app,
        comparison.out_of_sync(),
        input.revision,
        input.gate,
        now,
    );
    let trigger = match next {
        NextSync::Now(trigger) => trigger,
        NextSync::After(wait) => return quiet(compared, wait.min(input.resync)),
        NextSync::Idle => return quiet(compared, input.resync),
    };
    match window_gate(&trigger, input.windows) {
        WindowGate::Proceed => Pass {
            status: compared,
            action: PassAction::Sync(trigger),
            event: None,
        },
        WindowGate::Wait(block) => {
            let message = waiting_message(&block);
            let status = with_condition(
                compared,
                old,
                ApplicationConditionType::SyncError,
                Some(&message),
                &stamp,
            );
            let opens = block
                .opens_at
                .and_then(|opens| Duration::try_from(opens.duration_since(now)).ok())
                .map_or(input.resync, |wait| wait + AFTER_OPENING);
            quiet(status, opens.min(input.resync))
        }
        WindowGate::Refuse(block) => match trigger {
            Trigger::Requested(request) => {
                let message = refused_message(&block);
                let failed = refused(app, &request, &message, &stamp);
                Pass {
                    status: merged(compared, Some(failed)),
                    action: PassAction::Refuse {
                        request,
                        requeue: input.resync,
                    },
                    event: Some((EventReason::SyncFailed, message)),
                }
            }
            // Only a requested sync is refused (see `window_gate`).
            other => Pass {
                status: compared,
                action: PassAction::Sync(other),
                event: None,
            },
        },
    }
}

/// A pass that writes `status` and syncs nothing.
fn quiet(status: Option<Value>, requeue: Duration) -> Pass {
    Pass {
        status,
        action: PassAction::Requeue(requeue),
        event: None,
    }
}

/// The status patch recording the refused `request` as an operation that failed at `now`
/// with `message`.
fn refused(app: &Application, request: &Operation, message: &str, now: &Time) -> Value {
    let name = app.metadata.name.as_deref().unwrap_or_default();
    let id = format!("{name}-{}", now.0.as_millisecond());
    let revision = request.sync.requested_revision();
    let revision = Some(revision.as_str()).filter(|r| !r.is_empty());
    let (mut state, _) = begin(None, revision, &id, now.clone());
    state.phase = OperationPhase::Failed;
    message.clone_into(&mut state.message);
    state.finished_at = Some(now.clone());
    json!({"status": {"operationState": operation_state_patch(&state)}})
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod tests;

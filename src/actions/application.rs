//! An Application's sync, requested, terminated or rolled back to an entry of its history: the
//! merge patches `flotilla app sync|terminate|rollback` and the web view's Sync, Terminate and
//! Rollback write.

use kube::Api;
use serde_json::json;

use super::error::ActionError;
use super::object::{patch, read};
use flotilla_core::api::application::{
    Application, InitiatedBy, Operation, SyncOperation, TERMINATE_ANNOTATION,
};
use flotilla_core::controller::application::rollback::rollback as decide_rollback;
use flotilla_core::sync::OperationPhase;

/// Requests `sync` of the Application `name` on behalf of `username` (recorded as the
/// operation's initiator); returns what was done, for people.
///
/// # Errors
/// The Application cannot be read, already has a sync requested, or cannot be patched.
pub async fn request_sync(
    api: &Api<Application>,
    name: &str,
    sync: SyncOperation,
    username: &str,
) -> Result<String, ActionError> {
    let app = read(api, name).await?;
    if let Some(pending) = &app.spec.operation {
        return Err(ActionError::Refused(format!(
            "Application {name} already has a sync requested by {}; wait for it or terminate it",
            pending.initiated_by.username
        )));
    }
    let operation = Operation {
        sync,
        initiated_by: InitiatedBy {
            username: username.to_owned(),
            automated: false,
        },
    };
    patch(api, name, &json!({ "spec": { "operation": operation } })).await?;
    Ok(format!("sync of Application {name} requested"))
}

/// Stops the Application's running sync (the terminate annotation, naming the operation), or
/// withdraws a requested one that has not started; returns what was done, for people.
///
/// # Errors
/// The Application cannot be read, has no sync to terminate, or cannot be patched.
pub async fn terminate(api: &Api<Application>, name: &str) -> Result<String, ActionError> {
    let app = read(api, name).await?;
    let running = app
        .status
        .as_ref()
        .and_then(|s| s.operation_state.as_ref())
        .filter(|op| op.phase == OperationPhase::Running);
    let body = match (running, &app.spec.operation) {
        (Some(op), _) => {
            json!({ "metadata": { "annotations": { TERMINATE_ANNOTATION: op.operation_id } } })
        }
        (None, Some(_)) => json!({ "spec": { "operation": null } }),
        (None, None) => {
            return Err(ActionError::Refused(format!(
                "Application {name} has no sync to terminate"
            )));
        }
    };
    patch(api, name, &body).await?;
    Ok(format!(
        "termination of Application {name}'s sync requested"
    ))
}

/// How many times a rollback is decided and written when the Application keeps changing under
/// it (client-go's `DefaultRetry` steps).
const CONFLICT_ATTEMPTS: usize = 5;

/// Requests the rollback of the Application `name` to its history entry `id` (else the one
/// before the newest) on behalf of `username`, as
/// [`flotilla_core::controller::application::rollback`] decides it: `spec.operation` (and, when
/// `force` lets it, `spec.syncPolicy.automated.enabled: false`) in one patch carrying the
/// Application's `resourceVersion`, so a change made meanwhile fails it instead of being
/// overwritten (and it is decided again on the Application as it is then, up to
/// [`CONFLICT_ATTEMPTS`] times); `prune` prunes what the entry does not have. Returns what was
/// done, for people.
///
/// # Errors
/// The Application cannot be read, the rollback is refused (automated sync on without `force`,
/// no such entry, …), or the patch fails.
pub async fn rollback(
    api: &Api<Application>,
    name: &str,
    id: Option<i64>,
    (force, prune): (bool, bool),
    username: &str,
) -> Result<String, ActionError> {
    // A change since the read (a status write, too, moves `resourceVersion`) fails the patch:
    // decided again on the Application as it is then, as client-go's RetryOnConflict does.
    let mut attempt = 1;
    loop {
        let app = read(api, name).await?;
        let initiated_by = InitiatedBy {
            username: username.to_owned(),
            automated: false,
        };
        let decided = decide_rollback(&app, id, (force, prune), initiated_by)
            .map_err(|refusal| ActionError::Refused(refusal.to_string()))?;
        let mut body = json!({
            "metadata": {"resourceVersion": app.metadata.resource_version},
            "spec": {"operation": decided.operation},
        });
        if decided.suspend_automated {
            body["spec"]["syncPolicy"] = json!({"automated": {"enabled": false}});
        }
        match patch(api, name, &body).await {
            Ok(()) => {
                let suspended = if decided.suspend_automated {
                    format!(
                        "automated sync of Application {name} suspended (spec.syncPolicy.automated.enabled: false)\n"
                    )
                } else {
                    String::new()
                };
                return Ok(format!(
                    "{suspended}rollback of Application {name} to history entry {} (revision {}) requested",
                    decided.entry.id, decided.entry.revision
                ));
            }
            Err(error) if error.is_conflict() && attempt < CONFLICT_ATTEMPTS => attempt += 1,
            Err(error) => return Err(error),
        }
    }
}

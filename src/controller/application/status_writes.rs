//! Writes to an Application: its status (the one patch of a reconcile), one condition of a
//! deletion, an Event.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::Value;

use super::context::ApplicationContext;
use super::error::ApplicationError;
use flotilla_core::api::Application;
use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::controller::application::status::condition_patch;
use flotilla_core::controller::event_reason::EventReason;

/// Writes the merge patch `patch` (`{"status": {...}}`) of the Application's status; the
/// Application as written.
///
/// # Errors
/// The status could not be written.
pub(super) async fn write_status(
    ctx: &ApplicationContext,
    app: &Application,
    patch: Value,
) -> Result<Application, ApplicationError> {
    ctx.api()
        .patch_status(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .map_err(|error| ApplicationError::Write {
            app: app.name_any(),
            what: "status",
            error: error.into(),
        })
}

/// Sets (or, with None, clears) a condition on the Application as it is now (read again: a
/// deletion's steps write between reconciles); the Application as written when that changed it
/// (its new `resourceVersion` is what a later write of the same pass must send).
///
/// # Errors
/// The Application could not be read, or its status not written.
pub(super) async fn report(
    ctx: &ApplicationContext,
    app: &Application,
    type_: ApplicationConditionType,
    message: Option<&str>,
) -> Result<Option<Application>, ApplicationError> {
    let current =
        ctx.api()
            .get_opt(&app.name_any())
            .await
            .map_err(|error| ApplicationError::Read {
                app: app.name_any(),
                what: "status.conditions",
                error: error.into(),
            })?;
    let Some(current) = current else {
        return Ok(None);
    };
    let now = Time(Timestamp::now());
    match condition_patch(current.status.as_ref(), type_, message, &now) {
        Some(patch) => write_status(ctx, app, patch).await.map(Some),
        None => Ok(None),
    }
}

/// Publishes an Event about the Application.
pub(super) async fn publish(
    ctx: &ApplicationContext,
    app: &Application,
    reason: EventReason,
    note: String,
) {
    ctx.events.publish(&app.object_ref(&()), reason, note).await;
}

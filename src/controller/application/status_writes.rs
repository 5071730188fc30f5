//! Writes to an Application: its status, one condition, an Event.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::Value;

use super::context::ApplicationContext;
use super::error::ApplicationError;
use flotilla_core::api::Application;
use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::controller::application::compare::Comparison;
use flotilla_core::controller::application::status::{
    condition_patch, status_patch, with_generation,
};
use flotilla_core::controller::event_reason::EventReason;

/// Writes sync, health, resources and conditions when they changed (or are stale), with the
/// `carried` fields of the status (an operation's end held back to be written with its
/// compare) in the same patch; the Application as written, if it was.
pub(super) async fn write_status(
    ctx: &ApplicationContext,
    app: &Application,
    observed: Result<&Comparison, (ApplicationConditionType, &str)>,
    carried: Option<Value>,
) -> Result<Option<Application>, ApplicationError> {
    let Some(patch) = merged(carried, compare_patch(app, observed)) else {
        return Ok(None);
    };
    patch_status(ctx, app, "status", patch).await.map(Some)
}

/// The merge patch of `/status` that writes `observed` (sync, health, resources, conditions)
/// when it changed or is stale, with the observed generation; None when nothing changed.
pub(super) fn compare_patch(
    app: &Application,
    observed: Result<&Comparison, (ApplicationConditionType, &str)>,
) -> Option<Value> {
    let now = Time(Timestamp::now());
    let patch = status_patch(app.status.as_ref(), observed, &now);
    with_generation(patch, app.status.as_ref(), app.metadata.generation, &now)
}

/// Two merge patches `{"status": {...}}` of distinct fields as one.
pub(super) fn merged(a: Option<Value>, b: Option<Value>) -> Option<Value> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            if let (Some(into), Some(Value::Object(from))) =
                (a["status"].as_object_mut(), b.get("status"))
            {
                into.extend(from.clone());
            }
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

pub(super) async fn patch_status(
    ctx: &ApplicationContext,
    app: &Application,
    what: &'static str,
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
            what,
            error: error.into(),
        })
}

/// Sets (or, with None, clears) a condition on the Application as it is now; true when that
/// changed it.
pub(super) async fn report(
    ctx: &ApplicationContext,
    app: &Application,
    type_: ApplicationConditionType,
    message: Option<&str>,
) -> Result<bool, ApplicationError> {
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
        return Ok(false);
    };
    let now = Time(Timestamp::now());
    match condition_patch(current.status.as_ref(), type_, message, &now) {
        Some(patch) => patch_status(ctx, app, "status.conditions", patch)
            .await
            .map(|_| true),
        None => Ok(false),
    }
}

pub(super) async fn publish(
    ctx: &ApplicationContext,
    app: &Application,
    reason: EventReason,
    note: String,
) {
    ctx.events.publish(&app.object_ref(&()), reason, note).await;
}

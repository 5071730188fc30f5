//! What an ApplicationSet reconcile shows: its outcome (decided by the core), its status written
//! once, only when it changed ([`write_status`]), and the Event saying what was written or what
//! failed.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::context::AppSetContext;
use super::error::AppSetError;
use super::render::Planned;
use crate::render::admission::refusals_message;
use flotilla_core::api::application_set_status::{ApplicationSetStatus, DeletionProgress};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::outcome::reconcile_outcome;
use flotilla_core::controller::appset::rollout_status::{RolloutOutcome, with_rollout};
use flotilla_core::controller::appset::status::{
    Outcome, changed, next_status, status_patch, within_size,
};
use flotilla_core::controller::event_reason::EventReason;

/// The outcome of a reconcile whose Applications were `result` and whose rollout pass, if
/// any, `pass` (see [`reconcile_outcome`]).
pub(super) fn outcome<T>(
    result: &Result<Planned, AppSetError>,
    pass: Option<&Result<T, AppSetError>>,
    existing: &[Arc<Application>],
) -> Outcome {
    let failed = match (result, pass) {
        (Err(error), _) | (Ok(_), Some(Err(error))) => Some(error.outcome()),
        (Ok(_), _) => None,
    };
    let not_written = result
        .as_ref()
        .ok()
        .filter(|planned| !planned.refused.is_empty())
        .map(|planned| refusals_message(&planned.refused));
    reconcile_outcome(failed, not_written, existing)
}

/// An Event when Applications were written, or when the reconcile failed.
pub(super) async fn publish_outcome(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    result: &Result<Planned, AppSetError>,
) {
    let (reason, note) = match result {
        Ok(Planned { plan, .. })
            if plan.create.is_empty() && plan.update.is_empty() && plan.delete.is_empty() =>
        {
            return;
        }
        Ok(Planned { plan, .. }) => (
            EventReason::ApplicationsGenerated,
            format!(
                "created {}, updated {}, deleted {} Application(s)",
                plan.create.len(),
                plan.update.len(),
                plan.delete.len()
            ),
        ),
        Err(error) => (EventReason::ApplicationSetError, error.event_note()),
    };
    ctx.events
        .publish(&appset.object_ref(&()), reason, note)
        .await;
}

/// Writes the status (with the rollout's part, and `deletion`: where a removal in steps stands)
/// with a merge patch on `/status`, only when it changed; returns it. A failed write is also an
/// Event on the ApplicationSet.
pub(super) async fn write_status(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    outcome: &Outcome,
    applications: &[&Application],
    rollout: RolloutOutcome<'_>,
    deletion: Option<DeletionProgress>,
) -> Result<ApplicationSetStatus, AppSetError> {
    let now = Time(Timestamp::now());
    let old = appset.status.as_ref();
    let status = next_status(
        old,
        outcome,
        applications,
        ctx.max_resources_status_count,
        &now,
    );
    let new = within_size(ApplicationSetStatus {
        deletion,
        ..with_rollout(status, rollout)
    });
    if !changed(old, &new) {
        return Ok(new);
    }
    let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let written = api
        .patch_status(
            &appset.name_any(),
            &PatchParams::default(),
            &Patch::Merge(status_patch(old, &new)),
        )
        .await;
    match written {
        Ok(_) => Ok(new),
        Err(error) => {
            let error = AppSetError::Status {
                appset: appset.name_any(),
                error: error.into(),
            };
            // Status cannot say it (a rollout state past etcd's limit, say): an Event does.
            ctx.events
                .publish(
                    &appset.object_ref(&()),
                    EventReason::ApplicationSetError,
                    error.event_note(),
                )
                .await;
            Err(error)
        }
    }
}

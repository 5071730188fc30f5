//! What an ApplicationSet reconcile shows: its outcome (decided by the core), its status written
//! once, only when it changed ([`write_status`]) — a large rollout's per-Application state on
//! the Applications first ([`rollout_layout`]) — and the Event saying what was written or what
//! failed.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use super::ARGO_CD_REFRESH_ANNOTATION;
use super::context::AppSetContext;
use super::error::AppSetError;
use super::render::Planned;
use crate::render::admission::refusals_message;
use flotilla_core::api::application_set_status::{
    ApplicationSetApplicationStatus, ApplicationSetStatus, DeletionProgress,
};
use flotilla_core::api::{Application, ApplicationSet, REFRESH_ANNOTATION};
use flotilla_core::controller::appset::outcome::reconcile_outcome;
use flotilla_core::controller::appset::rollout_layout::{self, Split, hydrate};
use flotilla_core::controller::appset::rollout_status::{RolloutOutcome, with_rollout};
use flotilla_core::controller::appset::status::{
    Outcome, changed, changed_only_where_no_decision_comes_from, next_status, status_budget,
    status_patch, within_size,
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

/// What [`write_status`] did.
pub(super) enum StatusWrite {
    /// Written, or unchanged: the status with every entry listed (as the rest of the reconcile
    /// and `rollout explain` see it).
    Current(Box<ApplicationSetStatus>),
    /// Refused because the ApplicationSet changed since the pass read it (its spec, a label,
    /// an annotation other than a refresh request, a status written meanwhile): what the pass
    /// decided is not carried out, and the ApplicationSet is passed again.
    Superseded,
}

/// The annotations whose change does not supersede a pass: the refresh requests a webhook sets
/// on every push (carried out after the status write).
const REFRESH_REQUESTS: [&str; 2] = [REFRESH_ANNOTATION, ARGO_CD_REFRESH_ANNOTATION];

/// How many times a status write refused only because of such a change is sent again.
const STATUS_WRITE_ATTEMPTS: usize = 3;

/// Writes the status (with the rollout's part, and `deletion`: where a removal in steps stands)
/// with a merge patch on `/status` guarded by the resourceVersion the pass read (when refused
/// because a refresh request or bookkeeping changed meanwhile, by the new one: a webhook
/// annotating every push would otherwise supersede every pass longer than the pushes' interval),
/// only when it changed — when the rollout's entries are kept on the Applications, those that changed are
/// written there first. A failed write, other than a superseded one, is also an Event on the
/// ApplicationSet.
pub(super) async fn write_status(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    outcome: &Outcome,
    applications: &[&Application],
    rollout: RolloutOutcome<'_>,
    deletion: Option<DeletionProgress>,
) -> Result<StatusWrite, AppSetError> {
    let now = Time(Timestamp::now());
    let old = appset.status.as_ref();
    let budget = status_budget(appset);
    let shown_old = old.cloned().map(|mut status| {
        hydrate(&mut status, applications.iter().copied());
        status
    });
    let status = next_status(
        shown_old.as_ref(),
        outcome,
        applications,
        ctx.max_resources_status_count,
        &now,
    );
    let full = ApplicationSetStatus {
        deletion,
        ..with_rollout(status, rollout, &now)
    };
    let entries = full.application_status.clone();
    let Split {
        stored,
        application_writes,
    } = rollout_layout::split(
        full,
        applications.iter().copied(),
        ctx.rollout_status_limit.min(budget),
    );
    let new = within_size(stored, budget);
    write_entries(ctx, appset, &application_writes).await?;
    let shown = ApplicationSetStatus {
        application_status: entries,
        ..new.clone()
    };
    if !changed(old, &new) {
        return Ok(StatusWrite::Current(Box::new(shown)));
    }
    let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut version = appset.metadata.resource_version.clone();
    let mut attempts = 0;
    let written = loop {
        let patch = status_patch(old, &new, version.as_deref());
        let written = api
            .patch_status(
                &appset.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await;
        attempts += 1;
        match written {
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            written => break written.map(|_| true),
        }
        if attempts == STATUS_WRITE_ATTEMPTS {
            break Ok(false);
        }
        // Refused: written over only if what changed is no input of the pass. Read with a list
        // of the one name (the Role grants no get: everything else reads the watches, which
        // may not have seen the change yet).
        let only = ListParams::default().fields(&format!("metadata.name={}", appset.name_any()));
        let now = match api.list(&only).await {
            Ok(list) => list.items.into_iter().next(),
            Err(error) => break Err(error),
        };
        let Some(now) = now.filter(|now| {
            changed_only_where_no_decision_comes_from(appset, now, &REFRESH_REQUESTS)
        }) else {
            break Ok(false);
        };
        version = now.metadata.resource_version;
    };
    match written {
        Ok(true) => Ok(StatusWrite::Current(Box::new(shown))),
        Ok(false) => Ok(StatusWrite::Superseded),
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

/// Writes each entry on its Application (`status.rollout`, a merge patch), a bounded number at
/// once; an Application gone meanwhile is left out (the next pass decides without it).
async fn write_entries(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    entries: &[ApplicationSetApplicationStatus],
) -> Result<(), AppSetError> {
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let writes = entries
        .iter()
        .map(|entry| {
            let api = api.clone();
            async move {
                let patch = serde_json::json!({"status": {"rollout": entry}});
                match api
                    .patch_status(
                        &entry.application,
                        &PatchParams::default(),
                        &Patch::Merge(patch),
                    )
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    Err(error) => Err(error),
                }
            }
        })
        .collect();
    super::bounded_writes::all(writes)
        .await
        .map_err(|error| AppSetError::Status {
            appset: appset.name_any(),
            error: error.into(),
        })
}

//! Stepping a running operation until it waits (parked) or ends, and recording its end.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use super::ControllerRun;
use super::compare_after_end;
use super::context::ApplicationContext;
use super::error::ApplicationError;
use super::status_writes::{patch_status, publish, report};
use crate::controller::application::status_store::HeldEnd;
use crate::controller::application::sync_job::{JobPlan, JobStep, SyncJob};
use crate::sync::execute::SyncRun;
use flotilla_core::api::Application;
use flotilla_core::api::application::{ApplicationConditionType, TERMINATE_ANNOTATION};
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::sync::OperationState;

/// How soon an Application is compared again (or its deletion's next step taken) after an
/// operation ended without a compare written with its end.
const AFTER_OPERATION: Duration = Duration::from_millis(200);

/// `stepped`, with a failure reported as the `SyncError` condition.
pub(super) async fn reporting_sync_failure(
    ctx: &ApplicationContext,
    app: &Application,
    stepped: Result<Action, ApplicationError>,
) -> Result<Action, ApplicationError> {
    if let Err(error) = &stepped {
        let message = error.to_string();
        report(
            ctx,
            app,
            ApplicationConditionType::SyncError,
            Some(&message),
        )
        .await?;
    }
    stepped
}

/// Steps an operation of `app` (its parked `sync_run`, or the one in status) until it has to
/// wait — then parks it and comes back after the wait's limit, or when an object it waits on
/// changes — or ends: a sync's end is recorded with the compare after it, in one write.
pub(super) async fn continue_operation(
    run: &ControllerRun,
    app: &Application,
    job: SyncJob,
    sync_run: Option<SyncRun>,
) -> Result<Action, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let plan = job.plan;
    let held = job.store.held_end();
    let stepped = job.step(sync_run, app, &run.stopping).await;
    let end = held.as_ref().and_then(HeldEnd::take);
    if let Ok(JobStep::Done(state)) = &stepped
        && plan == JobPlan::Sync
    {
        // The end is written with the compare after it: the status shows the result at once.
        let compared = compare_after_end(run, app, end).await?;
        finish(ctx, app, state).await?;
        report(ctx, app, ApplicationConditionType::SyncError, None).await?;
        return Ok(Action::requeue(if compared {
            ctx.resync
        } else {
            AFTER_OPERATION
        }));
    }
    if let Some(end) = end {
        // An attempt that ended before a retry.
        patch_status(ctx, app, "status.operationState", end).await?;
    }
    match stepped {
        Ok(JobStep::Parked(parked, after)) => {
            ctx.runs.park(&app.uid().unwrap_or_default(), *parked);
            Ok(Action::requeue(after))
        }
        Ok(JobStep::Stopped) => {
            tracing::info!(app = %name, "stopping during an operation; the next leader resumes it");
            Ok(Action::await_change())
        }
        // Take the next deletion step at once.
        Ok(JobStep::Done(_)) => Ok(Action::requeue(AFTER_OPERATION)),
        Err(error) => {
            if plan == JobPlan::Sync {
                publish(ctx, app, EventReason::SyncFailed, error.to_string()).await;
            }
            Err(ApplicationError::Sync { app: name, error })
        }
    }
}

/// Records the end of an operation (its state and history entry were stored together by the
/// [`StatusStore`]): metrics, Event, and removes a terminate request that has been served.
pub(super) async fn finish(
    ctx: &ApplicationContext,
    app: &Application,
    state: &OperationState,
) -> Result<(), ApplicationError> {
    let phase = format!("{:?}", state.phase);
    ctx.metrics.synced(&phase);
    let reason = if state.phase == flotilla_core::sync::OperationPhase::Succeeded {
        EventReason::SyncSucceeded
    } else {
        EventReason::SyncFailed
    };
    let note = format!(
        "{phase} at {}: {}",
        state.revision.as_deref().unwrap_or("the local directory"),
        state.message
    );
    publish(ctx, app, reason, note).await;
    let current = ctx
        .api()
        .get(&app.name_any())
        .await
        .map_err(|error| ApplicationError::Read {
            app: app.name_any(),
            what: "the terminate annotation",
            error: error.into(),
        })?;
    if !current.annotations().contains_key(TERMINATE_ANNOTATION) {
        return Ok(());
    }
    let patch = json!({"metadata": {"annotations": {TERMINATE_ANNOTATION: null}}});
    ctx.api()
        .patch(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .map(drop)
        .map_err(|error| ApplicationError::Write {
            app: app.name_any(),
            what: "the terminate annotation",
            error: error.into(),
        })
}

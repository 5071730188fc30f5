//! Stepping a running operation until it waits (parked) or ends ([`step_operation`], which
//! writes nothing of its own), and settling what it came to ([`settle`]): one status patch —
//! a sync's end with the compare after it, an attempt's end before a retry, or a failure as the
//! `SyncError` condition — then the Event, the park or the terminate request served.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::{Value, json};

use super::context::ApplicationContext;
use super::error::ApplicationError;
use super::observe::{Compared, admit_application, observe};
use super::status_writes::publish;
use super::{ControllerRun, record};
use crate::controller::application::status_store::HeldEnd;
use crate::controller::application::sync_job::{JobPlan, JobStep, SyncJob};
use crate::sync::execute::{ExecuteError, SyncRun};
use flotilla_core::api::Application;
use flotilla_core::api::application::{ApplicationConditionType, TERMINATE_ANNOTATION};
use flotilla_core::controller::application::status::{compare_patch, merged, with_condition};
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::sync::OperationState;

/// How soon an Application is compared again (or its deletion's next step taken) after an
/// operation ended without a compare written with its end.
const AFTER_OPERATION: Duration = Duration::from_millis(200);

/// What stepping an operation came to, nothing of it written yet.
pub(super) struct Stepped {
    /// Which tasks the operation runs.
    plan: JobPlan,
    /// Where it stands, or why it failed.
    step: Result<JobStep, ExecuteError>,
    /// The end of an attempt, held back by its store to be written with the rest.
    end: Option<Value>,
}

/// Steps an operation of `app` (its parked `sync_run`, or the one in status) until it has to
/// wait or ends; its end, held back by its store, is left for [`settle`] to write.
pub(super) async fn step_operation(
    run: &ControllerRun,
    app: &Application,
    job: SyncJob,
    sync_run: Option<SyncRun>,
) -> Stepped {
    let plan = job.plan;
    let held = job.store.held_end();
    let step = job.step(sync_run, app, &run.stopping).await;
    let end = held.as_ref().and_then(HeldEnd::take);
    Stepped { plan, step, end }
}

/// Settles what an operation came to (`stepped`; an error before it could step is a failed
/// sync) with one status write, then acts: a sync's end is written with the compare after it
/// (and the `SyncError` condition cleared), then announced; a parked operation comes back after
/// the wait's limit, or when an object it waits on changes; a failed sync is written as the
/// `SyncError` condition — with `decided` (the compare that decided the sync, not written yet
/// when it failed before its first write) — and announced.
///
/// # Errors
/// The operation failed, or the status could not be written.
pub(super) async fn settle(
    run: &ControllerRun,
    app: &Application,
    decided: Option<&Compared>,
    stepped: Result<Stepped, ApplicationError>,
) -> Result<Action, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let (plan, step, end, in_engine) = match stepped {
        Ok(Stepped { plan, step, end }) => (
            plan,
            step.map_err(|error| ApplicationError::Sync {
                app: name.clone(),
                error,
            }),
            end,
            true,
        ),
        Err(error) => (JobPlan::Sync, Err(error), None, false),
    };
    let now = Time(Timestamp::now());
    let mut after = None;
    let patch = match &step {
        Ok(JobStep::Done(_)) if plan == JobPlan::Sync => {
            let (patch, compared) = compare_after_end(run, app, end, &now).await;
            after = compared;
            patch
        }
        Err(error) if plan == JobPlan::Sync => with_condition(
            merged(
                decided.and_then(|compared| compare_patch(app, Ok(&compared.comparison), &now)),
                end,
            ),
            app.status.as_ref(),
            ApplicationConditionType::SyncError,
            Some(&error.to_string()),
            &now,
        ),
        // An attempt that ended before a retry, or nothing.
        _ => end,
    };
    let compared = after.as_ref().or(decided.filter(|_| step.is_err()));
    if patch.is_some() || compared.is_some() {
        // (A step that wrote nothing leaves the last compare remembered.)
        record(ctx, app, compared, patch).await?;
    }
    match step {
        Ok(JobStep::Done(state)) if plan == JobPlan::Sync => {
            finish(ctx, app, &state).await?;
            Ok(Action::requeue(if after.is_some() {
                ctx.resync
            } else {
                AFTER_OPERATION
            }))
        }
        // Take the next deletion step at once.
        Ok(JobStep::Done(_)) => Ok(Action::requeue(AFTER_OPERATION)),
        Ok(JobStep::Parked(parked, after)) => {
            ctx.runs.park(&app.uid().unwrap_or_default(), *parked);
            Ok(Action::requeue(after))
        }
        Ok(JobStep::Stopped) => {
            tracing::info!(app = %name, "stopping during an operation; the next leader resumes it");
            Ok(Action::await_change())
        }
        Err(error) => {
            if plan == JobPlan::Sync && in_engine {
                publish(ctx, app, EventReason::SyncFailed, error.to_string()).await;
            }
            Err(error)
        }
    }
}

/// Compares the Application after its sync ended: the patch that writes `end` (the operation's
/// end, held back by its store) with the compare and the `SyncError` condition cleared, and the
/// compare. When it cannot be observed, the patch writes `end` without it (and the next
/// reconcile compares).
async fn compare_after_end(
    run: &ControllerRun,
    app: &Application,
    end: Option<Value>,
    now: &Time,
) -> (Option<Value>, Option<Compared>) {
    let ctx = &run.ctx;
    let observed = match (
        ctx.customizations(app).await,
        admit_application(ctx, app).await,
    ) {
        (Ok(customizations), Ok(admitted)) => observe(ctx, app, customizations, admitted).await,
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    let compared = match observed {
        Ok(observed) => Some(observed.compared),
        Err(error) => {
            tracing::debug!(app = %app.name_any(), "compare after the operation: {error}");
            None
        }
    };
    let patch = merged(
        end,
        compared
            .as_ref()
            .and_then(|compared| compare_patch(app, Ok(&compared.comparison), now)),
    );
    let patch = with_condition(
        patch,
        app.status.as_ref(),
        ApplicationConditionType::SyncError,
        None,
        now,
    );
    (patch, compared)
}

/// Records the end of an operation (its state and history entry were stored together by the
/// [`StatusStore`]): metrics, Event, and removes a terminate request that has been served.
pub(super) async fn finish(
    ctx: &ApplicationContext,
    app: &Application,
    state: &OperationState,
) -> Result<(), ApplicationError> {
    let phase = format!("{:?}", state.phase);
    ctx.metrics.synced(app, &phase);
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

//! Deleting an Application: its PreDelete hooks, its resources one wave at a time, then its
//! PostDelete hooks, then its finalizer.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use super::ControllerRun;
use super::context::ApplicationContext;
use super::error::ApplicationError;
use super::observe::{
    admit_application, destination, manifests, plan_off_workers, tracked_objects,
};
use super::operation::{settle, step_operation};
use super::start::{job, settings_of, store_new_operation};
use super::status_writes::{publish, report};
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::controller::application::status_store::StatusStore;
use crate::controller::application::sync_job::JobPlan;
use crate::sync::application_settings::SyncSettings;
use crate::sync::execute::approved_since;
use crate::sync::execute::cluster_api::{ClusterApi, Propagation};
use flotilla_core::api::Application;
use flotilla_core::api::application::{ApplicationConditionType, SyncStatus};
use flotilla_core::api::sync_phase::SyncPhase;
use flotilla_core::controller::application::deletion::{
    DeletionEnd, DeletionReport, DeletionState, DeletionStep, RESOURCE_FINALIZERS,
    deletion_hooks_id, deletion_report, deletion_step,
};
use flotilla_core::controller::application::instance::instance_name;
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::sync::LiveObject;

/// How soon a deletion in progress is looked at again.
pub(super) const DELETION_POLL: Duration = Duration::from_secs(1);

/// Runs the PreDelete hooks of a deleted Application, deletes its resources one wave at a time
/// (highest first), runs its PostDelete hooks, then removes its resources finalizer. A failed
/// PreDelete or PostDelete operation is reported (condition `DeletionError`, Event) and the
/// finalizer stays.
pub(super) async fn delete_resources(
    run: &ControllerRun,
    app: &Application,
) -> Result<Action, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let holds_finalizer = app
        .finalizers()
        .iter()
        .any(|f| RESOURCE_FINALIZERS.contains(&f.as_str()));
    if !holds_finalizer {
        return Ok(Action::await_change());
    }
    let deleted = delete_step(run, app).await;
    // The pass's one status write: the DeletionError condition, as the step ended.
    let failure = deleted.as_ref().err().map(ToString::to_string);
    let end = match (&deleted, &failure) {
        (Ok((Deletion::Held(message), _)), _) => DeletionEnd::Held(message),
        (Ok((_, settled)), _) => DeletionEnd::WentOn { shown: *settled },
        (Err(_), message) => DeletionEnd::Failed(message.as_deref().unwrap_or_default()),
    };
    let decided = deletion_report(end);
    let mut written = None;
    if let Some(message) = decided.condition() {
        written = report(ctx, app, ApplicationConditionType::DeletionError, message).await?;
        if let DeletionReport::Set { message, always } = decided
            && (written.is_some() || always)
        {
            publish(ctx, app, EventReason::DeletionError, message).await;
        }
    }
    match deleted?.0 {
        Deletion::Continue(action) => Ok(action),
        Deletion::Finished(current) => {
            // The finalizers are removed from the Application as last written: after the
            // condition's write above, the one read by the step has an older resourceVersion.
            remove_finalizers(ctx, written.as_ref().unwrap_or(&current)).await?;
            publish(
                ctx,
                app,
                EventReason::ResourcesDeleted,
                "every resource of the Application is deleted".to_owned(),
            )
            .await;
            tracing::info!(app = %name, "resources deleted; finalizer removed");
            Ok(Action::await_change())
        }
        Deletion::Held(_) => Ok(Action::requeue(ctx.resync)),
    }
}

/// Where a deletion stands after one step.
pub(super) enum Deletion {
    /// Come back with this action.
    Continue(Action),
    /// It waits for someone (a confirmation, or a fix of failed deletion hooks): this says
    /// why, and the finalizer stays.
    Held(String),
    /// Everything is done: remove the finalizer of the Application as read now.
    Finished(Box<Application>),
}

/// One deletion step, decided from the Application as the API server has it now (not the
/// watch cache, which may not show the hooks' operation just recorded yet), and whether the
/// `DeletionError` condition the Application shows is settled by it (the step is not held).
pub(super) async fn delete_step(
    run: &ControllerRun,
    app: &Application,
) -> Result<(Deletion, bool), ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let current = ctx
        .api()
        .get_opt(&name)
        .await
        .map_err(|error| ApplicationError::Read {
            app: name.clone(),
            what: "the deleted Application",
            error: error.into(),
        })?;
    let Some(app) = current else {
        return Ok((Deletion::Continue(Action::await_change()), false));
    };
    let cluster = destination(ctx, &app).await?;
    let customizations = ctx.customizations(&app).await?;
    let tracked: Vec<LiveObject> = tracked_objects(&cluster, &app, &[])
        .await?
        .iter()
        .filter_map(|object| LiveObject::from_object(object, &customizations.health))
        .collect();
    let approved = app
        .metadata
        .deletion_timestamp
        .as_ref()
        .is_some_and(|deleted| approved_since(app.deletion_approved(), deleted.0));
    let instance = instance_name(&app);
    let status = app.status.as_ref();
    let mut state = DeletionState {
        name: &name,
        app: &instance,
        objects: &tracked,
        approved,
        operation: status.and_then(|s| s.operation_state.as_ref()),
        has_pre_delete_hooks: status.is_some_and(|s| !s.pre_delete_hooks.is_empty()),
        has_post_delete_hooks: status.is_some_and(|s| !s.post_delete_hooks.is_empty()),
    };
    let mut step = deletion_step(&state);
    if step == DeletionStep::RunHooks(SyncPhase::PreDelete) {
        match run_deletion_hooks(run, &app, Arc::clone(&cluster), SyncPhase::PreDelete).await? {
            Some(deletion) => return Ok((deletion, false)),
            // The source has no PreDelete hooks (any more): delete as if status listed none.
            None => state.has_pre_delete_hooks = false,
        }
        step = deletion_step(&state);
    }
    let held = matches!(
        step,
        DeletionStep::AwaitConfirmation(_) | DeletionStep::HooksFailed(_)
    );
    let settled = !held && has_condition(&app, ApplicationConditionType::DeletionError);
    let deletion = match step {
        DeletionStep::Done => Ok(Deletion::Finished(Box::new(app))),
        DeletionStep::Wait => Ok(Deletion::Continue(Action::requeue(DELETION_POLL))),
        DeletionStep::AwaitConfirmation(keys) => {
            let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
            Ok(Deletion::Held(format!(
                "waiting for deletion confirmation of {} (Delete=confirm): flotilla app confirm-prune {name}",
                keys.join(", ")
            )))
        }
        DeletionStep::HooksFailed(message) => Ok(Deletion::Held(message)),
        DeletionStep::Delete(keys) => {
            for key in keys {
                cluster
                    .delete(&key, Propagation::Foreground)
                    .await
                    .map_err(|error| ApplicationError::Delete {
                        app: name.clone(),
                        object: key.clone(),
                        error,
                    })?;
            }
            Ok(Deletion::Continue(Action::requeue(DELETION_POLL)))
        }
        DeletionStep::RunHooks(phase) => Ok(run_deletion_hooks(run, &app, cluster, phase)
            .await?
            .unwrap_or_else(|| Deletion::Finished(Box::new(app.clone())))),
    }?;
    Ok((deletion, settled))
}

/// Whether `app`'s status shows a condition of `type_`.
pub(super) fn has_condition(app: &Application, type_: ApplicationConditionType) -> bool {
    app.status
        .as_ref()
        .is_some_and(|status| status.conditions.iter().any(|c| c.type_ == type_))
}

/// Runs (or resumes) the `phase` hooks of a deleted Application — PreDelete before its
/// resources are deleted, PostDelete once they are gone — as an operation recorded in
/// `status.operationState` under [`deletion_hooks_id`], from the source at the revision it last
/// synced; `None` when the source has none there (any more).
pub(super) async fn run_deletion_hooks(
    run: &ControllerRun,
    app: &Application,
    cluster: Arc<KubeCluster>,
    phase: SyncPhase,
) -> Result<Option<Deletion>, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let id = deletion_hooks_id(&name, phase);
    let status = app.status.as_ref();
    let recorded = status
        .and_then(|s| s.operation_state.as_ref())
        .filter(|op| op.operation_id == id);
    let revision = recorded
        .and_then(|op| op.revision.clone())
        .or_else(|| {
            status
                .and_then(|s| s.sync.as_ref())
                .map(SyncStatus::revision_key)
                .filter(|r| !r.is_empty())
        })
        .unwrap_or_default();
    let manifests = manifests(ctx, app, &revision).await?;
    let (customizations, admitted) = (
        ctx.customizations(app).await?,
        admit_application(ctx, app).await?,
    );
    let SyncSettings {
        execute: mut settings,
        source,
        ..
    } = settings_of(ctx, app, None, (&customizations, &admitted)).map_err(|error| {
        ApplicationError::Settings {
            app: name.clone(),
            error,
        }
    })?;
    (settings.prune, settings.retry) = (false, None);
    let source = source.checked_out(manifests.revision.clone(), &manifests.sources);
    let plan = plan_off_workers(
        ctx.repos.toolchain(),
        &name,
        manifests.root.clone(),
        source.clone(),
        settings.destination_namespace.clone(),
        id.clone(),
    )
    .await?;
    let hooks: Vec<String> = plan
        .deletion_hooks(phase)
        .map(|t| t.key.to_string())
        .collect();
    if hooks.is_empty() {
        return Ok(None);
    }
    // Not an entry of the Application's history: its deletion is not a deployment.
    let store = StatusStore::new(ctx.api(), &ctx.app_namespace, &name);
    if recorded.is_none() {
        store_new_operation(&store, &name, manifests.revision.as_deref(), &id).await?;
        let note = format!("running {phase} hooks: {}", hooks.join(", "));
        publish(ctx, app, EventReason::SyncStarted, note).await;
    }
    let job = job(
        app,
        (JobPlan::DeletionHooks(phase), store),
        cluster,
        (&manifests, ctx.repos.toolchain()),
        source,
        settings,
    );
    // The outcome is in status.operationState, which the next deletion step reads.
    let stepped = step_operation(run, app, job, None).await;
    settle(run, app, None, Ok(stepped))
        .await
        .map(|action| Some(Deletion::Continue(action)))
}

/// Removes the resources finalizers, keeping any other.
pub(super) async fn remove_finalizers(
    ctx: &ApplicationContext,
    app: &Application,
) -> Result<(), ApplicationError> {
    let kept: Vec<&String> = app
        .finalizers()
        .iter()
        .filter(|f| !RESOURCE_FINALIZERS.contains(&f.as_str()))
        .collect();
    let patch = json!({
        "metadata": {"resourceVersion": app.resource_version(), "finalizers": kept}
    });
    match ctx
        .api()
        .patch(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(ApplicationError::Write {
            app: app.name_any(),
            what: "metadata.finalizers",
            error: error.into(),
        }),
    }
}

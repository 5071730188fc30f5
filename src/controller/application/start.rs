//! Starting a sync: the rollout gate, the project's sync windows, the settings, and the Running operation stored (a requested one consumed) before the engine steps it.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::{Value, json};

use super::ControllerRun;
use super::context::ApplicationContext;
use super::error::ApplicationError;
use super::observe::{Admitted, Observed, manifests};
use super::operation::continue_operation;
use super::status_writes::{merged, publish, report};
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::controller::application::status_store::{HeldEnd, StatusStore};
use crate::controller::application::sync_job::{JobPlan, SyncJob};
use crate::customizations::Customizations;
use crate::repo::cache::Manifests;
use crate::source::SourceOptions;
use crate::sync::application_settings::{
    SettingsError, SyncOverrides, SyncSettings, sync_settings,
};
use crate::sync::execute::{ExecuteSettings, OperationStore};
use flotilla_core::api::Application;
use flotilla_core::api::application::{ApplicationConditionType, Operation, SyncOperation};
use flotilla_core::controller::application::decide::{SyncGate, Trigger, sync_gate};
use flotilla_core::controller::application::instance::instance_name;
use flotilla_core::controller::application::start::sync_start;
use flotilla_core::controller::application::status::operation_patch;
use flotilla_core::controller::application::window_gate::{
    WindowGate, refused_message, waiting_message, window_gate,
};
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::project::Projects;
use flotilla_core::project::windows::sync_block_or_invalid;
use flotilla_core::sync::begin;

/// How soon an Application whose watched copy was found behind the API server is reconciled
/// again, at the latest (the watch event of the newer version usually comes first).
pub(super) const BEHIND_RETRY: Duration = Duration::from_secs(1);

/// Whether the watched copy `app` is still the Application's current version, read from the
/// API server before a sync starts. A sync is the one decision a stale copy must not make: the
/// store can lag behind the controller's own writes, and a copy still showing the operation
/// the controller has just finished as Running (or a request it has consumed) would run it a
/// second time.
///
/// # Errors
/// The Application could not be read.
pub(super) async fn current(
    ctx: &ApplicationContext,
    app: &Application,
) -> Result<bool, ApplicationError> {
    let name = app.name_any();
    let live = ctx
        .api()
        .get_metadata(&name)
        .await
        .map_err(|error| ApplicationError::Read {
            app: name,
            what: "the Application before starting a sync",
            error: error.into(),
        })?;
    Ok(live.metadata.resource_version == app.metadata.resource_version)
}

/// Whether the Application's owning ApplicationSet (if any) rolls it out with RollingSync, from
/// the watched ApplicationSets (once they are listed: a stopping controller starts no automated
/// sync).
pub(super) async fn gate(run: &ControllerRun, app: &Application) -> SyncGate {
    let owner = app
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "ApplicationSet");
    let Some(owner) = owner else {
        return sync_gate(None);
    };
    if !run.appsets_listed.wait().await {
        return SyncGate::RolloutControlled;
    }
    let appset = run
        .appsets
        .get(&ObjectRef::new(&owner.name).within(&run.ctx.app_namespace))
        .filter(|appset| appset.uid().as_deref() == Some(owner.uid.as_str()));
    sync_gate(appset.as_deref())
}

/// What the project's sync windows make of `trigger` (see [`window_gate`]): `None` to sync
/// now; else the sync waits (a `SyncError` condition names the window, and the Application is
/// reconciled again when it opens) or, for a manual request, fails at once naming the window.
pub(super) async fn hold_for_windows(
    ctx: &ApplicationContext,
    app: &Application,
    trigger: &Trigger,
    projects: &Projects,
) -> Result<Option<Action>, ApplicationError> {
    if windows_permit(app, trigger, projects) {
        return Ok(None);
    }
    let now = Timestamp::now();
    match window_gate(trigger, |kind| {
        sync_block_or_invalid(projects, app, kind, now)
    }) {
        WindowGate::Proceed => Ok(None),
        WindowGate::Wait(block) => {
            let message = waiting_message(&block);
            report(
                ctx,
                app,
                ApplicationConditionType::SyncError,
                Some(&message),
            )
            .await?;
            let opens = block
                .opens_at
                .and_then(|opens| Duration::try_from(opens.duration_since(now)).ok())
                .map_or(ctx.resync, |wait| wait + Duration::from_secs(1));
            Ok(Some(Action::requeue(opens.min(ctx.resync))))
        }
        WindowGate::Refuse(block) => {
            let Trigger::Requested(operation) = trigger else {
                return Ok(None);
            };
            refuse(ctx, app, operation, &refused_message(&block)).await?;
            Ok(Some(Action::requeue(ctx.resync)))
        }
    }
}

/// Whether the project's sync windows let the sync `trigger` asks for start now (a resumed
/// one always goes on; see [`hold_for_windows`] for the others).
pub(super) fn windows_permit(app: &Application, trigger: &Trigger, projects: &Projects) -> bool {
    if matches!(trigger, Trigger::Resume { .. }) {
        return true;
    }
    let now = Timestamp::now();
    match window_gate(trigger, |kind| {
        sync_block_or_invalid(projects, app, kind, now)
    }) {
        WindowGate::Proceed => true,
        WindowGate::Wait(_) => false,
        WindowGate::Refuse(_) => !matches!(trigger, Trigger::Requested(_)),
    }
}

/// Records the requested `operation` as a failed operation with `message` and removes the
/// request.
pub(super) async fn refuse(
    ctx: &ApplicationContext,
    app: &Application,
    operation: &Operation,
    message: &str,
) -> Result<(), ApplicationError> {
    let name = app.name_any();
    let now = Timestamp::now();
    let revision = operation.sync.requested_revision();
    let id = format!("{name}-{}", now.as_millisecond());
    let revision = Some(revision.as_str()).filter(|r| !r.is_empty());
    let (mut state, _) = begin(None, revision, &id, Time(now));
    state.phase = flotilla_core::sync::OperationPhase::Failed;
    message.clone_into(&mut state.message);
    state.finished_at = Some(Time(now));
    StatusStore::new(ctx.api(), &ctx.app_namespace, &name)
        .save(&state)
        .await
        .map_err(|error| ApplicationError::Sync {
            app: name.clone(),
            error: error.into(),
        })?;
    clear_operation(ctx, &name, operation).await?;
    publish(ctx, app, EventReason::SyncFailed, message.to_owned()).await;
    Ok(())
}

/// Starts (or resumes) the sync `trigger` asks for and steps it (see [`continue_operation`]).
/// The operation's first write to the status also writes `compared` (the compare that decided
/// the sync, not written yet) and the operation started; its end is held back for
/// [`continue_operation`] to write with the compare after it.
pub(super) async fn sync(
    ctx: &ApplicationContext,
    app: &Application,
    observed: &Observed,
    trigger: Trigger,
    run: &ControllerRun,
    compared: Option<Value>,
) -> Result<Action, ApplicationError> {
    let name = app.name_any();
    let resumed = app.status.as_ref().and_then(|s| s.operation.as_ref());
    if let Trigger::Resume { revision } = &trigger {
        tracing::info!(app = %name, ?revision, "resuming the Running operation recorded in status");
    }
    let start = sync_start(&trigger, resumed, observed.manifests.revision.as_deref());
    let SyncSettings {
        execute: settings,
        source,
    } = settings_of(
        ctx,
        app,
        start.operation,
        (&observed.customizations, &observed.admitted),
    )
    .map_err(|error| ApplicationError::Settings {
        app: name.clone(),
        error,
    })?;
    let revision = &start.revision;
    let manifests = if revision.is_empty() || Some(revision) == observed.manifests.revision.as_ref()
    {
        observed.manifests.clone()
    } else {
        manifests(ctx, app, revision).await?
    };
    if let Some(request) = start.stale_request(app.spec.operation.as_ref(), resumed) {
        // Stopped between storing this operation and consuming its request: consume it now.
        clear_operation(ctx, &name, request).await?;
    }
    let manifests_revision = manifests.revision.as_deref();
    let running = start.running(
        settings.prune,
        settings.allow_empty,
        manifests_revision.unwrap_or_default(),
    );
    let carried = match running {
        Some(running) => merged(
            compared,
            Some(json!({"status": {"operation": operation_patch(&running)}})),
        ),
        None => compared,
    };
    let mut store = StatusStore::new(ctx.api(), &ctx.app_namespace, &name)
        .recording_history(start.initiated_by.clone())
        .holding_end(HeldEnd::default());
    if let Some(carried) = carried {
        store = store.carrying(carried);
    }
    if let Some(operation) = start.requested {
        let id = format!("{name}-{}", Timestamp::now().as_millisecond());
        store_new_operation(&store, &name, manifests_revision, &id).await?;
        clear_operation(ctx, &name, operation).await?;
    }
    let (reason, note) = start.event(manifests_revision);
    publish(ctx, app, reason, note).await;
    let cluster = Arc::clone(&observed.cluster);
    let job = job(
        app,
        (JobPlan::Sync, store),
        cluster,
        &manifests,
        source,
        settings,
    );
    continue_operation(run, app, job, None).await
}

/// The sync settings of `app` (with the requested `operation`, if any) under the configured
/// `customizations`: the one derivation every run of the engine for it uses.
///
/// # Errors
/// The Application's settings do not parse (reported as [`ApplicationError::Settings`]).
pub(super) fn settings_of(
    ctx: &ApplicationContext,
    app: &Application,
    operation: Option<&SyncOperation>,
    (customizations, admitted): (&Customizations, &Admitted),
) -> Result<SyncSettings, SettingsError> {
    let process = customizations.clone().over(ctx.settings.clone());
    sync_settings(
        &app.metadata,
        &app.spec,
        operation,
        &SyncOverrides::default(),
        &process,
        admitted.scope(),
    )
}

/// Stores a new Running operation `id` of Application `name` at `revision`, which the engine
/// then resumes.
pub(super) async fn store_new_operation(
    store: &StatusStore,
    name: &str,
    revision: Option<&str>,
    id: &str,
) -> Result<(), ApplicationError> {
    let (state, _) = begin(None, revision, id, Time(Timestamp::now()));
    store
        .save(&state)
        .await
        .map_err(|error| ApplicationError::Sync {
            app: name.to_owned(),
            error: error.into(),
        })
}

/// An operation of the engine for `app` from `manifests`, stored in its status by `store`.
pub(super) fn job(
    app: &Application,
    (plan, store): (JobPlan, StatusStore),
    cluster: Arc<KubeCluster>,
    manifests: &Manifests,
    source: SourceOptions,
    settings: ExecuteSettings,
) -> SyncJob {
    SyncJob {
        plan,
        cluster,
        store,
        app: instance_name(app),
        root: manifests.root.clone(),
        options: source.checked_out(manifests.revision.clone(), &manifests.sources),
        namespace: settings.destination_namespace.clone(),
        revision: manifests.revision.clone(),
        settings,
        generated: None,
    }
}

/// Removes `spec.operation` if it is still `operation` (a newer request is kept), with the
/// read `resourceVersion` so a concurrent write is never overwritten.
pub(super) async fn clear_operation(
    ctx: &ApplicationContext,
    name: &str,
    operation: &Operation,
) -> Result<(), ApplicationError> {
    let error = |error: kube::Error| ApplicationError::Write {
        app: name.to_owned(),
        what: "spec.operation",
        error: error.into(),
    };
    let api = ctx.api();
    loop {
        let current = api.get(name).await.map_err(error)?;
        if current.spec.operation.as_ref() != Some(operation) {
            return Ok(());
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.resource_version()},
            "spec": {"operation": null}
        });
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(other) => return Err(error(other)),
        }
    }
}

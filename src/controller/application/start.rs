//! Starting a sync the reconcile's pass decided on: the rollout gate it asked for, the
//! settings, and the Running operation stored (a requested one consumed) before the engine
//! steps it.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::{Value, json};

use super::ControllerRun;
use super::context::ApplicationContext;
use super::error::ApplicationError;
use super::observe::{Admitted, Observed, manifests};
use super::operation::{Stepped, step_operation};
use super::status_writes::publish;
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::controller::application::status_store::{HeldEnd, StatusStore};
use crate::controller::application::sync_job::{JobPlan, SyncJob};
use crate::customizations::Customizations;
use crate::repo::cache::Manifests;
use crate::source::{SourceOptions, Toolchain};
use crate::sync::application_settings::{
    SettingsError, SyncOverrides, SyncSettings, sync_settings,
};
use crate::sync::execute::{ExecuteSettings, OperationStore};
use flotilla_core::api::Application;
use flotilla_core::api::application::{Operation, SyncOperation};
use flotilla_core::controller::application::decide::{SyncGate, Trigger, sync_gate};
use flotilla_core::controller::application::instance::instance_name;
use flotilla_core::controller::application::start::sync_start;
use flotilla_core::controller::application::status::{merged, operation_patch};
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

/// Starts (or resumes) the sync `trigger` asks for and steps it (see [`step_operation`]).
/// The operation's first write to the status also writes `compared` (the compare that decided
/// the sync, not written yet) and the operation started; its end is held back for
/// [`super::operation::settle`] to write with the compare after it.
pub(super) async fn sync(
    ctx: &ApplicationContext,
    app: &Application,
    observed: &Observed,
    trigger: Trigger,
    run: &ControllerRun,
    compared: Option<Value>,
) -> Result<Stepped, ApplicationError> {
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
        (&manifests, ctx.repos.toolchain()),
        source,
        settings,
    );
    Ok(step_operation(run, app, job, None).await)
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

/// An operation of the engine for `app` from `manifests` (generated with `toolchain`), stored in
/// its status by `store`.
pub(super) fn job(
    app: &Application,
    (plan, store): (JobPlan, StatusStore),
    cluster: Arc<KubeCluster>,
    (manifests, toolchain): (&Manifests, &Arc<Toolchain>),
    source: SourceOptions,
    settings: ExecuteSettings,
) -> SyncJob {
    let capabilities = cluster.capabilities();
    SyncJob {
        plan,
        cluster,
        store,
        app: instance_name(app),
        root: manifests.root.clone(),
        options: source
            .checked_out(manifests.revision.clone(), &manifests.sources)
            .for_cluster(&capabilities),
        namespace: settings.destination_namespace.clone(),
        revision: manifests.revision.clone(),
        settings,
        toolchain: Arc::clone(toolchain),
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

//! The Application reconciler: observe (destination → source → plan → live objects) → compare →
//! status → decide → sync, run by a kube-runtime `Controller` that watches the Applications of
//! the namespace. Deleted Applications with a resources finalizer run their PreDelete hooks, get
//! their resources deleted (reverse wave order, `Delete=confirm` objects holding it until
//! approved), then their PostDelete hooks run, before the finalizer goes. Every decision is made by the pure
//! [`flotilla_core::controller::application`] core; these files read and write, one per lifecycle step.
//!
//! What triggers a reconcile: a change of the Application or its AppProject, a change of any
//! object it tracks (the destinations' watches announce it; [`wake_on_tracked_objects`]), the
//! requeue a decision asks for (a self-heal's backoff, a window's opening, a parked operation's
//! wait), and the periodic resync, a safety net.
//!
//! `spec.operation` is consumed when its sync starts: `status.operationState` is written
//! (phase Running) first, then `spec.operation` is removed (only if unchanged), then the engine
//! runs from that stored state. A stopping controller drops a running sync without terminating
//! it, so the next leader resumes it from `status.operationState`.

mod context;
mod deletion;
mod error;
mod observe;
mod operation;
pub mod running_syncs;
mod start;
pub mod status_store;
mod status_writes;
pub mod sync_job;

use std::sync::Arc;

use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::watch;

use crate::cluster::api_server::api_error::watch_message;
use crate::controller::application::running_syncs::Parked;
use crate::controller::leases::ownership::Ownership;
use crate::controller::runtime::admission::Admission;
use crate::controller::runtime::argocd_metrics::AppInfo;
use crate::controller::runtime::controller_errors::controller_failed;
use crate::controller::runtime::graceful_shutdown::run_gracefully;
use crate::controller::runtime::metrics::Reconciler;
use crate::controller::runtime::observed::Observed;
use crate::controller::runtime::slow_reconcile::reported_when_slow;
use crate::controller::runtime::store_ready::StoreReady;
use flotilla_core::api::AppProject;
use flotilla_core::api::REFRESH_ANNOTATION;
use flotilla_core::api::app_project::DEFAULT_PROJECT;
use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::application::freshness::{
    CompareInputs, LastCompare, version_after_write,
};
use flotilla_core::controller::application::instance::application_of;
use flotilla_core::controller::application::pass::{Pass, PassAction, PassInput, decide_pass};
use flotilla_core::controller::application::refresh::{
    REFRESH_ANNOTATION as ARGO_CD_REFRESH_ANNOTATION, Refresh, requested_refresh,
};
use flotilla_core::controller::application::skip_reconcile::skips_reconcile;
use flotilla_core::controller::application::status::compare_patch;
use flotilla_core::project::windows::sync_block_or_invalid;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use context::ApplicationContext;
use context::owned;
use deletion::delete_resources;
pub use error::ApplicationError;
use observe::{
    Compared, admit_application, changed_during_operation, compare_live, observe, unchanged,
};
use operation::{settle, step_operation};
use start::{BEHIND_RETRY, clear_operation, current, gate, sync};
use status_writes::{publish, write_status};

/// How many Applications are reconciled at once (a sync holds a slot while it steps, not while
/// it waits: it is parked between steps): bounds the requests in flight and the memory of the
/// reconciles, as Argo CD's processor counts do. The others wait their turn in the order they
/// became due ([`Admission`]).
pub const RECONCILE_CONCURRENCY: usize = 32;

/// One run of the controller: the shared context, the watched Applications and
/// ApplicationSets, and whether the run is stopping (running syncs are then dropped, to be
/// resumed by the next leader).
struct ControllerRun {
    ctx: Arc<ApplicationContext>,
    /// The watched Applications: a reconcile admitted after a wait reads its latest copy here.
    applications: Store<Application>,
    /// The turn of each reconcile.
    admission: Admission,
    appsets: Store<ApplicationSet>,
    /// The first list of `appsets`, awaited by every reconcile that needs it.
    appsets_listed: StoreReady,
    stopping: watch::Receiver<bool>,
}

/// [`reconcile`] once admitted, on the Application as it is then, its duration recorded,
/// reported while it runs long.
async fn timed_reconcile(
    app: Arc<Application>,
    run: Arc<ControllerRun>,
) -> Result<Action, ApplicationError> {
    let Some(_turn) = run.admission.admit(&run.stopping).await else {
        return Ok(Action::await_change());
    };
    // The copy the reconcile was started with may be older than the wait.
    let Some(app) = run.applications.get(&ObjectRef::from_obj(&*app)) else {
        return Ok(Action::await_change());
    };
    let started = std::time::Instant::now();
    let metrics = Arc::clone(&run.ctx.metrics);
    let name = app.name_any();
    // Boxed: the reconciles waiting for their turn (all of them, at a resync) stay small.
    let reconciled = reported_when_slow(
        &metrics,
        Reconciler::Application,
        &name,
        reconcile(Arc::clone(&app), Arc::clone(&run)).boxed(),
    )
    .await;
    metrics.observe_application_reconcile(&app, started.elapsed());
    reconciled
}

/// Reconciles one Application.
async fn reconcile(
    app: Arc<Application>,
    run: Arc<ControllerRun>,
) -> Result<Action, ApplicationError> {
    let ctx = &run.ctx;
    if !ctx.owns(&app) {
        // Another replica's: the controllers restart when this replica's slots change.
        tracing::debug!(app = %app.name_any(), "not this replica's now; waiting for a change");
        return Ok(Action::await_change());
    }
    if let Some(stamp) = app.annotations().get(REFRESH_ANNOTATION) {
        // A webhook received by another replica expired only that replica's fetches.
        let sources = app.spec.all_sources();
        ctx.repos.expire_announced(stamp, |url| {
            sources.iter().any(|source| source.repo_url == url)
        });
    }
    if let Some(refresh) = requested_refresh(&app) {
        refresh_now(ctx, &app, refresh).await;
    }
    if let Some(Parked { job, run: sync_run }) = ctx.runs.take(&app.uid().unwrap_or_default()) {
        let stepped = step_operation(&run, &app, job, Some(sync_run)).await;
        let settled = settle(&run, &app, None, Ok(stepped)).await;
        refresh_during_operation(&run, &app).await;
        return settled;
    }
    if app.metadata.deletion_timestamp.is_some() {
        ctx.remember_compare(app.name_any(), None);
        return delete_resources(&run, &app).await;
    }
    if skips_reconcile(&app) {
        // Any change of the Application (the annotation removed) reconciles it again.
        ctx.remember_compare(app.name_any(), None);
        return Ok(Action::await_change());
    }
    let customizations = ctx.customizations(&app).await;
    let admitted = admit_application(ctx, &app).await;
    if admitted.is_ok() && unchanged(&run, &app).await {
        tracing::debug!(app = %app.name_any(), "unchanged since its last compare");
        return Ok(Action::requeue(ctx.resync));
    }
    let observed = match (customizations, admitted) {
        (Ok(customizations), Ok(admitted)) => observe(ctx, &app, customizations, admitted).await,
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    let gate = gate(&run, &app).await;
    let now = Timestamp::now();
    let message = observed.as_ref().err().map(ToString::to_string);
    let projects = observed
        .as_ref()
        .ok()
        .map(|observed| &observed.admitted.projects);
    let windows =
        |kind| projects.and_then(|projects| sync_block_or_invalid(projects, &app, kind, now));
    let Pass {
        status,
        action,
        event,
    } = decide_pass(
        &PassInput {
            app: &app,
            observed: match &observed {
                Ok(observed) => Ok(&observed.compared.comparison),
                Err(error) => Err((condition_of(error), message.as_deref().unwrap_or_default())),
            },
            revision: observed
                .as_ref()
                .ok()
                .and_then(|o| o.manifests.revision.as_deref()),
            gate,
            windows: &windows,
            resync: ctx.resync,
        },
        now,
    );
    if !matches!(action, PassAction::Requeue(_)) && !current(ctx, &app).await? {
        tracing::debug!(app = %app.name_any(), ?action, "the watched copy is behind; not acting");
        return Ok(Action::requeue(BEHIND_RETRY));
    }
    // The status is written once: with the operation's first write when a sync starts.
    let (written, carried) = match action {
        PassAction::Sync(_) => (None, status),
        PassAction::Requeue(_) | PassAction::Refuse { .. } => (status, None),
    };
    let compared = observed.as_ref().ok().map(|observed| &observed.compared);
    record(ctx, &app, compared.filter(|_| carried.is_none()), written).await?;
    if let Some((reason, note)) = event {
        publish(ctx, &app, reason, note).await;
    }
    let observed = observed?;
    match action {
        PassAction::Requeue(after) => Ok(Action::requeue(after)),
        PassAction::Refuse { request, requeue } => {
            clear_operation(ctx, &app.name_any(), &request).await?;
            Ok(Action::requeue(requeue))
        }
        PassAction::Sync(trigger) => {
            // The compare is written with the operation's first write; the one after it is
            // remembered.
            ctx.remember_compare(app.name_any(), None);
            let stepped = sync(ctx, &app, &observed, trigger, &run, carried).await;
            // A sync that failed before its first write has its compare written with the failure.
            settle(&run, &app, Some(&observed.compared), stepped).await
        }
    }
}

/// The condition that says why an Application could not be observed.
fn condition_of(error: &ApplicationError) -> ApplicationConditionType {
    if matches!(error, ApplicationError::Project { .. }) {
        ApplicationConditionType::InvalidSpecError
    } else {
        ApplicationConditionType::ComparisonError
    }
}

/// Writes `patch` (if any) to the Application's status and remembers `compared` as its last
/// compare (forgotten when there is none): where a reconcile's pass, and the settling of an
/// operation, write the status.
///
/// # Errors
/// The status could not be written.
async fn record(
    ctx: &ApplicationContext,
    app: &Application,
    compared: Option<&Compared>,
    patch: Option<serde_json::Value>,
) -> Result<(), ApplicationError> {
    let written = match patch {
        Some(patch) => Some(write_status(ctx, app, patch).await?),
        None => None,
    };
    if let Some(compared) = compared {
        let comparison = &compared.comparison;
        tracing::debug!(app = %app.name_any(), sync = ?comparison.sync.status, health = ?comparison.health.status, written = written.is_some(), "compared");
    }
    let last = compared.map(|compared| LastCompare {
        inputs: CompareInputs {
            application_version: version_after_write(app, written.as_ref()),
            ..compared.inputs.clone()
        },
        synced: !compared.comparison.out_of_sync(),
        kinds: compared.kinds.clone(),
    });
    ctx.remember_compare(app.name_any(), last);
    Ok(())
}

/// Carries out the refresh Argo CD's annotation asks for: the Application's repositories are
/// fetched again at its next resolve and its last compare forgotten (so this reconcile compares,
/// with the revision resolved now); a hard refresh also drops the manifests generated for its
/// revisions. The annotation is then removed, as Argo CD does (a failure to is logged: the next
/// reconcile refreshes again).
async fn refresh_now(ctx: &ApplicationContext, app: &Application, refresh: Refresh) {
    let sources = app.spec.all_sources();
    ctx.repos
        .expire(|url| sources.iter().any(|source| source.repo_url == url));
    ctx.remember_compare(app.name_any(), None);
    if refresh == Refresh::Hard {
        let sync = app.status.as_ref().and_then(|status| status.sync.as_ref());
        for revision in sync
            .into_iter()
            .flat_map(|sync| std::iter::once(&sync.revision).chain(&sync.revisions))
            .filter(|revision| !revision.is_empty())
        {
            ctx.repos.toolchain().generations.forget(revision);
        }
    }
    let removed = Patch::Merge(
        serde_json::json!({"metadata": {"annotations": {ARGO_CD_REFRESH_ANNOTATION: null}}}),
    );
    let params = PatchParams::default();
    if let Err(error) = ctx
        .api()
        .patch_metadata(&app.name_any(), &params, &removed)
        .await
    {
        tracing::warn!(app = %app.name_any(), "removing {ARGO_CD_REFRESH_ANNOTATION}: {error}");
    }
}

/// Compares an Application whose sync operation is running (parked between two steps) with
/// the plan the operation syncs, when its tracked objects changed since its last compare, and
/// writes the status, so that it shows the objects as the operation leaves them; a failure is
/// logged (the operation goes on, and the compare after it ends reports it). Not after an
/// operation's first step (its reconcile has just compared, and a burst of starting syncs
/// should free their slots at once): the changes of the objects it applied bring the next.
async fn refresh_during_operation(run: &ControllerRun, app: &Application) {
    let ctx = &run.ctx;
    let Some((plan, revision, cluster)) = ctx.runs.syncing(&app.uid().unwrap_or_default()) else {
        return;
    };
    if !changed_during_operation(run, app).await {
        return;
    }
    let compared = match ctx.customizations(app).await {
        Ok(customizations) => {
            compare_live(app, &cluster, &plan, revision.as_deref(), &customizations).await
        }
        Err(error) => Err(error),
    };
    let reported = match compared {
        Ok(compared) => {
            let patch = compare_patch(app, Ok(&compared.comparison), &Time(Timestamp::now()));
            record(ctx, app, Some(&compared), patch).await
        }
        Err(error) => Err(error),
    };
    if let Err(error) = reported {
        tracing::debug!(app = %app.name_any(), "compare during the operation: {error}");
    }
}

/// The Applications of `store` this replica reconciles, as the metrics show them.
fn application_infos(
    store: &Store<Application>,
    ownership: Option<&Ownership>,
    namespace: &str,
) -> Vec<AppInfo> {
    store
        .state()
        .into_iter()
        .filter(|app| owned(ownership, namespace, app))
        .map(|app| AppInfo::of(&app))
        .collect()
}

/// Requeues a failed Application: with backoff, unless only a person can fix the failure — an
/// invalid spec waits for the Application to change, manifests that do not build for the next
/// resync (a new commit may fix them) — after the failure was written to status.
fn error_policy(
    app: Arc<Application>,
    error: &ApplicationError,
    run: Arc<ControllerRun>,
) -> Action {
    match error {
        ApplicationError::Settings { .. } => {
            run.ctx.metrics.application_reconciled(Some(error.reason()));
            tracing::warn!(app = %app.name_any(), reason = error.reason(), "{error}");
            return Action::await_change();
        }
        ApplicationError::Plan { .. } | ApplicationError::Project { .. } => {
            run.ctx.metrics.application_reconciled(Some(error.reason()));
            tracing::warn!(app = %app.name_any(), reason = error.reason(), "{error}");
            return Action::requeue(run.ctx.resync);
        }
        _ => {}
    }
    let (failures, delay) = run.ctx.failures.failed(&app.name_any());
    run.ctx.metrics.application_reconciled(Some(error.reason()));
    tracing::warn!(app = %app.name_any(), reason = error.reason(), failures, "{error}");
    Action::requeue(delay)
}

/// The Applications to reconcile now because an object they track changed (announced by the
/// clusters' tracked-object watches: its spec, metadata or status changed, it went, or it
/// appeared carrying a tracking id): each is compared again — or its parked operation stepped —
/// at once, a burst of changes coalescing into one reconcile (the controller queues an
/// Application once). Announcements a slow reader missed are covered by the periodic resync
/// and the operations' fallback requeue.
fn wake_on_tracked_objects(
    ctx: &Arc<ApplicationContext>,
) -> impl futures::Stream<Item = ObjectRef<Application>> + Send + 'static {
    let touched = ctx.clusters.touched();
    let namespace = ctx.app_namespace.clone();
    futures::stream::unfold(touched, |mut touched| async move {
        loop {
            match touched.recv().await {
                Ok(id) => return Some((id, touched)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
    .filter_map(move |id| {
        let woken =
            application_of(&id, &namespace).map(|name| ObjectRef::new(name).within(&namespace));
        futures::future::ready(woken)
    })
}

/// Runs the Application controller for `ctx.app_namespace` until `stop` completes: running syncs are
/// then dropped (their operation stays Running, for the next leader to resume) and running
/// reconciles finish.
pub async fn run(
    ctx: Arc<ApplicationContext>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    // The Applications are kept without their managed fields (nothing reads them).
    let (applications, writer) = reflector::store();
    let changes = reflector(
        writer,
        watcher::watcher(ctx.api(), watcher::Config::default())
            .modify(|app: &mut Application| app.metadata.managed_fields = None),
    )
    .default_backoff()
    .applied_objects();
    // Unbounded here: the limit is the fair one of `Admission`.
    let controller = Controller::for_stream(changes, applications.clone())
        .with_config(controller::Config::default().concurrency(0));
    // A changed AppProject is judged again at once by each of its Applications.
    let of_project = controller.store();
    let controller = controller.watches(
        Api::<AppProject>::namespaced(ctx.client.clone(), &ctx.namespace),
        watcher::Config::default(),
        move |project| {
            let name = project.name_any();
            of_project
                .state()
                .into_iter()
                .filter(|app| {
                    app.spec.project == name
                        || app.spec.project.is_empty() && name == DEFAULT_PROJECT
                })
                .map(|app| ObjectRef::from_obj(&*app))
                .collect::<Vec<_>>()
        },
    );
    let (stopping_tx, stopping) = watch::channel(false);
    let stop = stop
        .map(move |()| {
            let _ = stopping_tx.send(true);
        })
        .shared();
    let (appsets, writer) = reflector::store();
    // An Application's owner is in its own namespace: the control plane's, or another one
    // whose ApplicationSets are reconciled too (`--applicationset-namespaces`).
    let appset_api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.app_namespace);
    let watch_appsets = reflector(
        writer,
        watcher::watcher(appset_api, watcher::Config::default()),
    )
    .default_backoff()
    .for_each(|event| {
        if let Err(error) = event {
            tracing::warn!("watching ApplicationSets: {}", watch_message(error));
        }
        futures::future::ready(())
    });
    let (store, ownership, namespace) = (
        controller.store(),
        ctx.ownership.clone(),
        ctx.app_namespace.clone(),
    );
    let (watched_appsets, clusters) = (appsets.clone(), Arc::clone(&ctx));
    ctx.metrics.observe(
        &ctx.app_namespace,
        Observed {
            applications: Box::new(move || {
                application_infos(&store, ownership.as_ref(), &namespace)
            }),
            appsets: Box::new(move || watched_appsets.state()),
            clusters: Box::new(move || clusters.clusters.facts()),
        },
    );
    // Operations parked by an earlier term may have moved on under another leader: resume
    // them from status.
    ctx.runs.clear();
    let wake = wake_on_tracked_objects(&ctx);
    let controller = controller.reconcile_on(wake);
    let run = Arc::new(ControllerRun {
        ctx: Arc::clone(&ctx),
        applications,
        admission: Admission::new(RECONCILE_CONCURRENCY),
        appsets_listed: StoreReady::new(&appsets),
        appsets,
        stopping,
    });
    let ok = Arc::clone(&ctx);
    let listed = controller.store();
    let reconciling = controller
        .graceful_shutdown_on(stop.clone())
        .run(timed_reconcile, error_policy, run)
        .for_each(|result| {
            let ctx = Arc::clone(&ok);
            async move {
                match result {
                    Ok((object, _)) => {
                        ctx.failures.succeeded(&object.name);
                        ctx.metrics.application_reconciled(None);
                    }
                    Err(error) => controller_failed("Applications", error),
                }
            }
        });
    let reconciling = run_gracefully(reconciling, &listed, stop);
    // The ApplicationSet watch runs as long as the reconciles do.
    futures::pin_mut!(reconciling, watch_appsets);
    futures::future::select(reconciling, watch_appsets).await;
}

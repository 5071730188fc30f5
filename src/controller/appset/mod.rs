//! The ApplicationSet reconciler: a short pipeline —
//! observe → generate → render → validate → plan → apply → remove → rollout → status → sync
//! requests —
//! run by a kube-runtime
//! `Controller` that watches ApplicationSets, the Applications they own, the cluster Secrets
//! of the namespace and the kinds clusterDecisionResource generators read. Every decision is made by the pure [`flotilla_core::controller::appset`] core; these files read
//! and write, one per step of the pipeline. It never sleeps: failures requeue with backoff through the error policy, and a
//! reconcile asked for too soon after the previous one ([`flotilla_core::controller::appset::pacing`]) requeues for
//! when its pause is over, so that the events in between make one reconcile (one that asks for a
//! refresh, [`REFRESH_ANNOTATION`], is not paced).

pub mod analysis;
mod annotations;
mod apply;
mod bounded_writes;
mod context;
pub mod deletion;
mod dependencies;
mod error;
mod metric_request;
mod observe;
mod removal;
mod render;
pub mod rollout;
mod rollout_pass;
mod status;
mod watched_namespaces;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::watch;

use self::deletion::{delete_applications, ensure_finalizer};
use self::rollout::{RolloutError, publish, request_syncs};
use super::runtime::controller_errors::controller_failed;
use super::runtime::cpu_time::measured;
use super::runtime::graceful_shutdown::run_gracefully;
use super::runtime::metrics::Reconciler;
use super::runtime::slow_reconcile::reported_when_slow;
use super::runtime::store_ready::StoreReady;
use annotations::{clear_annotation, clear_refresh};
use apply::apply;
pub use context::AppSetContext;
pub use error::AppSetError;
use error::error_policy;
use flotilla_core::api::AppProject;
use flotilla_core::api::application_set::PROMOTE_ANNOTATION;
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet, REFRESH_ANNOTATION};
use flotilla_core::controller::appset::pacing::{LastReconcile, wait_before};
use flotilla_core::controller::appset::plan::keep_applied_metadata;
use flotilla_core::controller::appset::requeue::{poll_interval, rollout_requeue};
use flotilla_core::controller::appset::rollout_input::{keep_observed, rolling_sync};
use flotilla_core::controller::appset::rollout_layout::hydrate;
use flotilla_core::controller::appset::rollout_status::{RolloutOutcome, rollout_events};
use flotilla_core::controller::appset::status::in_progress;
use flotilla_core::controller::appset::sync_request::sync_requests;
use flotilla_core::secrets::cluster::{SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL};
use observe::owned_now;
use removal::remove;
use render::{Planned, generate_render_validate_plan};
pub use rollout_pass::live_rollout_input;
use rollout_pass::rollout;
use status::{StatusWrite, outcome, publish_outcome, write_status};
pub use watched_namespaces::WatchedNamespaces;

/// Field manager of the Applications the controller applies.
pub const FIELD_MANAGER: &str = "flotilla-applicationset";
/// Argo CD's annotation asking an ApplicationSet for an immediate regeneration (value `"true"`,
/// set by Argo CD's tooling): handled as [`REFRESH_ANNOTATION`], every repository fetched again
/// now, and removed once done.
pub const ARGO_CD_REFRESH_ANNOTATION: &str = "argocd.argoproj.io/application-set-refresh";
/// How soon an ApplicationSet whose rollout has work left is reconciled again, so progress
/// deadlines are noticed without any Application changing.
pub const ROLLOUT_REQUEUE: Duration = Duration::from_secs(5);
/// How soon an ApplicationSet whose status write was superseded (it changed during the pass)
/// is passed again, should the change's own event not have asked for it already.
const SUPERSEDED_REQUEUE: Duration = Duration::from_secs(1);

/// One term of the ApplicationSet controller: its context and the Applications of the
/// namespace that carry the ApplicationSet label, as this term's watch sees them (read by every
/// reconcile instead of listing them from the API server).
struct AppSetRun {
    ctx: Arc<AppSetContext>,
    applications: Store<Application>,
    /// The first list of `applications`, awaited by every reconcile.
    applications_listed: StoreReady,
    /// True once the controller stops: its watches are then no longer read, so a reconcile
    /// must not wait for the Applications' store to fill.
    stopping: watch::Receiver<bool>,
}

/// [`reconcile`], reported while it runs long.
async fn reported_reconcile(
    appset: Arc<ApplicationSet>,
    run: Arc<AppSetRun>,
) -> Result<Action, AppSetError> {
    let metrics = Arc::clone(&run.ctx.metrics);
    let name = appset.name_any();
    reported_when_slow(
        &metrics,
        Reconciler::ApplicationSet,
        &name,
        reconcile(appset, run),
    )
    .await
}

/// Reconciles one ApplicationSet.
///
/// # Errors
/// The first step that failed; status says so too.
async fn reconcile(
    appset: Arc<ApplicationSet>,
    run: Arc<AppSetRun>,
) -> Result<Action, AppSetError> {
    let ctx = &run.ctx;
    let mut stopping = run.stopping.clone();
    let ready = tokio::select! {
        ready = run.applications_listed.wait() => ready,
        _ = stopping.wait_for(|stopping| *stopping) => false,
    };
    if !ready {
        // The Applications' watch ended, or the controller stops before it listed (its
        // watches are no longer read): so does this term.
        return Ok(Action::await_change());
    }
    let name = appset.name_any();
    if appset.metadata.deletion_timestamp.is_some() {
        ctx.last_reconciles().remove(&name);
        return delete_applications(ctx, &appset).await;
    }
    let last = ctx.last_reconciles().get(&name).copied();
    // A change that may open the next step, and a refresh asked for (by a git webhook or by
    // hand), are reconciled without the pacing pause.
    let refresh_asked = appset
        .annotations()
        .get(ARGO_CD_REFRESH_ANNOTATION)
        .is_some_and(|value| value == "true");
    let at_once = ctx.promotions().1.contains(&name)
        || appset.annotations().contains_key(REFRESH_ANNOTATION)
        || refresh_asked;
    let wait = wait_before(last, Instant::now(), at_once);
    if !wait.is_zero() {
        return Ok(Action::requeue(wait));
    }
    ctx.take_promotion(&name);
    if let Some(stamp) = appset.annotations().get(REFRESH_ANNOTATION) {
        // A webhook received by another replica expired only that replica's fetches.
        ctx.repos.expire_announced(stamp, |_| true);
    }
    if refresh_asked {
        ctx.repos.expire(|_| true);
    }
    let started = Instant::now();
    ensure_finalizer(ctx, &appset).await?;
    let existing = owned_now(&run.applications, &appset);
    let (reconciled, cpu) = measured(reconcile_now(appset, Arc::clone(ctx), existing)).await;
    ctx.metrics
        .observe_reconcile(Reconciler::ApplicationSet, started.elapsed());
    let last = LastReconcile {
        ended: Instant::now(),
        cpu,
    };
    ctx.last_reconciles().insert(name, last);
    reconciled
}

/// One reconcile of a live ApplicationSet: the pipeline of the module documentation.
async fn reconcile_now(
    appset: Arc<ApplicationSet>,
    ctx: Arc<AppSetContext>,
    existing: Vec<Arc<Application>>,
) -> Result<Action, AppSetError> {
    let name = appset.name_any();
    let planned = generate_render_validate_plan(&ctx, &appset, &existing).await;
    let applied = match &planned {
        Ok(planned) => match apply(&ctx, &planned.plan).await {
            Ok(()) => remove(&ctx, &appset, &planned.plan, &existing).await,
            Err(error) => Err(error),
        },
        Err(_) => Ok(appset.status.as_ref().and_then(|s| s.deletion.clone())),
    };
    let (result, removing) = match (planned, applied) {
        (Ok(planned), Ok(removing)) => (Ok(planned), removing),
        (Err(error), Ok(removing)) => (Err(error), removing),
        (_, Err(error)) => (
            Err(error),
            appset.status.as_ref().and_then(|s| s.deletion.clone()),
        ),
    };
    let pass = match &result {
        Ok(planned) => rollout(&ctx, &appset, planned, &existing).await,
        Err(_) => None,
    };
    let outcome = outcome(&result, pass.as_ref(), &existing);
    let rollout_outcome = match &pass {
        _ if rolling_sync(&appset).is_none() => RolloutOutcome::Off,
        Some(Ok(pass)) => RolloutOutcome::Decided(&pass.decision),
        _ => RolloutOutcome::Kept,
    };
    let remaining = match &result {
        Ok(planned) => planned.plan.remaining(&existing),
        Err(_) => existing.iter().map(|app| &**app).collect(),
    };
    let written = write_status(
        &ctx,
        &appset,
        &outcome,
        &remaining,
        rollout_outcome,
        removing,
    )
    .await?;
    let status = match written {
        StatusWrite::Current(status) => *status,
        StatusWrite::Superseded => {
            tracing::info!(appset = %name, "changed during the pass; passing it again");
            return Ok(Action::requeue(SUPERSEDED_REQUEUE));
        }
    };
    let pass = pass.transpose()?;
    if let Some(pass) = &pass {
        // The status before this pass, every entry listed (those kept on the Applications
        // read back from them).
        let before = appset.status.clone().map(|mut before| {
            hydrate(&mut before, existing.iter().map(|app| &**app));
            before
        });
        let events = rollout_events(before.as_ref(), &status, &pass.decision);
        publish(&ctx.events, &appset, &events).await;
        let requests = sync_requests(&name, &pass.input, &pass.decision, &existing);
        request_syncs(&ctx.client, &ctx.namespace, &requests)
            .await
            .map_err(|error| AppSetError::Rollout {
                appset: name.clone(),
                error,
            })?;
        analysis::create_jobs(&ctx.clusters, &name, &pass.decision.analysis_jobs)
            .await
            .map_err(|error| AppSetError::Rollout {
                appset: name.clone(),
                error: RolloutError::AnalysisJob(Box::new(error)),
            })?;
    }
    clear_refresh(&ctx, &appset).await?;
    if pass
        .as_ref()
        .is_some_and(|pass| pass.decision.approved.is_some())
    {
        clear_annotation(&ctx, &appset, PROMOTE_ANNOTATION).await?;
    }
    publish_outcome(&ctx, &appset, &result).await;
    if let Ok(Planned { plan, .. }) = &result {
        tracing::info!(
            appset = %name,
            created = plan.create.len(),
            updated = plan.update.len(),
            deleted = plan.delete.len(),
            kept = plan.kept.len(),
            "reconciled"
        );
    }
    result?;
    ctx.failures.succeeded(&name);
    ctx.metrics.reconciled(None);
    let rollout_requeue = in_progress(&status).then(|| {
        pass.as_ref().map_or(ROLLOUT_REQUEUE, |pass| {
            rollout_requeue(&pass.input, &pass.decision, ROLLOUT_REQUEUE)
        })
    });
    let poll_requeue = poll_interval(&appset.spec.generators, ctx.git_poll);
    Ok(match (rollout_requeue, poll_requeue) {
        (Some(a), Some(b)) => Action::requeue(a.min(b)),
        (Some(after), None) | (None, Some(after)) => Action::requeue(after),
        (None, None) => Action::await_change(),
    })
}

/// Runs the ApplicationSet controller of `ctx.namespace` until `stop` completes, then lets
/// running reconciles finish.
pub async fn run(ctx: Arc<AppSetContext>, stop: impl Future<Output = ()> + Send + Sync + 'static) {
    let (client, namespace) = (ctx.client.clone(), ctx.namespace.clone());
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), &namespace);
    let applications: Api<Application> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client, &ctx.control_namespace);
    let controller = Controller::new(appsets.clone(), watcher::Config::default());
    let other_namespaces = ctx.watch_appsets(controller.store());
    let (dependents, dependents_namespace) = (controller.store(), namespace.clone());
    let (other_dependents, other_namespace) = (controller.store(), namespace.clone());
    let shared = Arc::clone(&ctx.watched);
    let (stopping_tx, stopping) = watch::channel(false);
    let stop = stop
        .map(move |()| {
            let _ = stopping_tx.send(true);
        })
        .shared();
    let (decided, decisions) = futures::channel::mpsc::unbounded();
    ctx.decision_watches.notify(decided);
    let store = controller.store();
    let every_appset = move || {
        store
            .state()
            .iter()
            .map(|appset| ObjectRef::from_obj(&**appset))
            .collect::<Vec<_>>()
    };
    let (for_secrets, for_projects) = (every_appset.clone(), every_appset);
    let projects: Api<AppProject> = Api::namespaced(ctx.client.clone(), &ctx.control_namespace);
    let (owners, watching) = (controller.store(), Arc::clone(&ctx));
    // The labelled Applications, kept with only the managed fields the plan reads and the
    // status the rollout and the ApplicationSet's status read.
    let (owned, writer) = reflector::store();
    let owned_changes = reflector(
        writer,
        watcher(
            applications,
            watcher::Config::default().labels(APPLICATION_SET_LABEL),
        )
        .modify(|app: &mut Application| {
            keep_applied_metadata(app, FIELD_MANAGER);
            keep_observed(app);
        }),
    )
    .default_backoff()
    .touched_objects();
    // Each owned Application's change reconciles its ApplicationSet; one that completes a
    // RollingSync step is reconciled without the pacing pause.
    let owned_now_of = owned.clone();
    let owner_of = move |application: Application| {
        let owner = application
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true) && o.kind == "ApplicationSet")?;
        let reference = ObjectRef::new(&owner.name).within(&namespace);
        if let Some(appset) = owners.get(&reference)
            && appset.uid().as_deref() == Some(owner.uid.as_str())
        {
            watching
                .observe_application(&appset, &application, || owned_now(&owned_now_of, &appset));
        }
        Some(reference)
    };
    let listed = controller.store();
    let reconciling = controller
        .watches_stream(owned_changes, owner_of)
        .watches(
            secrets,
            watcher::Config::default()
                .labels(&format!("{SECRET_TYPE_LABEL}={SECRET_TYPE_CLUSTER}")),
            move |_: Secret| for_secrets(),
        )
        // Projects decide which generated Applications are written.
        .watches(
            projects,
            watcher::Config::default(),
            move |_: AppProject| for_projects(),
        )
        // An ApplicationSet whose steps wait for a step of another is reconciled when that one
        // changes, so it opens as soon as the other's step completes; the controllers of the
        // other managed namespaces are told too, for theirs.
        .watches(appsets, watcher::Config::default(), move |changed: ApplicationSet| {
            shared.changed(&changed);
            dependencies::waiting_for(&dependents, &dependents_namespace, &changed)
        })
        .watches_stream(other_namespaces.map(Ok::<_, watcher::Error>), move |changed: ApplicationSet| {
            dependencies::waiting_for(&other_dependents, &other_namespace, &changed)
        })
        .reconcile_all_on(decisions)
        .graceful_shutdown_on(stop.clone())
        .run(
            reported_reconcile,
            error_policy,
            Arc::new(AppSetRun {
                ctx,
                applications_listed: StoreReady::new(&owned),
                applications: owned,
                stopping,
            }),
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                controller_failed("ApplicationSets", error);
            }
        });
    run_gracefully(reconciling, &listed, stop).await;
}

//! The ApplicationSet reconciler: a short pipeline —
//! observe → generate → render → validate → plan → apply → rollout → status → sync requests —
//! run by a kube-runtime
//! `Controller` that watches ApplicationSets, the Applications they own, the cluster Secrets
//! of the namespace and the kinds clusterDecisionResource generators read. Every decision is made by the pure [`super::appset`] core; this file reads
//! and writes. It never sleeps: failures requeue with backoff through the error policy, and a
//! reconcile asked for too soon after the previous one ([`super::appset::pacing`]) requeues for
//! when its pause is over, so that the events in between make one reconcile (one that asks for a
//! refresh, [`REFRESH_ANNOTATION`], is not paced).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::watch;

use super::analysis;
use super::appset::diff::{KeptFields, Plan, ignored_fields, keep_applied_metadata, plan};
use super::appset::error_reason::ErrorReason;
use super::appset::ownership::{
    APPLICATION_CONTROLLER_PRUNES, is_owned_by, owned, owner_reference, resources_finalizer,
};
use super::appset::pacing::{LastReconcile, wait_before};
use super::appset::promotion::StepWatch;
use super::appset::requeue::{poll_interval, rate_limit_requeue, rollout_requeue};
use super::appset::rollout_input::{Observation, keep_observed, rolling_sync, rollout_input};
use super::appset::rollout_status::{RolloutOutcome, rollout_events, with_rollout};
use super::appset::status::{
    DEFAULT_MAX_RESOURCES_STATUS_COUNT, Outcome, changed, next_status, status_patch, within_size,
};
use super::appset::sync_request::sync_requests;
use super::appset_deletion::{delete_applications, ensure_finalizer};
use super::bounded_writes;
use super::event_reason::EventReason;
use super::events::EventPublisher;
use super::failure_backoff::FailureBackoff;
use super::graceful_shutdown::run_gracefully;
use super::metrics::{Metrics, Reconciler};
use super::plugin_client::{HttpPlugins, PLUGIN_TIMEOUT};
use super::rollout::{RolloutError, publish, request_syncs, resolve_sources};
use super::scm_client::{HttpScm, SCM_TIMEOUT};
use super::slow_reconcile::reported_when_slow;
use super::store_ready::StoreReady;
use crate::api::AppProject;
use crate::api::application_set::PROMOTE_ANNOTATION;
use crate::api::application_set_status::{ApplicationSetStatus, ConditionStatus, ConditionType};
use crate::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use crate::cluster::api_error::ApiError;
use crate::cluster::clients::{ClusterClients, Connect};
use crate::cluster::decision_watches::DecisionWatches;
use crate::cluster::live_inventory::{LiveInventoryError, read_inventory};
use crate::cluster::namespace_objects::KubeNamespaceObjects;
use crate::cluster::watched_projects::{ProjectsWatchError, WatchedProjects};
use crate::render::admission::{RefusedApplication, admitted, refusals_message};
use crate::render::{RenderError, Sources, render_application_set};
use crate::repo::cache::RepoCache;
use crate::rollout::analysis::probes;
use crate::rollout::{RolloutDecision, RolloutInput, step};
use crate::secrets::cluster::{SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL};
use crate::sync::IgnoreError;
use crate::sync::OperationPhase;
use crate::sync::PROJECT_REFUSAL;
use flotilla_generators::generator::NamespaceSources;
use flotilla_generators::scm_api::rate_limit::RetryAfter;

/// Field manager of the Applications the controller applies.
pub const FIELD_MANAGER: &str = "flotilla-applicationset";
/// Annotation asking for an immediate regeneration (git generators); removed once done. Its
/// value is the time of the push a webhook announced.
pub const REFRESH_ANNOTATION: &str = "flotilla.dev/refresh";
/// Argo CD's annotation asking an ApplicationSet for an immediate regeneration (value `"true"`,
/// set by Argo CD's tooling): handled as [`REFRESH_ANNOTATION`], every repository fetched again
/// now, and removed once done.
pub const ARGO_CD_REFRESH_ANNOTATION: &str = "argocd.argoproj.io/application-set-refresh";
/// How soon an ApplicationSet whose rollout has work left is reconciled again, so progress
/// deadlines are noticed without any Application changing.
pub const ROLLOUT_REQUEUE: Duration = Duration::from_secs(5);

/// What the reconciler needs: a client, where to look, and how to read repositories.
pub struct AppSetContext {
    pub client: Client,
    /// The namespace of the ApplicationSets and their Applications.
    pub namespace: String,
    /// The control plane's namespace: cluster Secrets, AppProjects, and what plugin and
    /// clusterDecisionResource generators read (the same as `namespace`, unless
    /// `--applicationset-namespaces` names others).
    pub control_namespace: String,
    /// Repositories, for git generators and the revisions a rollout targets (commits and chart
    /// versions, read as the Application controller reads them).
    pub repos: Arc<RepoCache>,
    /// Poll interval of git generators without `requeueAfterSeconds`.
    pub git_poll: Duration,
    /// How many Applications an ApplicationSet's `status.resources` lists at most (0: as many
    /// as fit in the status's size).
    pub max_resources_status_count: usize,
    pub metrics: Arc<Metrics>,
    pub events: EventPublisher,
    /// Watches on the kinds clusterDecisionResource generators read.
    decision_watches: Arc<DecisionWatches>,
    /// The AppProjects of `control_namespace`.
    pub projects: WatchedProjects,
    /// The destination clusters, where analysis Jobs run.
    pub clusters: ClusterClients,
    /// Consecutive failures per ApplicationSet, for the backoff.
    failures: FailureBackoff,
    /// The last reconcile of each ApplicationSet, for pacing the next one.
    last_reconciles: Mutex<BTreeMap<String, LastReconcile>>,
    /// The Applications of each ApplicationSet seen since its last reconcile, and the
    /// ApplicationSets whose next reconcile may open the next step (not paced).
    promotions: Mutex<(BTreeMap<String, StepWatch>, BTreeSet<String>)>,
}

impl AppSetContext {
    /// A context with no failures recorded, for the ApplicationSets of the control plane's
    /// namespace `namespace`; destination clusters are resolved through the cluster Secrets of
    /// `namespace` and reached through clients made by `connect` (`client` for the
    /// controller's own cluster).
    #[must_use]
    pub fn new(
        client: Client,
        connect: Connect,
        namespace: String,
        repos: Arc<RepoCache>,
        git_poll: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            clusters: ClusterClients::new(client.clone(), &namespace, connect),
            events: EventPublisher::new(client.clone()),
            decision_watches: Arc::new(DecisionWatches::new(client.clone(), namespace.clone())),
            projects: WatchedProjects::new(client.clone(), &namespace),
            client,
            control_namespace: namespace.clone(),
            namespace,
            repos,
            git_poll,
            max_resources_status_count: DEFAULT_MAX_RESOURCES_STATUS_COUNT,
            metrics,
            failures: FailureBackoff::default(),
            last_reconciles: Mutex::default(),
            promotions: Mutex::default(),
        }
    }

    /// Reconciles the ApplicationSets of `namespace` (another than the control plane's, whose
    /// Secrets, projects and generator inputs it still reads), writing their Applications there.
    #[must_use]
    pub fn managing(self, namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            ..self
        }
    }

    /// Lists at most `count` Applications in each ApplicationSet's `status.resources` (0: as
    /// many as fit in the status's size).
    #[must_use]
    pub fn listing_at_most(self, count: usize) -> Self {
        Self {
            max_resources_status_count: count,
            ..self
        }
    }

    /// Whether the next reconcile of `appset` may open the next step; forgets what the watch
    /// saw of its Applications (the reconcile observes them anew).
    fn take_promotion(&self, appset: &str) -> bool {
        let mut promotions = self.promotions();
        promotions.0.remove(appset);
        promotions.1.remove(appset)
    }

    /// Records a change of `application`, owned by `appset`, as the watch sees it.
    fn observe_application(&self, appset: &ApplicationSet, application: &Application) {
        let name = appset.name_any();
        let mut promotions = self.promotions();
        let (watches, promote) = &mut *promotions;
        let completes = watches
            .entry(name.clone())
            .or_default()
            .completes_step(appset.status.as_ref(), application);
        if completes {
            tracing::debug!(appset = %name, application = %application.name_any(), "completes a step");
            promote.insert(name);
        }
    }

    fn promotions(
        &self,
    ) -> std::sync::MutexGuard<'_, (BTreeMap<String, StepWatch>, BTreeSet<String>)> {
        self.promotions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn last_reconciles(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LastReconcile>> {
        self.last_reconciles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a reconcile failed; the variant name is the condition reason and metric label.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("listing the Applications of ApplicationSet {appset}: {error}")]
    Observe {
        appset: String,
        #[source]
        error: ApiError,
    },
    #[error("reading the cluster inventory: {0}")]
    Generate(#[from] LiveInventoryError),
    #[error("{0}")]
    Projects(#[from] ProjectsWatchError),
    #[error("{0}")]
    Render(#[from] RenderError),
    #[error("the render task of ApplicationSet {appset} failed: {error}")]
    RenderTask {
        appset: String,
        #[source]
        error: tokio::task::JoinError,
    },
    #[error("ApplicationSet {appset} has no UID; it must be read from the API server")]
    Plan { appset: String },
    #[error("ApplicationSet {appset}: spec.{error}")]
    Spec {
        appset: String,
        #[source]
        error: IgnoreError,
    },
    #[error("applying Application {application}: {error}")]
    Apply {
        application: String,
        #[source]
        error: ApiError,
    },
    #[error("deleting Application {application}: {error}")]
    Delete {
        application: String,
        #[source]
        error: ApiError,
    },
    #[error("writing the finalizers of ApplicationSet {appset}: {error}")]
    Finalizer {
        appset: String,
        #[source]
        error: ApiError,
    },
    #[error("writing the status of ApplicationSet {appset}: {error}")]
    Status {
        appset: String,
        #[source]
        error: ApiError,
    },
    /// Removing a request annotation it carried out (`flotilla.dev/refresh`, `flotilla.dev/promote`).
    #[error("removing {annotation} from ApplicationSet {appset}: {error}")]
    Refresh {
        appset: String,
        annotation: &'static str,
        #[source]
        error: ApiError,
    },
    #[error("rollout of ApplicationSet {appset}: {error}")]
    Rollout {
        appset: String,
        #[source]
        error: RolloutError,
    },
}

impl ReconcileError {
    /// The step that failed, as a CamelCase reason for conditions, Events and metrics.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Observe { .. } => ErrorReason::ObserveError,
            Self::Projects(_) => ErrorReason::ProjectsError,
            Self::Generate(_) | Self::Render(RenderError::Generate { .. }) => {
                ErrorReason::GenerateError
            }
            Self::Render(_) | Self::RenderTask { .. } => ErrorReason::RenderError,
            Self::Plan { .. } => ErrorReason::PlanError,
            Self::Spec { .. } => ErrorReason::InvalidSpecError,
            Self::Apply { .. } => ErrorReason::ApplyError,
            Self::Delete { .. } => ErrorReason::DeleteError,
            Self::Finalizer { .. } => ErrorReason::FinalizerError,
            Self::Status { .. } => ErrorReason::StatusError,
            Self::Refresh { .. } => ErrorReason::RefreshError,
            Self::Rollout { .. } => ErrorReason::RolloutError,
        }
        .as_str()
    }

    /// The note of the Warning Event saying it: `Reason: message`.
    fn event_note(&self) -> String {
        format!("{}: {self}", self.reason())
    }

    /// When a generator's SCM provider, which answered that it is rate limited, may be asked
    /// again.
    #[must_use]
    pub fn retry_after(&self) -> Option<RetryAfter> {
        match self {
            Self::Render(RenderError::Generate { error, .. }) => error.retry_after(),
            _ => None,
        }
    }

    /// How the failure shows in status: before anything was written, nothing changed.
    fn outcome(&self) -> Outcome {
        let (reason, message) = (self.reason().to_string(), self.to_string());
        match self {
            Self::Generate(_) | Self::Render(RenderError::Generate { .. }) => {
                Outcome::GenerateFailed { reason, message }
            }
            Self::Render(_) | Self::RenderTask { .. } | Self::Plan { .. } | Self::Spec { .. } => {
                Outcome::Invalid { reason, message }
            }
            _ => Outcome::ApplyFailed { reason, message },
        }
    }
}

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
) -> Result<Action, ReconcileError> {
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
) -> Result<Action, ReconcileError> {
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
    let reconciled = reconcile_now(appset, Arc::clone(ctx), existing).await;
    let last = LastReconcile {
        ended: Instant::now(),
        took: started.elapsed(),
    };
    ctx.metrics
        .observe_reconcile(Reconciler::ApplicationSet, last.took);
    ctx.last_reconciles().insert(name, last);
    reconciled
}

/// One reconcile of a live ApplicationSet: the pipeline of the module documentation.
async fn reconcile_now(
    appset: Arc<ApplicationSet>,
    ctx: Arc<AppSetContext>,
    existing: Vec<Arc<Application>>,
) -> Result<Action, ReconcileError> {
    let name = appset.name_any();
    let planned = generate_render_validate_plan(&ctx, &appset, &existing).await;
    let applied = match &planned {
        Ok(planned) => apply(&ctx, &planned.plan).await,
        Err(_) => Ok(()),
    };
    let result = planned.and_then(|planned| applied.map(|()| planned));
    let pass = match &result {
        Ok(planned) => rollout(&ctx, &appset, planned, &existing).await,
        Err(_) => None,
    };
    let outcome = match (&result, &pass) {
        (Err(error), _) | (Ok(_), Some(Err(error))) => error.outcome(),
        (Ok(planned), _) => refused_outcome(&planned.refused, &existing),
    };
    let rollout_outcome = match &pass {
        _ if rolling_sync(&appset).is_none() => RolloutOutcome::Off,
        Some(Ok(pass)) => RolloutOutcome::Decided(&pass.decision),
        _ => RolloutOutcome::Kept,
    };
    let remaining = match &result {
        Ok(planned) => planned.plan.remaining(&existing),
        Err(_) => existing.iter().map(|app| &**app).collect(),
    };
    let status = write_status(&ctx, &appset, &outcome, &remaining, rollout_outcome).await?;
    let pass = pass.transpose()?;
    if let Some(pass) = &pass {
        let events = rollout_events(appset.status.as_ref(), &status, &pass.decision);
        publish(&ctx.events, &appset, &events).await;
        let requests = sync_requests(&name, &pass.input, &pass.decision, &existing);
        request_syncs(&ctx.client, &ctx.namespace, &requests)
            .await
            .map_err(|error| ReconcileError::Rollout {
                appset: name.clone(),
                error,
            })?;
        analysis::create_jobs(&ctx.clusters, &name, &pass.decision.analysis_jobs)
            .await
            .map_err(|error| ReconcileError::Rollout {
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

/// Whether the rollout has work left that can proceed (`RolloutProgressing=True`).
fn in_progress(status: &ApplicationSetStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == ConditionType::RolloutProgressing && c.status == ConditionStatus::True)
}

/// The generated Applications (rendered, admitted by their projects and owned) and the writes
/// that make them so.
pub struct Planned {
    pub desired: Vec<Application>,
    pub plan: Plan,
    /// Generated Applications their projects refuse: neither written nor deleted.
    pub refused: Vec<RefusedApplication>,
}

/// `UpToDate`, unless projects refuse generated Applications (not written) or refused the
/// last sync of existing ones: then `ErrorOccurred` names each with the rule.
fn refused_outcome(refused: &[RefusedApplication], existing: &[Arc<Application>]) -> Outcome {
    let mut lines = Vec::new();
    if !refused.is_empty() {
        lines.push(refusals_message(refused));
    }
    for app in existing {
        let failed = app
            .status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .filter(|op| op.phase == OperationPhase::Failed)
            .filter(|op| op.message.starts_with(PROJECT_REFUSAL));
        if let Some(op) = failed {
            lines.push(format!("{}: {}", app.name_any(), op.message));
        }
    }
    if lines.is_empty() {
        Outcome::UpToDate
    } else {
        Outcome::Invalid {
            reason: ErrorReason::ApplicationValidationError.as_str().to_owned(),
            message: lines.join("; "),
        }
    }
}

/// One rollout pass: what it observed and what it decided.
pub struct RolloutPass {
    pub input: RolloutInput,
    pub decision: RolloutDecision,
}

/// The rollout step: a pass of the step function over the Applications as observed before this
/// reconcile's writes, with their sources resolved now. `None` without a RollingSync strategy.
async fn rollout(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    planned: &Planned,
    existing: &[Arc<Application>],
) -> Option<Result<RolloutPass, ReconcileError>> {
    let input = observed_rollout(ctx, appset, planned, existing).await?;
    Some(input.map(|input| RolloutPass {
        decision: step(&input),
        input,
    }))
}

/// The step function's input for `appset` (a RollingSync), `None` for other strategies.
async fn observed_rollout(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    planned: &Planned,
    existing: &[Arc<Application>],
) -> Option<Result<RolloutInput, ReconcileError>> {
    let strategy = rolling_sync(appset)?;
    let resolved = resolve_sources(&ctx.repos, &planned.desired).await;
    let projects = ctx.projects.current().await.map_err(RolloutError::from);
    let (resolved, projects) = match resolved.and_then(|r| projects.map(|p| (r, p))) {
        Ok(both) => both,
        Err(error) => {
            return Some(Err(ReconcileError::Rollout {
                appset: appset.name_any(),
                error,
            }));
        }
    };
    let updated = planned
        .plan
        .update
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let mut input = rollout_input(&Observation {
        now: Timestamp::now(),
        strategy,
        desired: &planned.desired,
        existing,
        updated: &updated,
        resolved: &resolved,
        prior: appset,
        projects: &projects,
    });
    input.analysis = analysis::observe(&ctx.clusters, &probes(&input)).await;
    Some(Ok(input))
}

/// The rollout input the controller would use for `appset` now, read from the cluster without
/// writing anything (`flotilla rollout explain`). `None` unless it uses RollingSync.
///
/// # Errors
/// Listing, generating, rendering or resolving fails.
pub async fn live_rollout_input(
    ctx: &AppSetContext,
    appset: &Arc<ApplicationSet>,
) -> Result<Option<RolloutInput>, ReconcileError> {
    if rolling_sync(appset).is_none() {
        return Ok(None);
    }
    let existing = observe(ctx, appset).await?;
    let planned = generate_render_validate_plan(ctx, appset, &existing).await?;
    observed_rollout(ctx, appset, &planned, &existing)
        .await
        .transpose()
}

/// An Event when Applications were written, or when the reconcile failed.
async fn publish_outcome(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    result: &Result<Planned, ReconcileError>,
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

/// The Applications `appset` owns (its label and its controller owner reference) in the
/// watch's store, shared with it rather than copied: a fleet's Applications are held once.
fn owned_now(applications: &Store<Application>, appset: &ApplicationSet) -> Vec<Arc<Application>> {
    let name = appset.name_any();
    let uid = appset.uid().unwrap_or_default();
    applications
        .state()
        .into_iter()
        .filter(|app| {
            app.labels().get(APPLICATION_SET_LABEL) == Some(&name) && is_owned_by(app, &uid)
        })
        .collect()
}

/// The Applications this ApplicationSet owns now (label and controller owner reference), listed
/// from the API server.
pub(super) async fn observe(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<Vec<Arc<Application>>, ReconcileError> {
    let name = appset.name_any();
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let selector = format!("{APPLICATION_SET_LABEL}={name}");
    let listed = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|error| ReconcileError::Observe {
            appset: name.clone(),
            error: error.into(),
        })?;
    let uid = appset.uid().unwrap_or_default();
    Ok(listed
        .items
        .into_iter()
        .filter(|app| is_owned_by(app, &uid))
        .map(Arc::new)
        .collect())
}

/// Generates and renders the Applications (all or nothing), checks them and decides the writes.
async fn generate_render_validate_plan(
    ctx: &AppSetContext,
    appset: &Arc<ApplicationSet>,
    existing: &[Arc<Application>],
) -> Result<Planned, ReconcileError> {
    let name = appset.name_any();
    let inventory = read_inventory(&ctx.client, &ctx.control_namespace).await?;
    let projects = ctx.projects.current().await?;
    let clusters = inventory.registrations().to_vec();
    let repos = Arc::clone(&ctx.repos);
    let rendering = Arc::clone(appset);
    let runtime = tokio::runtime::Handle::current();
    let objects = KubeNamespaceObjects::new(
        ctx.client.clone(),
        ctx.control_namespace.clone(),
        runtime.clone(),
        Arc::clone(&ctx.decision_watches),
    );
    let plugins = HttpPlugins::new(runtime.clone(), PLUGIN_TIMEOUT);
    let scm = HttpScm::new(runtime, SCM_TIMEOUT);
    let appset_name = name.clone();
    // Git generators run the `git` CLI, plugin and clusterDecisionResource generators block on
    // API and HTTP calls: keep them off the async workers.
    let rendered = tokio::task::spawn_blocking(move || {
        let sources = Sources {
            clusters: &inventory,
            git: &*repos,
            namespace: NamespaceSources {
                appset: &appset_name,
                objects: &objects,
                plugins: &plugins,
                scm: &scm,
            },
        };
        render_application_set(&rendering, sources)
    })
    .await
    .map_err(|error| ReconcileError::RenderTask {
        appset: name.clone(),
        error,
    })??;
    let owner = owner_reference(appset).ok_or(ReconcileError::Plan {
        appset: name.clone(),
    })?;
    let policy = appset.spec.sync_policy.clone().unwrap_or_default();
    let finalizer = resources_finalizer(
        policy.preserve_resources_on_deletion,
        APPLICATION_CONTROLLER_PRUNES,
    );
    let (rendered, refused) = admitted(rendered, &projects, &clusters);
    let desired: Vec<Application> = rendered
        .into_iter()
        .map(|app| owned(app, &owner, finalizer))
        .collect();
    // A refused Application that exists stays as it is (its own controller refuses to sync it).
    let existing: Vec<&Application> = existing
        .iter()
        .map(|app| &**app)
        .filter(|app| !refused.iter().any(|r| r.name == app.name_any()))
        .collect();
    let ignored = ignored_fields(&appset.spec).map_err(|error| ReconcileError::Spec {
        appset: name.clone(),
        error,
    })?;
    let preserved = appset.spec.preserved_fields.clone().unwrap_or_default();
    let plan = plan(
        &desired,
        &existing,
        policy.applications_sync,
        FIELD_MANAGER,
        KeptFields {
            ignored: &ignored,
            preserved: &preserved,
        },
    );
    Ok(Planned {
        desired,
        plan,
        refused,
    })
}

/// Server-side applies created and updated Applications, then deletes the ones no longer
/// generated, each a bounded number at once ([`bounded_writes`]).
async fn apply(ctx: &AppSetContext, plan: &Plan) -> Result<(), ReconcileError> {
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let (api, params) = (&api, &params);
    // Futures built in a loop, not by a closure (see the sync engine's writes).
    let mut applies = Vec::with_capacity(plan.create.len() + plan.update.len());
    for application in plan.create.iter().chain(&plan.update) {
        applies.push(async move {
            let name = application.name_any();
            api.patch(&name, params, &Patch::Apply(application))
                .await
                .map(drop)
                .map_err(|error| ReconcileError::Apply {
                    application: name,
                    error: error.into(),
                })
        });
    }
    bounded_writes::all(applies).await?;
    delete_named(api, &plan.delete).await
}

/// Deletes the Applications `names` (background propagation: each Application's own finalizer
/// deletes its resources), a bounded number at once; one already gone is fine.
pub(super) async fn delete_named(
    api: &Api<Application>,
    names: &[String],
) -> Result<(), ReconcileError> {
    let mut deletes = Vec::with_capacity(names.len());
    for name in names {
        deletes.push(async move {
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                Err(error) => Err(ReconcileError::Delete {
                    application: name.clone(),
                    error: error.into(),
                }),
            }
        });
    }
    bounded_writes::all(deletes).await
}

/// Writes the status (with the rollout's part) with a merge patch on `/status`, only when it
/// changed; returns it. A failed write is also an Event on the ApplicationSet.
async fn write_status(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    outcome: &Outcome,
    applications: &[&Application],
    rollout: RolloutOutcome<'_>,
) -> Result<ApplicationSetStatus, ReconcileError> {
    let now = Time(Timestamp::now());
    let old = appset.status.as_ref();
    let status = next_status(
        old,
        outcome,
        applications,
        ctx.max_resources_status_count,
        &now,
    );
    let new = within_size(with_rollout(status, rollout));
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
            let error = ReconcileError::Status {
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

/// Removes the refresh annotations once a regeneration has run.
async fn clear_refresh(ctx: &AppSetContext, appset: &ApplicationSet) -> Result<(), ReconcileError> {
    for key in [REFRESH_ANNOTATION, ARGO_CD_REFRESH_ANNOTATION] {
        if appset.annotations().contains_key(key) {
            clear_annotation(ctx, appset, key).await?;
        }
    }
    Ok(())
}

/// Removes the annotation `key` of `appset` (a request it has carried out).
async fn clear_annotation(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    key: &'static str,
) -> Result<(), ReconcileError> {
    let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let patch = serde_json::json!({"metadata": {"annotations": {key: null}}});
    api.patch(
        &appset.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .map(drop)
    .map_err(|error| ReconcileError::Refresh {
        appset: appset.name_any(),
        annotation: key,
        error: error.into(),
    })
}

/// Requeues a failed ApplicationSet with backoff (see [`FailureBackoff`]); an invalid spec waits
/// for the ApplicationSet to change.
fn error_policy(
    appset: Arc<ApplicationSet>,
    error: &ReconcileError,
    run: Arc<AppSetRun>,
) -> Action {
    let ctx = &run.ctx;
    ctx.metrics.reconciled(Some(error.reason()));
    if matches!(error, ReconcileError::Spec { .. }) {
        // Only a change of the ApplicationSet fixes its spec; status already says what is wrong.
        tracing::warn!(appset = %appset.name_any(), reason = error.reason(), "{error}");
        return Action::await_change();
    }
    if let Some(retry) = error.retry_after() {
        // A rate-limited provider is asked again once its limit is over, not sooner.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let delay = rate_limit_requeue(retry, now);
        tracing::warn!(appset = %appset.name_any(), reason = error.reason(), after = ?delay, "{error}");
        return Action::requeue(delay);
    }
    let (failures, delay) = ctx.failures.failed(&appset.name_any());
    tracing::warn!(appset = %appset.name_any(), reason = error.reason(), failures, "{error}");
    Action::requeue(delay)
}

/// Runs the ApplicationSet controller of `ctx.namespace` until `stop` completes, then lets
/// running reconciles finish.
pub async fn run(ctx: Arc<AppSetContext>, stop: impl Future<Output = ()> + Send + Sync + 'static) {
    let (client, namespace) = (ctx.client.clone(), ctx.namespace.clone());
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), &namespace);
    let applications: Api<Application> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client, &ctx.control_namespace);
    let controller = Controller::new(appsets, watcher::Config::default());
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
    let owner_of = move |application: Application| {
        let owner = application
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true) && o.kind == "ApplicationSet")?;
        let reference = ObjectRef::new(&owner.name).within(&namespace);
        if let Some(appset) = owners.get(&reference)
            && appset.uid().as_deref() == Some(owner.uid.as_str())
        {
            watching.observe_application(&appset, &application);
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
                tracing::debug!("controller: {error}");
            }
        });
    run_gracefully(reconciling, &listed, stop).await;
}

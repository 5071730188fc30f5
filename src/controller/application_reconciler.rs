//! The Application reconciler: observe (destination → source → plan → live objects) → compare →
//! status → decide → sync, run by a kube-runtime `Controller` that watches the Applications of
//! the namespace. Deleted Applications with a resources finalizer get their resources deleted
//! (reverse wave order, `Delete=confirm` objects holding it until approved), then their
//! PostDelete hooks run, before the finalizer goes. Every decision is made by the pure
//! [`super::application`] core; this file reads and writes.
//!
//! `spec.operation` is consumed when its sync starts: `status.operationState` is written
//! (phase Running) first, then `spec.operation` is removed (only if unchanged), then the engine
//! runs from that stored state. A stopping controller drops a running sync without terminating
//! it, so the next leader resumes it from `status.operationState`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::application::compare::{Comparison, compare};
use super::application::decide::{SyncGate, Trigger, next_sync, sync_gate};
use super::application::deletion::{
    DeletionState, DeletionStep, RESOURCE_FINALIZERS, deletion_step, post_delete_id,
};
use super::application::freshness::{
    CompareInputs, LastCompare, compare_needed, tracked_fingerprint, version_after_write,
};
use super::application::instance::instance_name;
use super::application::status::{condition_patch, operation_patch, status_patch, with_generation};
use super::application::window_gate::{WindowGate, refused_message, waiting_message, window_gate};
use super::appset_reconciler::retry_delay;
use super::events::{EventPublisher, EventReason};
use super::metrics::{Metrics, Reconciler};
use super::running_syncs::{Parked, RunningSyncs};
use super::status_store::StatusStore;
use super::sync_job::{JobPlan, JobStep, SyncJob};
use crate::api::AppProject;
use crate::api::app_project::DEFAULT_PROJECT;
use crate::api::application::{
    ApplicationConditionType, InitiatedBy, Operation, SyncOperation, TERMINATE_ANNOTATION,
};
use crate::api::{Application, ApplicationSet};
use crate::cluster::api_error::ApiError;
use crate::cluster::clients::{ClientsError, ClusterClients, Connect};
use crate::cluster::kube_cluster::KubeCluster;
use crate::cluster::watched_customizations::{
    CustomizationsConfigError, DEFAULT_CONFIG_MAP, WatchedCustomizations,
};
use crate::cluster::watched_projects::{ProjectsWatchError, WatchedProjects};
use crate::customizations::Customizations;
use crate::manifest::{ObjectKey, ValidationErrors};
use crate::project::windows::sync_block_or_invalid;
use crate::project::{ClusterIdentity, ProjectScope, Projects, Refusal, admit};
use crate::repo::cache::{FetchError, Manifests, RepoCache};
use crate::source::SourceOptions;
use crate::sync::application_settings::{
    SettingsError, SyncOverrides, SyncSettings, sync_settings,
};
use crate::sync::execute::cluster_api::{ClusterApi, ClusterError, Propagation};
use crate::sync::execute::{
    ExecuteError, ExecuteSettings, OperationStore, SyncRun, approved_since, begin,
};
use crate::sync::{LiveObject, OperationState, SyncPlan};

/// How many live objects are read at once while comparing.
const READ_CONCURRENCY: usize = 8;
/// How soon a deletion in progress is looked at again.
const DELETION_POLL: Duration = Duration::from_secs(1);
/// How many Applications are reconciled at once (a running sync holds its slot): bounds the
/// requests in flight and the memory of the reconciles, as Argo CD's processor counts do.
pub const RECONCILE_CONCURRENCY: u16 = 32;

/// What the Application reconciler needs.
pub struct ApplicationContext {
    pub client: Client,
    /// The namespace of the Applications and the cluster Secrets.
    pub namespace: String,
    pub repos: Arc<RepoCache>,
    pub clusters: ClusterClients,
    /// How often an Application is compared again without a change (Argo CD: 3 min).
    pub resync: Duration,
    /// Timeouts and polling of sync operations; prune and retry come from each Application.
    pub settings: ExecuteSettings,
    pub metrics: Arc<Metrics>,
    pub events: EventPublisher,
    /// Consecutive failures per Application, for the backoff.
    failures: Mutex<BTreeMap<String, u32>>,
    /// The last successful compare of each Application, to skip the next one when nothing it
    /// read changed.
    compared: Mutex<HashMap<String, LastCompare>>,
    /// The customizations configured in the settings ConfigMap, and those the remembered
    /// compares used (when they change, every Application is compared again).
    customizations: WatchedCustomizations,
    compared_customizations: Mutex<Customizations>,
    /// The operations running between two of their steps.
    runs: RunningSyncs,
    /// The AppProjects of `namespace`.
    pub projects: WatchedProjects,
}

impl ApplicationContext {
    /// A context with no failures recorded; destinations are resolved through the cluster
    /// Secrets of `namespace`, and reached through clients made by `connect` (`client` for the
    /// controller's own cluster).
    #[must_use]
    pub fn new(
        client: Client,
        connect: Connect,
        namespace: String,
        repos: Arc<RepoCache>,
        resync: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            clusters: ClusterClients::new(client.clone(), &namespace, connect),
            events: EventPublisher::new(client.clone()),
            customizations: WatchedCustomizations::new(
                client.clone(),
                &namespace,
                DEFAULT_CONFIG_MAP,
            ),
            projects: WatchedProjects::new(client.clone(), &namespace),
            client,
            namespace,
            repos,
            resync,
            settings: ExecuteSettings::default(),
            metrics,
            failures: Mutex::default(),
            compared: Mutex::default(),
            compared_customizations: Mutex::default(),
            runs: RunningSyncs::default(),
        }
    }

    /// Reads the configured customizations from ConfigMap `name` instead of
    /// [`DEFAULT_CONFIG_MAP`].
    #[must_use]
    pub fn with_settings_config_map(self, name: &str) -> Self {
        Self {
            customizations: WatchedCustomizations::new(self.client.clone(), &self.namespace, name),
            ..self
        }
    }

    /// The configured customizations now; when they differ from those of the remembered
    /// compares, those are forgotten.
    async fn customizations(&self, app: &Application) -> Result<Customizations, ApplicationError> {
        let checks = self.customizations.current().await.map_err(|error| {
            ApplicationError::Customizations {
                app: app.name_any(),
                error,
            }
        })?;
        let mut compared = self
            .compared_customizations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *compared != checks {
            self.compared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            *compared = checks.clone();
        }
        Ok(checks)
    }

    fn last_compare(&self, app: &str) -> Option<LastCompare> {
        self.compared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(app)
            .cloned()
    }

    /// Records the last compare of `app`, or forgets it (`None`).
    fn remember_compare(&self, app: String, last: Option<LastCompare>) {
        let mut compared = self.compared.lock().unwrap_or_else(PoisonError::into_inner);
        match last {
            Some(last) => compared.insert(app, last),
            None => compared.remove(&app),
        };
    }

    fn api(&self) -> Api<Application> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

/// One run of the controller: the shared context, the watched Applications and
/// ApplicationSets, and whether the run is stopping (running syncs are then dropped, to be
/// resumed by the next leader).
struct Run {
    ctx: Arc<ApplicationContext>,
    appsets: Store<ApplicationSet>,
    stopping: watch::Receiver<bool>,
}

/// Where a reconcile failed; the variant name is the Event reason and metric label.
#[derive(Debug, thiserror::Error)]
pub enum ApplicationError {
    #[error("Application {app}: {error}")]
    Destination {
        app: String,
        #[source]
        error: ClientsError,
    },
    #[error("Application {app}: {error}")]
    Source {
        app: String,
        #[source]
        error: FetchError,
    },
    #[error("Application {app}: reading the source failed: {message}")]
    SourceTask { app: String, message: String },
    #[error("Application {app}: {error}")]
    Plan {
        app: String,
        #[source]
        error: ValidationErrors,
    },
    #[error("Application {app}: reading {what}: {error}")]
    Observe {
        app: String,
        what: String,
        #[source]
        error: ClusterError,
    },
    #[error("Application {app}: {error}")]
    Settings {
        app: String,
        #[source]
        error: SettingsError,
    },
    #[error("Application {app}: {error}")]
    Sync {
        app: String,
        #[source]
        error: ExecuteError,
    },
    #[error("Application {app}: {error}")]
    Projects {
        app: String,
        #[source]
        error: ProjectsWatchError,
    },
    #[error("Application {app}: {refusal}")]
    Project {
        app: String,
        #[source]
        refusal: Refusal,
    },
    #[error("Application {app}: {error}")]
    Customizations {
        app: String,
        #[source]
        error: CustomizationsConfigError,
    },
    #[error("Application {app}: deleting {object}: {error}")]
    Delete {
        app: String,
        object: ObjectKey,
        #[source]
        error: ClusterError,
    },
    #[error("Application {app}: {message}")]
    PostDelete { app: String, message: String },
    #[error("Application {app}: writing {what}: {error}")]
    Write {
        app: String,
        what: &'static str,
        #[source]
        error: ApiError,
    },
}

impl ApplicationError {
    /// The step that failed, as a CamelCase reason for metrics.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Destination { .. } => "DestinationError",
            Self::Source { .. } | Self::SourceTask { .. } => "SourceError",
            Self::Plan { .. } => "PlanError",
            Self::Observe { .. } => "ObserveError",
            Self::Settings { .. } | Self::Project { .. } => "InvalidSpecError",
            Self::Projects { .. } => "ProjectsError",
            Self::Sync { .. } => "SyncError",
            Self::Customizations { .. } => "CustomizationsError",
            Self::Delete { .. } => "DeleteError",
            Self::PostDelete { .. } => "PostDeleteError",
            Self::Write { .. } => "WriteError",
        }
    }
}

/// What observing an Application found.
struct Observed {
    cluster: Arc<KubeCluster>,
    manifests: Manifests,
    comparison: Comparison,
    /// What the comparison read.
    inputs: CompareInputs,
    /// The kinds (group, kind) the plan deploys.
    kinds: Vec<(String, String)>,
    /// The configured customizations the comparison used, for the sync too.
    customizations: Customizations,
    /// The projects and the destination's identity the Application was admitted with.
    admitted: Admitted,
}

/// What an Application's project was judged with: the projects known and both names of its
/// destination cluster.
struct Admitted {
    projects: Projects,
    cluster: ClusterIdentity,
}

impl Admitted {
    fn scope(&self) -> ProjectScope<'_> {
        ProjectScope {
            projects: &self.projects,
            cluster: &self.cluster,
        }
    }
}

/// [`reconcile`], its duration recorded.
async fn timed_reconcile(app: Arc<Application>, run: Arc<Run>) -> Result<Action, ApplicationError> {
    let started = std::time::Instant::now();
    let metrics = Arc::clone(&run.ctx.metrics);
    let reconciled = reconcile(app, run).await;
    metrics.observe_reconcile(Reconciler::Application, started.elapsed());
    reconciled
}

/// Reconciles one Application.
async fn reconcile(app: Arc<Application>, run: Arc<Run>) -> Result<Action, ApplicationError> {
    let ctx = &run.ctx;
    if let Some(parked) = ctx.runs.take(&app.uid().unwrap_or_default()) {
        let Parked {
            job, run: sync_run, ..
        } = parked;
        let stepped = continue_operation(&run, &app, job, Some(sync_run)).await;
        return reporting_sync_failure(ctx, &app, stepped).await;
    }
    if app.metadata.deletion_timestamp.is_some() {
        ctx.remember_compare(app.name_any(), None);
        return delete_resources(&run, &app).await;
    }
    let customizations = ctx.customizations(&app).await;
    let admitted = admit_application(ctx, &app).await;
    if admitted.is_ok() && unchanged(&run, &app).await {
        return Ok(Action::requeue(ctx.resync));
    }
    let observed = match (customizations, admitted) {
        (Ok(customizations), Ok(admitted)) => observe(ctx, &app, customizations, admitted).await,
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    let message = observed.as_ref().err().map(ToString::to_string);
    let written = match (&observed, &message) {
        (Ok(observed), _) => Ok(&observed.comparison),
        (Err(error), message) => Err((
            if matches!(error, ApplicationError::Project { .. }) {
                ApplicationConditionType::InvalidSpecError
            } else {
                ApplicationConditionType::ComparisonError
            },
            message.as_deref().unwrap_or_default(),
        )),
    };
    let status_written = write_status(ctx, &app, written).await;
    let last = match (&observed, &status_written) {
        (Ok(observed), Ok(written)) => Some(LastCompare {
            inputs: CompareInputs {
                application_version: version_after_write(&app, written.as_ref()),
                ..observed.inputs.clone()
            },
            synced: !observed.comparison.out_of_sync(),
            kinds: observed.kinds.clone(),
        }),
        _ => None,
    };
    ctx.remember_compare(app.name_any(), last);
    status_written?;
    let observed = match observed {
        Ok(observed) => observed,
        Err(error) => {
            publish(ctx, &app, EventReason::ComparisonError, error.to_string()).await;
            return Err(error);
        }
    };
    let gate = gate(&run, &app).await;
    let revision = observed.manifests.revision.as_deref();
    let out_of_sync = observed.comparison.out_of_sync();
    let Some(trigger) = next_sync(&app, out_of_sync, revision, gate, Timestamp::now()) else {
        return Ok(Action::requeue(ctx.resync));
    };
    if let Some(action) = hold_for_windows(ctx, &app, &trigger, &observed.admitted.projects).await?
    {
        return Ok(action);
    }
    let synced = sync(ctx, &app, &observed, trigger, &run).await;
    reporting_sync_failure(ctx, &app, synced).await
}

/// What the project's sync windows make of `trigger` (see [`window_gate`]): `None` to sync
/// now; else the sync waits (a `SyncError` condition names the window, and the Application is
/// reconciled again when it opens) or, for a manual request, fails at once naming the window.
async fn hold_for_windows(
    ctx: &ApplicationContext,
    app: &Application,
    trigger: &Trigger,
    projects: &Projects,
) -> Result<Option<Action>, ApplicationError> {
    if matches!(trigger, Trigger::Resume { .. }) {
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

/// Records the requested `operation` as a failed operation with `message` and removes the
/// request.
async fn refuse(
    ctx: &ApplicationContext,
    app: &Application,
    operation: &Operation,
    message: &str,
) -> Result<(), ApplicationError> {
    let name = app.name_any();
    let now = Timestamp::now();
    let revision = Some(operation.sync.revision.as_str()).filter(|r| !r.is_empty());
    let id = format!("{name}-{}", now.as_millisecond());
    let (mut state, _) = begin(None, revision, &id, Time(now));
    state.phase = crate::sync::OperationPhase::Failed;
    message.clone_into(&mut state.message);
    state.finished_at = Some(Time(now));
    StatusStore::new(ctx.api(), &ctx.namespace, &name)
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

/// `stepped`, with a failure reported as the `SyncError` condition.
async fn reporting_sync_failure(
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
/// changes — or ends: a sync's end is recorded, and the Application compared again at once.
async fn continue_operation(
    run: &Run,
    app: &Application,
    job: SyncJob,
    sync_run: Option<SyncRun>,
) -> Result<Action, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let plan = job.plan;
    match job.step(sync_run, app, &run.stopping).await {
        Ok(JobStep::Parked(parked, after)) => {
            ctx.runs
                .park(&app.uid().unwrap_or_default(), &name, *parked);
            Ok(Action::requeue(after))
        }
        Ok(JobStep::Stopped) => {
            tracing::info!(app = %name, "stopping during an operation; the next leader resumes it");
            Ok(Action::await_change())
        }
        Ok(JobStep::Done(state)) => {
            if plan == JobPlan::Sync {
                finish(ctx, app, &state).await?;
                report(ctx, app, ApplicationConditionType::SyncError, None).await?;
            }
            // Compare (or take the next deletion step) at once: the status shows the result.
            Ok(Action::requeue(Duration::from_millis(200)))
        }
        Err(error) => {
            if plan == JobPlan::Sync {
                publish(ctx, app, EventReason::SyncFailed, error.to_string()).await;
            }
            Err(ApplicationError::Sync { app: name, error })
        }
    }
}

/// Whether comparing the Application again would find what its last compare found (Synced)
/// and it has no sync to start: its source resolves to the same commit, and neither it nor the
/// live objects it tracks were written since. Any failure to tell means it is compared.
async fn unchanged(run: &Run, app: &Application) -> bool {
    let ctx = &run.ctx;
    let Some(last) = ctx.last_compare(&app.name_any()) else {
        return false;
    };
    let Ok(cluster) = destination(ctx, app).await else {
        return false;
    };
    let Ok(manifests) = manifests(ctx, app, &app.spec.source.target_revision).await else {
        return false;
    };
    let Ok(tracked) = cluster.tracked_by(&instance_name(app), &last.kinds).await else {
        return false;
    };
    let now = CompareInputs {
        application_version: app.resource_version(),
        revision: manifests.revision,
        tracked: tracked_fingerprint(&tracked),
    };
    if compare_needed(Some(&last), &now) {
        return false;
    }
    let gate = gate(run, app).await;
    next_sync(app, false, now.revision.as_deref(), gate, Timestamp::now()).is_none()
}

/// The Application's project admits it (see [`admit`]): it exists and permits the
/// repository and the destination.
async fn admit_application(
    ctx: &ApplicationContext,
    app: &Application,
) -> Result<Admitted, ApplicationError> {
    let projects = ctx
        .projects
        .current()
        .await
        .map_err(|error| ApplicationError::Projects {
            app: app.name_any(),
            error,
        })?;
    let cluster = ctx
        .clusters
        .identity(&app.spec.destination)
        .await
        .map_err(|error| ApplicationError::Destination {
            app: app.name_any(),
            error,
        })?;
    let admitted = Admitted { projects, cluster };
    admit(&app.spec, admitted.scope()).map_err(|refusal| ApplicationError::Project {
        app: app.name_any(),
        refusal,
    })?;
    Ok(admitted)
}

/// Resolves the destination, reads the source at its target revision and the live objects, and
/// compares them.
async fn observe(
    ctx: &ApplicationContext,
    app: &Application,
    customizations: Customizations,
    admitted: Admitted,
) -> Result<Observed, ApplicationError> {
    let name = app.name_any();
    let cluster = destination(ctx, app).await?;
    let manifests = manifests(ctx, app, &app.spec.source.target_revision).await?;
    let source = SourceOptions::of_application(app, manifests.revision.clone());
    // Generating may run helm or kustomize: off the async workers.
    let (root, namespace) = (
        manifests.root.clone(),
        app.spec.destination.namespace.clone(),
    );
    let plan = tokio::task::spawn_blocking(move || {
        SyncPlan::load(&root, &source, namespace.as_deref(), "compare")
    })
    .await
    .map_err(|error| ApplicationError::SourceTask {
        app: name.clone(),
        message: error.to_string(),
    })?
    .map_err(|error| ApplicationError::Plan {
        app: name.clone(),
        error,
    })?;
    let observe_error = |what: &str, error| ApplicationError::Observe {
        app: name.clone(),
        what: what.to_owned(),
        error,
    };
    let keys: Vec<ObjectKey> = plan
        .tasks
        .iter()
        .filter(|task| task.hook.is_none())
        .map(|task| task.key.clone())
        .collect();
    let mut live = BTreeMap::new();
    for chunk in keys.chunks(READ_CONCURRENCY) {
        let mut reading = Vec::with_capacity(chunk.len());
        for key in chunk {
            reading.push(cluster.get(key));
        }
        let reads = futures::future::join_all(reading).await;
        for (key, object) in chunk.iter().zip(reads) {
            match object {
                Ok(Some(object)) => {
                    live.insert(key.clone(), object);
                }
                Ok(None) => {}
                // A kind the server does not know yet (its CRD comes with the sync) is missing.
                Err(ClusterError::UnknownKind { .. }) => {}
                Err(error) => return Err(observe_error(&key.to_string(), error)),
            }
        }
    }
    let kinds: Vec<(String, String)> = plan
        .tasks
        .iter()
        .map(|task| (task.key.group.clone(), task.key.kind.clone()))
        .collect();
    let tracked = tracked_objects(&cluster, app, &kinds).await?;
    let inputs = CompareInputs {
        application_version: app.resource_version(),
        revision: manifests.revision.clone(),
        tracked: tracked_fingerprint(&tracked),
    };
    let tracked: Vec<LiveObject> = tracked
        .iter()
        .filter_map(|object| LiveObject::from_object(object, &customizations.health))
        .collect();
    let ignore = app
        .spec
        .ignore_differences(&customizations.ignore_differences)
        .map_err(|error| ApplicationError::Settings {
            app: name.clone(),
            error,
        })?;
    let comparison = compare(
        &plan,
        &instance_name(app),
        &live,
        &tracked,
        manifests.revision.as_deref(),
        &customizations.health,
        &ignore,
    );
    Ok(Observed {
        cluster,
        manifests,
        comparison,
        inputs,
        kinds,
        customizations,
        admitted,
    })
}

/// The cluster the Application's destination names.
async fn destination(
    ctx: &ApplicationContext,
    app: &Application,
) -> Result<Arc<KubeCluster>, ApplicationError> {
    ctx.clusters
        .for_destination(&app.spec.destination)
        .await
        .map_err(|error| ApplicationError::Destination {
            app: app.name_any(),
            error,
        })
}

/// The objects of the cluster that the Application tracks (`apiVersion`, `kind`, `metadata`,
/// from the cluster's shared watches); `kinds` (group, kind) are the kinds it deploys.
async fn tracked_objects(
    cluster: &KubeCluster,
    app: &Application,
    kinds: &[(String, String)],
) -> Result<Vec<Value>, ApplicationError> {
    cluster
        .tracked_by(&instance_name(app), kinds)
        .await
        .map_err(|error| ApplicationError::Observe {
            app: app.name_any(),
            what: "the objects carrying the tracking annotation".to_owned(),
            error,
        })
}

/// The source's manifests at `revision` (empty: the source's `targetRevision`), fetched off the
/// async workers.
async fn manifests(
    ctx: &ApplicationContext,
    app: &Application,
    revision: &str,
) -> Result<Manifests, ApplicationError> {
    let name = app.name_any();
    let (source, revision) = (app.spec.source.clone(), revision.to_owned());
    let repos = Arc::clone(&ctx.repos);
    tokio::task::spawn_blocking(move || repos.source(&source, &revision))
        .await
        .map_err(|error| ApplicationError::SourceTask {
            app: name.clone(),
            message: error.to_string(),
        })?
        .map_err(|error| ApplicationError::Source { app: name, error })
}

/// Writes sync, health, resources and conditions when they changed (or are stale); the
/// Application as written, if it was.
async fn write_status(
    ctx: &ApplicationContext,
    app: &Application,
    observed: Result<&Comparison, (ApplicationConditionType, &str)>,
) -> Result<Option<Application>, ApplicationError> {
    let now = Time(Timestamp::now());
    let patch = status_patch(app.status.as_ref(), observed, &now);
    let generation = app.metadata.generation;
    let Some(patch) = with_generation(patch, app.status.as_ref(), generation, &now) else {
        return Ok(None);
    };
    patch_status(ctx, app, "status", patch).await.map(Some)
}

async fn patch_status(
    ctx: &ApplicationContext,
    app: &Application,
    what: &'static str,
    patch: Value,
) -> Result<Application, ApplicationError> {
    ctx.api()
        .patch_status(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .map_err(|error| ApplicationError::Write {
            app: app.name_any(),
            what,
            error: error.into(),
        })
}

/// The Applications of `store` by (sync status, health status).
fn application_counts(store: &Store<Application>) -> BTreeMap<(String, String), u64> {
    let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for app in store.state() {
        let status = app.status.as_ref();
        let sync = status
            .and_then(|s| s.sync.as_ref())
            .map_or("Unknown", |s| s.status.as_str());
        let health = status
            .and_then(|s| s.health.as_ref())
            .map_or("Unknown", |h| h.status.as_str());
        *counts
            .entry((sync.to_owned(), health.to_owned()))
            .or_default() += 1;
    }
    counts
}

/// Whether the Application's owning ApplicationSet (if any) rolls it out with RollingSync, from
/// the watched ApplicationSets (once they are listed: a stopping controller starts no automated
/// sync).
async fn gate(run: &Run, app: &Application) -> SyncGate {
    let owner = app
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "ApplicationSet");
    let Some(owner) = owner else {
        return sync_gate(None);
    };
    if run.appsets.wait_until_ready().await.is_err() {
        return SyncGate::RolloutControlled;
    }
    let appset = run
        .appsets
        .get(&ObjectRef::new(&owner.name).within(&run.ctx.namespace))
        .filter(|appset| appset.uid().as_deref() == Some(owner.uid.as_str()));
    sync_gate(appset.as_deref())
}

/// Starts (or resumes) the sync `trigger` asks for and steps it (see [`continue_operation`]).
async fn sync(
    ctx: &ApplicationContext,
    app: &Application,
    observed: &Observed,
    trigger: Trigger,
    run: &Run,
) -> Result<Action, ApplicationError> {
    let name = app.name_any();
    let automated = InitiatedBy {
        username: String::new(),
        automated: true,
    };
    let resumed = app.status.as_ref().and_then(|s| s.operation.as_ref());
    let (revision, operation, initiated_by, requested) = match &trigger {
        Trigger::Resume { revision } => (
            revision.clone().unwrap_or_default(),
            resumed.map(|op| &op.sync),
            resumed.map_or(automated, |op| op.initiated_by.clone()),
            None,
        ),
        Trigger::Requested(operation) => (
            operation.sync.revision.clone(),
            Some(&operation.sync),
            operation.initiated_by.clone(),
            Some(operation),
        ),
        Trigger::Automated => (
            observed.manifests.revision.clone().unwrap_or_default(),
            None,
            automated,
            None,
        ),
    };
    let SyncSettings {
        execute: settings,
        source,
        ignored_options,
    } = settings_of(
        ctx,
        app,
        operation,
        (&observed.customizations, &observed.admitted),
    )
    .map_err(|error| ApplicationError::Settings {
        app: name.clone(),
        error,
    })?;
    if !ignored_options.is_empty() {
        tracing::warn!(app = %name, ?ignored_options, "sync options without effect");
    }
    let prune = settings.prune;
    let manifests =
        if revision.is_empty() || Some(&revision) == observed.manifests.revision.as_ref() {
            observed.manifests.clone()
        } else {
            manifests(ctx, app, &revision).await?
        };
    let store =
        StatusStore::new(ctx.api(), &ctx.namespace, &name).recording_history(initiated_by.clone());
    if !matches!(trigger, Trigger::Resume { .. }) {
        let running = Operation {
            sync: SyncOperation {
                revision: manifests.revision.clone().unwrap_or_default(),
                prune,
                sync_options: requested
                    .map(|op| op.sync.sync_options.clone())
                    .unwrap_or_default(),
                allow_empty: settings.allow_empty,
            },
            initiated_by: initiated_by.clone(),
        };
        let patch = json!({"status": {"operation": operation_patch(&running)}});
        patch_status(ctx, app, "status.operation", patch).await?;
    }
    let now = Timestamp::now();
    if let Some(operation) = requested {
        let id = format!("{name}-{}", now.as_millisecond());
        store_new_operation(&store, &name, manifests.revision.as_deref(), &id).await?;
        clear_operation(ctx, &name, operation).await?;
    }
    let (reason, note) = match &trigger {
        Trigger::Resume { .. } => (
            EventReason::SyncResumed,
            "resuming the interrupted operation".to_owned(),
        ),
        _ => (
            EventReason::SyncStarted,
            format!(
                "sync to {} started by {}",
                manifests
                    .revision
                    .as_deref()
                    .unwrap_or("the local directory"),
                initiator(&initiated_by)
            ),
        ),
    };
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
fn settings_of(
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
async fn store_new_operation(
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
fn job(
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
        options: SourceOptions {
            revision: manifests.revision.clone(),
            ..source
        },
        namespace: settings.destination_namespace.clone(),
        revision: manifests.revision.clone(),
        settings,
    }
}

/// Records the end of an operation (its state and history entry were stored together by the
/// [`StatusStore`]): metrics, Event, and removes a terminate request that has been served.
async fn finish(
    ctx: &ApplicationContext,
    app: &Application,
    state: &OperationState,
) -> Result<(), ApplicationError> {
    let phase = format!("{:?}", state.phase);
    ctx.metrics.synced(&phase);
    let reason = if state.phase == crate::sync::OperationPhase::Succeeded {
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
    let current =
        ctx.api()
            .get(&app.name_any())
            .await
            .map_err(|error| ApplicationError::Write {
                app: app.name_any(),
                what: "(reading) the terminate annotation",
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

/// `rollout/stack`, `alice`, or `automated sync`.
fn initiator(initiated_by: &InitiatedBy) -> &str {
    if initiated_by.username.is_empty() {
        "automated sync"
    } else {
        &initiated_by.username
    }
}

/// Removes `spec.operation` if it is still `operation` (a newer request is kept), with the
/// read `resourceVersion` so a concurrent write is never overwritten.
async fn clear_operation(
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

/// Deletes the resources of a deleted Application one wave at a time (highest first), runs its
/// PostDelete hooks, then removes its resources finalizer. A failed PostDelete operation is
/// reported (condition `DeletionError`, Event) and the finalizer stays.
async fn delete_resources(run: &Run, app: &Application) -> Result<Action, ApplicationError> {
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
    match deleted {
        Ok(Deletion::Continue(action)) => Ok(action),
        Ok(Deletion::Finished(current)) => {
            remove_finalizers(ctx, &current).await?;
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
        Ok(Deletion::Held(message)) => {
            let reported = report(
                ctx,
                app,
                ApplicationConditionType::DeletionError,
                Some(&message),
            )
            .await?;
            if reported {
                publish(ctx, app, EventReason::DeletionError, message).await;
            }
            Ok(Action::requeue(ctx.resync))
        }
        Err(error) => {
            let message = error.to_string();
            publish(ctx, app, EventReason::DeletionError, message.clone()).await;
            report(
                ctx,
                app,
                ApplicationConditionType::DeletionError,
                Some(&message),
            )
            .await?;
            Err(error)
        }
    }
}

/// Where a deletion stands after one step.
enum Deletion {
    /// Come back with this action.
    Continue(Action),
    /// It waits for someone (a confirmation, or a fix of failed PostDelete hooks): this says
    /// why, and the finalizer stays.
    Held(String),
    /// Everything is done: remove the finalizer of the Application as read now.
    Finished(Box<Application>),
}

/// One deletion step, decided from the Application as the API server has it now (not the
/// watch cache, which may not show the PostDelete operation just recorded yet).
async fn delete_step(run: &Run, app: &Application) -> Result<Deletion, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let current = ctx
        .api()
        .get_opt(&name)
        .await
        .map_err(|error| ApplicationError::Write {
            app: name.clone(),
            what: "(reading) the deleted Application",
            error: error.into(),
        })?;
    let Some(app) = current else {
        return Ok(Deletion::Continue(Action::await_change()));
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
    let state = DeletionState {
        name: &name,
        app: &instance,
        objects: &tracked,
        approved,
        operation: app.status.as_ref().and_then(|s| s.operation_state.as_ref()),
        has_post_delete_hooks: app
            .status
            .as_ref()
            .is_some_and(|s| !s.post_delete_hooks.is_empty()),
    };
    let step = deletion_step(&state);
    let held = matches!(
        step,
        DeletionStep::AwaitConfirmation(_) | DeletionStep::PostDeleteFailed(_)
    );
    if !held && has_condition(&app, ApplicationConditionType::DeletionError) {
        report(ctx, &app, ApplicationConditionType::DeletionError, None).await?;
    }
    match step {
        DeletionStep::Done => Ok(Deletion::Finished(Box::new(app))),
        DeletionStep::Wait => Ok(Deletion::Continue(Action::requeue(DELETION_POLL))),
        DeletionStep::AwaitConfirmation(keys) => {
            let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
            Ok(Deletion::Held(format!(
                "waiting for deletion confirmation of {} (Delete=confirm): flotilla app confirm-prune {name}",
                keys.join(", ")
            )))
        }
        DeletionStep::PostDeleteFailed(message) => Ok(Deletion::Held(message)),
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
        DeletionStep::RunPostDelete => run_post_delete(run, &app, cluster).await,
    }
}

/// Whether `app`'s status shows a condition of `type_`.
fn has_condition(app: &Application, type_: ApplicationConditionType) -> bool {
    app.status
        .as_ref()
        .is_some_and(|status| status.conditions.iter().any(|c| c.type_ == type_))
}

/// Runs (or resumes) the PostDelete hooks of a deleted Application whose resources are gone, as
/// an operation recorded in `status.operationState` under [`post_delete_id`], from the source
/// at the revision it last synced; when the source has none there (any more), the deletion is
/// finished.
async fn run_post_delete(
    run: &Run,
    app: &Application,
    cluster: Arc<KubeCluster>,
) -> Result<Deletion, ApplicationError> {
    let ctx = &run.ctx;
    let name = app.name_any();
    let id = post_delete_id(&name);
    let status = app.status.as_ref();
    let recorded = status
        .and_then(|s| s.operation_state.as_ref())
        .filter(|op| op.operation_id == id);
    let revision = recorded
        .and_then(|op| op.revision.clone())
        .or_else(|| {
            status
                .and_then(|s| s.sync.as_ref())
                .map(|sync| sync.revision.clone())
                .filter(|r| !r.is_empty())
        })
        .unwrap_or_else(|| app.spec.source.target_revision.clone());
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
    let source = SourceOptions {
        revision: manifests.revision.clone(),
        ..source
    };
    let plan = SyncPlan::load(
        &manifests.root,
        &source,
        settings.destination_namespace.as_deref(),
        &id,
    )
    .map_err(|error| ApplicationError::Plan {
        app: name.clone(),
        error,
    })?;
    if plan.post_delete.is_empty() {
        return Ok(Deletion::Finished(Box::new(app.clone())));
    }
    // Not an entry of the Application's history: its deletion is not a deployment.
    let store = StatusStore::new(ctx.api(), &ctx.namespace, &name);
    if recorded.is_none() {
        store_new_operation(&store, &name, manifests.revision.as_deref(), &id).await?;
        let hooks: Vec<String> = plan.post_delete.iter().map(|t| t.key.to_string()).collect();
        let note = format!("running PostDelete hooks: {}", hooks.join(", "));
        publish(ctx, app, EventReason::SyncStarted, note).await;
    }
    let job = job(
        app,
        (JobPlan::PostDelete, store),
        cluster,
        &manifests,
        source,
        settings,
    );
    // The outcome is in status.operationState, which the next deletion step reads.
    continue_operation(run, app, job, None)
        .await
        .map(Deletion::Continue)
}

/// Removes the resources finalizers, keeping any other.
async fn remove_finalizers(
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

/// Sets (or, with None, clears) a condition on the Application as it is now; true when that
/// changed it.
async fn report(
    ctx: &ApplicationContext,
    app: &Application,
    type_: ApplicationConditionType,
    message: Option<&str>,
) -> Result<bool, ApplicationError> {
    let current =
        ctx.api()
            .get_opt(&app.name_any())
            .await
            .map_err(|error| ApplicationError::Write {
                app: app.name_any(),
                what: "(reading) status.conditions",
                error: error.into(),
            })?;
    let Some(current) = current else {
        return Ok(false);
    };
    let now = Time(Timestamp::now());
    match condition_patch(current.status.as_ref(), type_, message, &now) {
        Some(patch) => patch_status(ctx, app, "status.conditions", patch)
            .await
            .map(|_| true),
        None => Ok(false),
    }
}

async fn publish(ctx: &ApplicationContext, app: &Application, reason: EventReason, note: String) {
    ctx.events.publish(&app.object_ref(&()), reason, note).await;
}

/// Requeues a failed Application: with backoff, unless only a person can fix the failure — an
/// invalid spec waits for the Application to change, manifests that do not build for the next
/// resync (a new commit may fix them) — after the failure was written to status.
fn error_policy(app: Arc<Application>, error: &ApplicationError, run: Arc<Run>) -> Action {
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
    let failures = run
        .ctx
        .failures
        .lock()
        .map(|mut failures| {
            let count = failures.entry(app.name_any()).or_default();
            *count = count.saturating_add(1);
            *count
        })
        .unwrap_or(1);
    run.ctx.metrics.application_reconciled(Some(error.reason()));
    tracing::warn!(app = %app.name_any(), reason = error.reason(), failures, "{error}");
    Action::requeue(retry_delay(failures))
}

/// The Applications to reconcile now because an object their parked operation waits on
/// changed (announced by the clusters' tracked-object watches); announcements a slow reader
/// missed are covered by the operations' fallback requeue.
fn wake_on_waited_objects(
    ctx: &Arc<ApplicationContext>,
) -> impl futures::Stream<Item = ObjectRef<Application>> + Send + 'static {
    let touched = ctx.clusters.touched();
    let ctx = Arc::clone(ctx);
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
        let woken = ctx
            .runs
            .waiting_on(&id)
            .map(|name| ObjectRef::new(&name).within(&ctx.namespace));
        futures::future::ready(woken)
    })
}

/// Runs the Application controller in `ctx.namespace` until `stop` completes: running syncs are
/// then dropped (their operation stays Running, for the next leader to resume) and running
/// reconciles finish.
pub async fn run(
    ctx: Arc<ApplicationContext>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let applications = ctx.api();
    let controller = Controller::new(applications, watcher::Config::default())
        .with_config(controller::Config::default().concurrency(RECONCILE_CONCURRENCY));
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
    let appset_api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let watch_appsets = reflector(
        writer,
        watcher::watcher(appset_api, watcher::Config::default()),
    )
    .default_backoff()
    .for_each(|_| futures::future::ready(()));
    let store = controller.store();
    ctx.metrics
        .count_applications_with(Box::new(move || application_counts(&store)));
    // Operations parked by an earlier term may have moved on under another leader: resume
    // them from status.
    ctx.runs.clear();
    let wake = wake_on_waited_objects(&ctx);
    let controller = controller.reconcile_on(wake);
    let run = Arc::new(Run {
        ctx: Arc::clone(&ctx),
        appsets,
        stopping,
    });
    let ok = Arc::clone(&ctx);
    let reconciling = controller
        .graceful_shutdown_on(stop)
        .run(timed_reconcile, error_policy, run)
        .for_each(|result| {
            let ctx = Arc::clone(&ok);
            async move {
                match result {
                    Ok((object, _)) => {
                        ctx.failures.lock().map(|mut f| f.remove(&object.name)).ok();
                        ctx.metrics.application_reconciled(None);
                    }
                    Err(error) => tracing::debug!("controller: {error}"),
                }
            }
        });
    // The ApplicationSet watch runs as long as the reconciles do.
    futures::pin_mut!(reconciling, watch_appsets);
    futures::future::select(reconciling, watch_appsets).await;
}

//! One sync operation run by the controller: the engine's [`SyncRun`] against a destination
//! cluster, storing its state in the Application's status, stepped until it has to wait (then
//! parked in [`super::running_syncs::RunningSyncs`] and requeued, or woken by a change of one
//! of the Application's objects) or ends. It stops (without terminating the operation, which stays
//! Running for the next leader to resume) when the controller stops, and terminates the
//! operation when `flotilla app terminate` asks for it, or when the Application of a sync is
//! being deleted (its deletion then need not wait for the sync, e.g. for a pruning confirmation
//! that will never come). The Application's `argocd.argoproj.io/deletion-approved` annotation
//! (`flotilla app confirm-prune`) confirms the pruning of `Prune=confirm` objects, which the
//! operation waits for.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::source::{SourceOptions, Toolchain, generate};
use crate::sync::execute::cluster_api::ClusterApi;
use crate::sync::execute::{
    Advance, Context, ExecuteError, ExecuteSettings, PruneConfirmation, SyncEvent, SyncRun,
};
use flotilla_core::api::Application;
use flotilla_core::api::sync_phase::SyncPhase;
use flotilla_core::manifest::{Resource, ValidationError, ValidationErrors};
use flotilla_core::sync::{OperationState, SyncPlan};

use super::running_syncs::Parked;
use super::status_store::{StatusStore, terminates};

/// The longest a waiting operation is left alone when no change of what it waits on arrives
/// (a kind not watched yet, a pod problem, a lagging watch).
const WAKE_FALLBACK: Duration = Duration::from_secs(2);

/// Which tasks of the source an operation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobPlan {
    /// A sync: PreSync, Sync, PostSync (SyncFail on failure).
    Sync,
    /// A deleted Application's PreDelete or PostDelete hooks (see
    /// [`SyncPlan::deletion_hook_plan`]).
    DeletionHooks(SyncPhase),
}

/// Everything one operation needs, owned.
pub struct SyncJob {
    pub plan: JobPlan,
    pub cluster: Arc<KubeCluster>,
    pub store: StatusStore,
    /// The name the Application's objects are tracked under (see
    /// [`flotilla_core::controller::application::instance`]).
    pub app: String,
    /// The manifest directory at `revision`.
    pub root: PathBuf,
    /// How its manifests are generated.
    pub options: SourceOptions,
    /// `destination.namespace`.
    pub namespace: Option<String>,
    pub revision: Option<String>,
    pub settings: ExecuteSettings,
    /// What generates the manifests.
    pub toolchain: Arc<Toolchain>,
    /// The manifests generated from `root` with `options`, once the first step has generated
    /// them (off the async workers: helm or kustomize may run).
    pub generated: Option<Arc<Generated>>,
}

/// A source's resources and errors, as [`generate`] makes them.
type Generated = (Vec<Resource>, Vec<ValidationError>);

/// Where a job stands after a reconcile stepped it.
pub enum JobStep {
    /// It waits: park it, and step it again after this long at the latest.
    Parked(Box<Parked>, Duration),
    /// The operation ended.
    Done(OperationState),
    /// The controller is stopping; the operation stays Running, to be resumed.
    Stopped,
}

impl SyncJob {
    /// Steps the operation — `run`, or the one stored in status (resumed, or started when there
    /// is none) — until it has to wait or ends. `application` is the Application as the watch
    /// has it now (terminate requests, deletion, pruning confirmation).
    ///
    /// # Errors
    /// See [`SyncRun::advance`].
    pub async fn step(
        mut self,
        run: Option<SyncRun>,
        application: &Application,
        stopping: &watch::Receiver<bool>,
    ) -> Result<JobStep, ExecuteError> {
        let generated = match &self.generated {
            Some(generated) => Arc::clone(generated),
            None => {
                let (root, options) = (self.root.clone(), self.options.clone());
                let toolchain = Arc::clone(&self.toolchain);
                let generated =
                    tokio::task::spawn_blocking(move || generate(&toolchain, &root, &options))
                        .await
                        .map_err(ExecuteError::GenerateTask)?;
                Arc::clone(self.generated.insert(Arc::new(generated)))
            }
        };
        let plan_source = |operation_id: &str| -> Result<SyncPlan, ValidationErrors> {
            let plan = SyncPlan::from_loaded(
                (*generated).clone(),
                self.namespace.as_deref(),
                operation_id,
            )?;
            Ok(match self.plan {
                JobPlan::Sync => plan,
                JobPlan::DeletionHooks(phase) => plan.deletion_hook_plan(phase),
            })
        };
        let (_approve, approved) = watch::channel(application.deletion_approved());
        let deleted =
            self.plan == JobPlan::Sync && application.metadata.deletion_timestamp.is_some();
        let cancelled = terminates(application) || deleted;
        let app = self.app.clone();
        let log = move |event: &SyncEvent| tracing::debug!(app = %app, "{event:?}");
        let context = Context {
            cluster: self.cluster.as_ref(),
            store: &self.store,
            app: &self.app,
            settings: &self.settings,
            events: &log,
            confirmation: PruneConfirmation::Watched(&approved),
        };
        let mut run = match run {
            Some(run) => run,
            None => {
                let base_id = format!("{}-{}", self.app, self.cluster.now().as_millisecond());
                SyncRun::begin(context, &plan_source, self.revision.as_deref(), &base_id).await?
            }
        };
        loop {
            if *stopping.borrow() {
                return Ok(JobStep::Stopped);
            }
            let advance = run.advance(context, &plan_source, cancelled).await?;
            let limit = run.attempt(context).wait_limit(&advance);
            let after = match advance {
                Advance::Continue => continue,
                Advance::Done(attempt) => return Ok(JobStep::Done(attempt.state)),
                Advance::Wait(_) => limit.min(WAKE_FALLBACK),
                Advance::Pause(_) | Advance::AwaitConfirmation => limit,
            };
            let parked = Parked { job: self, run };
            return Ok(JobStep::Parked(Box::new(parked), after));
        }
    }
}

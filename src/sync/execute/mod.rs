//! The executor: carries out what [`flotilla_core::sync::plan_step`] decides against a
//! [`ClusterApi`], records the results, stores the operation after every step through an
//! [`OperationStore`], resumes an interrupted operation, retries failed ones per
//! `syncPolicy.retry`, and stops cleanly on a terminate request. No sync decisions are made here.

mod attempt;
pub mod cluster_api;
mod confirmation;
mod dry_run;
mod edited;
mod event;
mod settings;
mod store;
mod sync_run;
mod write;

pub use confirmation::{PruneConfirmation, approved_since};
pub use event::SyncEvent;
pub use settings::{
    DEFAULT_WAVE_DELAY, DEFAULT_WAVE_DELAY_TEXT, ExecuteSettings, SYNC_TIMEOUT_ANNOTATION,
};
pub use store::{OperationStore, StoreError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tokio::sync::watch;

use crate::sync::execute::cluster_api::{ClusterApi, ClusterError};
use flotilla_core::manifest::ValidationErrors;
use flotilla_core::sync::{
    LiveObject, OperationPhase, OperationState, SyncPlan, begin, plan_prune, refuse_empty_target,
};

pub use attempt::{Advance, Context};
pub use sync_run::SyncRun;

/// The operation could not be carried out at all (as opposed to an operation that failed,
/// which is an [`OperationState`] with phase Failed).
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    /// Storing or loading the operation state failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The source no longer builds a plan.
    #[error(transparent)]
    Plan(#[from] ValidationErrors),
    /// Generating the manifests (which may run helm or kustomize, off the async workers)
    /// stopped before it finished.
    #[error("generating the manifests: {0}")]
    GenerateTask(#[source] tokio::task::JoinError),
    /// The cluster could not be read before starting.
    #[error("cannot read {what}: {error}")]
    Observe {
        /// What was being read.
        what: String,
        /// Why it failed.
        #[source]
        error: ClusterError,
    },
}

/// What one sync runs: the Application, the commit, a dry run or not, who confirms pruning.
#[derive(Debug, Clone, Copy)]
pub struct SyncParams<'a> {
    /// The Application name (tracking ids, the operation store).
    pub app: &'a str,
    /// The commit synced, when the source is a repository.
    pub revision: Option<&'a str>,
    /// Server-side dry run: nothing is written.
    pub dry_run: bool,
    /// Who confirms the pruning of `Prune=confirm` objects.
    pub prune_confirmation: PruneConfirmation<'a>,
}

/// Builds the plan for an operation id (generated hook names depend on it).
pub type PlanSource<'a> = &'a (dyn Fn(&str) -> Result<SyncPlan, ValidationErrors> + Sync);

/// Runs a sync operation to its end, stepping a [`SyncRun`] and waiting where it says to wait
/// (`flotilla sync`, `flotilla simulate`; the controller steps it across reconciles): resumes a
/// stored, unfinished operation of the same revision, otherwise starts a new one; retries
/// failures (not timeouts) per the settings. With [`PruneConfirmation::Absent`], an operation
/// that needs a pruning confirmation returns Running, its message naming the objects.
///
/// # Errors
/// The state cannot be stored, the plan cannot be built, or the cluster cannot be read before
/// the first step.
pub async fn run_sync<C: ClusterApi, S: OperationStore>(
    cluster: &C,
    store: &S,
    source: PlanSource<'_>,
    request: &SyncParams<'_>,
    settings: &ExecuteSettings,
    mut cancel: watch::Receiver<bool>,
    events: &(dyn Fn(&SyncEvent) + Sync),
) -> Result<OperationState, ExecuteError> {
    let base_id = format!("{}-{}", request.app, cluster.now().as_millisecond());
    let now = || Time(cluster.now());
    if request.dry_run {
        let plan = source(&base_id)?;
        let prune =
            if settings.prune {
                let tracked = cluster.list_tracked(request.app).await.map_err(|error| {
                    ExecuteError::Observe {
                        what: "objects carrying the tracking annotation".to_owned(),
                        error,
                    }
                })?;
                let tracked: Vec<LiveObject> = tracked
                    .iter()
                    .filter_map(|object| LiveObject::from_object(object, &settings.health))
                    .collect();
                plan_prune(&plan, &tracked, request.app, &settings.sync_options).tasks
            } else {
                Vec::new()
            };
        let (mut state, _) = begin(None, request.revision, &base_id, now());
        if let Some(refusal) = refuse_empty_target(&plan, &prune, settings.allow_empty) {
            (state.phase, state.message) = (OperationPhase::Failed, format!("dry run: {refusal}"));
            state.finished_at = Some(now());
            return Ok(state);
        }
        return Ok(dry_run::dry_run(cluster, &plan, &prune, state, settings).await);
    }
    let context = Context {
        cluster,
        store,
        app: request.app,
        settings,
        events,
        confirmation: request.prune_confirmation,
    };
    let mut run = SyncRun::begin(context, source, request.revision, &base_id).await?;
    loop {
        let cancelled = *cancel.borrow();
        match run.advance(context, source, cancelled).await? {
            Advance::Continue => {}
            Advance::Wait(waiting) => {
                run.attempt(context)
                    .wait_for_change(&waiting, &mut cancel)
                    .await;
            }
            Advance::Pause(duration) => run.attempt(context).pause(duration, &mut cancel).await,
            Advance::AwaitConfirmation => {
                let PruneConfirmation::Watched(approved) = request.prune_confirmation else {
                    return Ok(run.into_state());
                };
                let mut approved = approved.clone();
                approved.borrow_and_update();
                let operation = run.attempt(context);
                let left = operation.wait_limit(&Advance::AwaitConfirmation);
                tokio::select! {
                    Ok(()) = approved.changed() => {}
                    () = operation.pause(left, &mut cancel) => {}
                }
            }
            Advance::Done(attempt) => return Ok(attempt.state),
        }
    }
}

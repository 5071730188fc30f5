//! One sync operation run by the controller: the engine ([`run_sync`]) against a destination
//! cluster, storing its state in the Application's status. The engine's future borrows across
//! its steps in ways that are not `Send` for every lifetime, so it is driven on a blocking
//! thread with the runtime's handle; it stops (without terminating the operation, which stays
//! Running for the next leader to resume) as soon as the controller stops, and terminates the
//! operation when `flotilla app terminate` asks for it, or when the Application of a sync is
//! being deleted (its deletion then need not wait for the sync, e.g. for a pruning confirmation
//! that will never come). The Application's `argocd.argoproj.io/deletion-approved` annotation
//! (`flotilla app confirm-prune`) confirms the pruning of `Prune=confirm` objects, which the
//! operation waits for.

use std::path::PathBuf;
use std::sync::Arc;

use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::watch;

use crate::api::Application;

use crate::cluster::kube_cluster::KubeCluster;
use crate::manifest::ValidationErrors;
use crate::source::SourceOptions;
use crate::sync::execute::{
    ExecuteError, ExecuteSettings, PruneConfirmation, SyncEvent, SyncRequest, run_sync,
};
use crate::sync::{OperationState, SyncPlan};

use super::status_store::{StatusStore, terminates};

/// Which tasks of the source an operation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobPlan {
    /// A sync: PreSync, Sync, PostSync (SyncFail on failure).
    Sync,
    /// A deleted Application's PostDelete hooks (see [`SyncPlan::post_delete_plan`]).
    PostDelete,
}

/// Everything one operation needs, owned.
pub struct SyncJob {
    pub plan: JobPlan,
    pub cluster: Arc<KubeCluster>,
    pub store: StatusStore,
    /// The name the Application's objects are tracked under (see
    /// [`super::application::instance`]).
    pub app: String,
    /// The manifest directory at `revision`.
    pub root: PathBuf,
    /// How its manifests are generated.
    pub options: SourceOptions,
    /// `destination.namespace`.
    pub namespace: Option<String>,
    pub revision: Option<String>,
    pub settings: ExecuteSettings,
    /// Becomes true when the controller stops.
    pub stopping: watch::Receiver<bool>,
    /// The controller's watch cache of Applications, read for terminate requests and
    /// pruning confirmations.
    pub watched: Store<Application>,
    /// The Application being synced.
    pub application: ObjectRef<Application>,
}

impl SyncJob {
    /// Runs the operation to its end, or None when the controller stopped first.
    ///
    /// # Errors
    /// See [`run_sync`]; a panicking or cancelled thread is reported as a store error.
    pub async fn run(self) -> Option<Result<OperationState, ExecuteError>> {
        let handle = tokio::runtime::Handle::current();
        let app = self.app.clone();
        tokio::task::spawn_blocking(move || handle.block_on(self.drive()))
            .await
            .unwrap_or_else(|error| {
                Some(Err(ExecuteError::Store(crate::sync::execute::StoreError {
                    location: format!("the sync of Application {app}"),
                    message: error.to_string(),
                })))
            })
    }

    async fn drive(mut self) -> Option<Result<OperationState, ExecuteError>> {
        let plan_source = |operation_id: &str| -> Result<SyncPlan, ValidationErrors> {
            let plan = SyncPlan::load(
                &self.root,
                &self.options,
                self.namespace.as_deref(),
                operation_id,
            )?;
            Ok(match self.plan {
                JobPlan::Sync => plan,
                JobPlan::PostDelete => plan.post_delete_plan(),
            })
        };
        let current = self.watched.get(&self.application);
        let (approve, approved) = watch::channel(current.and_then(|app| app.deletion_approved()));
        let request = SyncRequest {
            app: &self.app,
            revision: self.revision.as_deref(),
            dry_run: false,
            prune_confirmation: PruneConfirmation::Watched(&approved),
        };
        let (terminate, cancel) = watch::channel(false);
        let app = self.app.clone();
        let log = move |event: &SyncEvent| tracing::debug!(app = %app, "{event:?}");
        let sync = run_sync(
            self.cluster.as_ref(),
            &self.store,
            &plan_source,
            &request,
            &self.settings,
            cancel,
            &log,
        );
        tokio::select! {
            state = sync => Some(state),
            _ = self.stopping.wait_for(|stopping| *stopping) => None,
            () = watch_requests(self.plan, &self.watched, &self.application, &terminate, &approve) => None,
        }
    }
}

/// Checks the watch cache for `flotilla app terminate` or the deletion of the Application of a
/// sync, telling the engine to stop (it then ends the operation Terminated), and for pruning
/// confirmations; never completes.
async fn watch_requests(
    plan: JobPlan,
    watched: &Store<Application>,
    application: &ObjectRef<Application>,
    terminate: &watch::Sender<bool>,
    approve: &watch::Sender<Option<k8s_openapi::jiff::Timestamp>>,
) {
    loop {
        tokio::time::sleep(REQUEST_POLL).await;
        let Some(app) = watched.get(application) else {
            continue;
        };
        approve.send_if_modified(|approved| {
            let now = app.deletion_approved();
            let changed = *approved != now;
            *approved = now;
            changed
        });
        let deleted = plan == JobPlan::Sync && app.metadata.deletion_timestamp.is_some();
        if terminates(&app) || deleted {
            terminate.send_if_modified(|asked| !std::mem::replace(asked, true));
        }
    }
}

/// How often a running sync checks for a terminate request or a pruning confirmation.
const REQUEST_POLL: std::time::Duration = std::time::Duration::from_secs(1);

//! The sync operations the controller is running, kept between reconciles: each Application's
//! [`SyncRun`] (its current attempt's progress) with the job it belongs to. A reconcile takes an
//! Application's run, steps it until it has to wait, and parks it again; nothing here waits, so
//! a long sync holds no reconcile slot (a change of one of the Application's objects, or the
//! wait's limit, reconciles it again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::cluster::api_server::kube_cluster::KubeCluster;
use flotilla_core::sync::SyncPlan;

use crate::sync::execute::SyncRun;

use super::sync_job::{JobPlan, SyncJob};

/// A run between two steps.
pub struct Parked {
    pub job: SyncJob,
    pub run: SyncRun,
}

/// The parked runs, by Application UID.
#[derive(Default)]
pub struct RunningSyncs {
    parked: Mutex<HashMap<String, Parked>>,
}

impl RunningSyncs {
    /// Takes the run of the Application with `uid`, if one is parked.
    pub fn take(&self, uid: &str) -> Option<Parked> {
        self.lock().remove(uid)
    }

    /// Parks the run of the Application with `uid` until its next step.
    pub fn park(&self, uid: &str, parked: Parked) {
        self.lock().insert(uid.to_owned(), parked);
    }

    /// What the parked sync (not a deleted Application's deletion hooks) of the Application
    /// with `uid` syncs, if one is parked: its plan, revision and destination.
    #[must_use]
    pub fn syncing(&self, uid: &str) -> Option<(SyncPlan, Option<String>, Arc<KubeCluster>)> {
        self.lock()
            .get(uid)
            .filter(|parked| parked.job.plan == JobPlan::Sync)
            .map(|parked| {
                let job = &parked.job;
                (
                    parked.run.plan().clone(),
                    job.revision.clone(),
                    Arc::clone(&job.cluster),
                )
            })
    }

    /// Drops every parked run (their operations stay Running in status, to be resumed).
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

//! The sync operations the controller is running, kept between reconciles: each Application's
//! [`SyncRun`] (its current attempt's progress) with the job it belongs to and the objects its
//! last step waits on. A reconcile takes an Application's run, steps it until it has to wait,
//! and parks it again; nothing here waits, so a long sync holds no reconcile slot. A change of
//! an object a parked run waits on names the Application to wake ([`RunningSyncs::waiting_on`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::sync::execute::SyncRun;

use super::sync_job::SyncJob;

/// A run between two steps.
pub struct Parked {
    pub job: SyncJob,
    pub run: SyncRun,
    /// The tracking ids of the objects its last step waits on.
    pub waiting_on: Vec<String>,
}

/// The parked runs, by Application UID (with the Application's name, to wake it).
#[derive(Default)]
pub struct RunningSyncs {
    parked: Mutex<HashMap<String, (String, Parked)>>,
}

impl RunningSyncs {
    /// Takes the run of the Application with `uid`, if one is parked.
    pub fn take(&self, uid: &str) -> Option<Parked> {
        self.lock().remove(uid).map(|(_, parked)| parked)
    }

    /// Parks the run of Application `name` (`uid`) until its next step.
    pub fn park(&self, uid: &str, name: &str, parked: Parked) {
        self.lock()
            .insert(uid.to_owned(), (name.to_owned(), parked));
    }

    /// Drops every parked run (their operations stay Running in status, to be resumed).
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The name of the Application whose parked run waits on the object with `tracking_id`.
    #[must_use]
    pub fn waiting_on(&self, tracking_id: &str) -> Option<String> {
        self.lock()
            .values()
            .find(|(_, parked)| parked.waiting_on.iter().any(|id| id == tracking_id))
            .map(|(name, _)| name.clone())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, (String, Parked)>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

//! What the rollout step function reads: the clock, the strategy, each generated Application as
//! observed in this reconcile, and the rollout status written by the previous pass. The same
//! shape is the offline state file (`flotilla rollout explain --state`).

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::analysis::AnalysisObservation;
use super::external::ExternalApplicationSet;
use crate::api::application::ApplicationDestination;
use crate::api::application_set::RolloutStrategy;
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, RolloutRollback, RolloutStepStatus, SyncStatusCode,
};
use crate::api::operation_state::OperationPhase;
use crate::health::HealthStatus;
use crate::project::windows::WindowBlock;

/// Everything one rollout pass depends on. No clock and no client: `now` is an input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutInput {
    pub now: Timestamp,
    /// The ApplicationSet's name (it names the steps' analysis Jobs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub application_set: String,
    pub strategy: RolloutStrategy,
    #[serde(default)]
    pub applications: Vec<ApplicationState>,
    /// `status.applicationStatus` as the previous pass left it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prior_application_status: Vec<ApplicationSetApplicationStatus>,
    /// `status.rolloutSteps` as the previous pass left it (bakes, failures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prior_step_status: Vec<RolloutStepStatus>,
    /// The ApplicationSet's `flotilla.dev/promote` annotation: the step someone approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote: Option<String>,
    /// `status.rolloutRollback` as the previous pass left it (`onFailure: rollback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_rollback: Option<RolloutRollback>,
    /// What the controller saw of the analyses in progress ([`super::analysis::probes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analysis: Vec<AnalysisObservation>,
    /// The ApplicationSet's namespace (where the ApplicationSets its steps wait for are, unless
    /// a `dependsOn` entry names another).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// What the controller read of the other ApplicationSets the steps wait for
    /// ([`super::external`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external: Vec<ExternalApplicationSet>,
}

impl RolloutInput {
    /// The earliest instant a window that blocks one of the Applications opens: when a pass
    /// should run again.
    #[must_use]
    pub fn next_window_opening(&self) -> Option<Timestamp> {
        self.applications
            .iter()
            .filter_map(|app| app.sync_blocked_by.as_ref()?.opens_at)
            .min()
    }
}

/// One generated Application as observed now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationState {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// False while the Application is generated but not created yet.
    #[serde(default = "exists_by_default", skip_serializing_if = "is_true")]
    pub exists: bool,
    /// The generated spec differs from the live Application's (the controller is updating it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spec_changed: bool,
    /// The revisions the rollout must bring this Application to, resolved in this reconcile.
    /// Empty: the revisions in its status (what it was last compared against).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_revisions: Vec<String>,
    #[serde(default)]
    pub status: ObservedStatus,
    /// The sync window that keeps the rollout from syncing this Application at `now`, as the
    /// caller found it from the Application's project (rollout syncs count as automated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_blocked_by: Option<WindowBlock>,
    /// The revisions of the newest entry of its `status.history` at other revisions than its
    /// target: the last it was Healthy on before, where `onFailure: rollback` takes it back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_revisions: Vec<String>,
    /// Its destination: a Job analysis of its step runs on its cluster, in its namespace
    /// unless the step names one.
    #[serde(default, skip_serializing_if = "is_unset")]
    pub destination: ApplicationDestination,
}

fn is_unset(destination: &ApplicationDestination) -> bool {
    *destination == ApplicationDestination::default()
}

fn exists_by_default() -> bool {
    true
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_true(value: &bool) -> bool {
    *value
}

impl ApplicationState {
    /// The revisions this Application is rolled out to: resolved now, else those in its status.
    #[must_use]
    pub fn target(&self) -> &[String] {
        if self.target_revisions.is_empty() {
            &self.status.revisions
        } else {
            &self.target_revisions
        }
    }

    /// Healthy and Synced on its target revisions, with no sync running: done, for the rollout.
    #[must_use]
    pub fn healthy_on_target(&self) -> bool {
        let status = &self.status;
        self.exists
            && status.health == HealthStatus::Healthy
            && status.sync == SyncStatusCode::Synced
            && status.revisions.as_slice() == self.target()
            && status
                .operation_state
                .as_ref()
                .is_none_or(|op| op.phase == OperationPhase::Succeeded)
            && self.reconciled_since_operation()
    }

    /// Whether health and sync were computed after the last sync operation started (true when
    /// either time is unknown).
    fn reconciled_since_operation(&self) -> bool {
        match (&self.status.reconciled_at, &self.status.operation_state) {
            (Some(reconciled), Some(op)) => *reconciled >= op.started_at,
            _ => true,
        }
    }
}

/// The Application's status fields the rollout reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservedStatus {
    #[serde(default)]
    pub health: HealthStatus,
    /// The health message, e.g. `1/3 pods ready` (shown when explaining a wait or a stall).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub health_message: String,
    #[serde(default)]
    pub sync: SyncStatusCode,
    /// What keeps the Application OutOfSync, one object each with its first differing field,
    /// e.g. `Deployment shop/web: /spec/replicas` (`missing`, `to prune`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// The revisions the Application was last compared against (`status.sync.revision(s)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// When health and sync were last computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<Timestamp>,
    /// The last sync operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_state: Option<OperationState>,
}

/// The last sync operation of an Application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationState {
    pub phase: OperationPhase,
    pub started_at: Timestamp,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The revisions it synced (one per source).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
}

//! The result of a sync operation as stored in an Application's `status.operationState`: the
//! operation's phase and message, and one record per object. The records are also what
//! `flotilla::sync::plan_step` resumes from.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

use crate::health::HealthStatus;
use crate::manifest::ObjectKey;

use super::hook_type::HookType;
use super::sync_phase::SyncPhase;

/// The phase of an operation: the one vocabulary of the engine, the stored status and the
/// rollout. Flotilla's engine writes `Running`, `Succeeded`, `Failed` and `Terminated`;
/// `Terminating` and `Error` are Argo CD's words, read from the status Argo CD writes and from
/// rollout state files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OperationPhase {
    /// In progress (including SyncFail hooks after a failure).
    Running,
    /// Being cancelled (Argo CD).
    Terminating,
    /// Every task ran and every object is Healthy.
    Succeeded,
    /// Something failed or timed out.
    Failed,
    /// The operation could not run (Argo CD).
    Error,
    /// Cancelled by a terminate command.
    Terminated,
}

impl OperationPhase {
    /// The operation ended without success (a terminated one included).
    #[must_use]
    pub fn failed(self) -> bool {
        matches!(self, Self::Failed | Self::Error | Self::Terminated)
    }

    /// The operation has not finished.
    #[must_use]
    pub fn running(self) -> bool {
        matches!(self, Self::Running | Self::Terminating)
    }
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResourceAction {
    /// Did not exist, now does.
    Created,
    /// Existed and was changed.
    Configured,
    /// Existed and was already as desired.
    Unchanged,
    /// Deleted because it is no longer desired.
    Pruned,
    /// A hook deleted by its delete policy.
    Deleted,
}

/// Whether the object's task succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResultStatus {
    /// Applied.
    Synced,
    /// The apply (or delete) was rejected.
    SyncFailed,
    /// Deletion requested.
    Pruned,
}

/// Progress of a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HookPhase {
    /// Created, not finished.
    Running,
    /// Finished Healthy.
    Succeeded,
    /// Finished Degraded.
    Failed,
}

/// The record of one object in one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceResult {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace, empty when cluster-scoped.
    #[serde(default)]
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The phase it ran in.
    pub sync_phase: SyncPhase,
    /// The wave it ran in.
    pub wave: i32,
    /// The hook type, for hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_type: Option<HookType>,
    /// Outcome of the task.
    pub status: ResultStatus,
    /// What was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ResourceAction>,
    /// For hooks: running, succeeded or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_phase: Option<HookPhase>,
    /// Last known health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    /// Server message, failure reason or health message.
    #[serde(default)]
    pub message: String,
    /// `metadata.generation` the apply returned; the object counts as settled only once its
    /// live generation has been observed at least this far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the task started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the task finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
}

impl ResourceResult {
    /// A record for any object (e.g. a pruned one).
    #[must_use]
    pub fn for_object(key: &ObjectKey, phase: SyncPhase, wave: i32, status: ResultStatus) -> Self {
        Self {
            group: key.group.clone(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone().unwrap_or_default(),
            name: key.name.clone(),
            sync_phase: phase,
            wave,
            hook_type: None,
            status,
            action: None,
            hook_phase: None,
            health: None,
            message: String::new(),
            generation: None,
            started_at: None,
            finished_at: None,
        }
    }

    /// The identity of the recorded object.
    #[must_use]
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: self.group.clone(),
            kind: self.kind.clone(),
            namespace: Some(self.namespace.clone()).filter(|n| !n.is_empty()),
            name: self.name.clone(),
        }
    }
}

/// A sync operation's state, as stored in `status.operationState`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationState {
    /// Phase.
    pub phase: OperationPhase,
    /// Summary, e.g. `successfully synced (all tasks run)` or the failure reason.
    #[serde(default)]
    pub message: String,
    /// The commit synced; for an Application with `sources`, each source's revision joined by
    /// commas (see [`crate::api::revisions::split_revisions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The revision of each source synced, in order, for an Application with `sources` (Argo
    /// CD's `syncResult.revisions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// The operation id that generated hook names derive from.
    pub operation_id: String,
    /// Set once the operation has failed and its SyncFail hooks run; the final message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// End time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// One record per object and phase.
    #[serde(default)]
    pub resources: Vec<ResourceResult>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn serializes_camel_case_and_round_trips() {
        let key = ObjectKey {
            group: "batch".into(),
            kind: "Job".into(),
            namespace: Some("shop".into()),
            name: "m".into(),
        };
        let mut record =
            ResourceResult::for_object(&key, SyncPhase::PreSync, 0, ResultStatus::Synced);
        record.hook_type = Some(HookType::PreSync);
        record.hook_phase = Some(HookPhase::Succeeded);
        record.action = Some(ResourceAction::Created);
        record.health = Some(HealthStatus::Healthy);
        let state = OperationState {
            phase: OperationPhase::Succeeded,
            message: "successfully synced (all tasks run)".into(),
            revision: Some("9f3c1ab".into()),
            revisions: Vec::new(),
            operation_id: "op".into(),
            failure: None,
            started_at: None,
            finished_at: None,
            resources: vec![record],
        };
        let value = serde_json::to_value(&state).unwrap();
        assert_eq!(
            value,
            json!({"phase": "Succeeded", "message": "successfully synced (all tasks run)", "revision": "9f3c1ab",
                   "operationId": "op", "resources": [{"group": "batch", "kind": "Job", "namespace": "shop",
                   "name": "m", "syncPhase": "PreSync", "wave": 0, "hookType": "PreSync", "status": "Synced",
                   "action": "created", "hookPhase": "Succeeded", "health": "Healthy", "message": ""}]})
        );
        assert_eq!(
            serde_json::from_value::<OperationState>(value).unwrap(),
            state
        );
        assert_eq!(state.resources[0].key(), key);
    }
}

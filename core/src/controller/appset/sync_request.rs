//! The sync a rollout requests: `spec.operation` on a generated Application, written by server-side
//! apply under the rollout's own field manager so the ApplicationSet's apply of the spec never
//! removes it. Which promoted Applications still need one is decided from what is stored: an
//! Application whose operation is already requested is never requested again. A request carries
//! the `resourceVersion` of the Application it was decided from, so one decided from a copy the
//! watch had not brought up to date yet (the sync it asks for already taken and under way) is
//! refused instead of syncing the revision twice. Pure.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::application::{InitiatedBy, Operation, SyncOperation, SyncPolicy};
use crate::api::revisions::join;
use crate::api::{API_VERSION, Application};
use crate::rollout::{RolloutDecision, RolloutInput};

/// Field manager of the `spec.operation` the rollout writes.
pub const ROLLOUT_FIELD_MANAGER: &str = "flotilla-rollout";

/// One sync to request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRequest {
    pub application: String,
    pub operation: Operation,
    /// The `resourceVersion` of the Application the request was decided from.
    pub resource_version: Option<String>,
}

impl SyncRequest {
    /// The server-side apply body: only the Application's name, the `resourceVersion` it was
    /// decided from (the API server refuses the apply with 409 Conflict if the Application
    /// changed since) and `spec.operation`.
    #[must_use]
    pub fn apply_body(&self) -> Value {
        let mut metadata = json!({"name": self.application});
        if let Some(version) = &self.resource_version {
            metadata["resourceVersion"] = json!(version);
        }
        json!({
            "apiVersion": API_VERSION,
            "kind": "Application",
            "metadata": metadata,
            "spec": {"operation": self.operation},
        })
    }
}

/// The user name a rollout's syncs are initiated by: `rollout/<ApplicationSet>`.
#[must_use]
pub fn initiator(appset: &str) -> String {
    format!("rollout/{appset}")
}

/// The syncs to request for the decision's `sync_triggered` Applications, each pinned to the
/// revision being rolled out (so a commit landing meanwhile is not synced out of order), and for
/// its `rollback_syncs`, each to the revisions it goes back to; pruning as its automated policy
/// says, skipped when the live Application already has an operation (a request already written
/// is never written twice).
#[must_use]
pub fn sync_requests<E: Borrow<Application>>(
    appset: &str,
    input: &RolloutInput,
    decision: &RolloutDecision,
    existing: &[E],
) -> Vec<SyncRequest> {
    let live: BTreeMap<&str, &Application> = existing
        .iter()
        .map(Borrow::borrow)
        .map(|app| (app.metadata.name.as_deref().unwrap_or_default(), app))
        .collect();
    let targets: BTreeMap<&str, &[String]> = input
        .applications
        .iter()
        .map(|app| (app.name.as_str(), app.target()))
        .collect();
    let triggered = decision.sync_triggered.iter().map(|name| {
        let target = targets.get(name.as_str()).copied().unwrap_or_default();
        (name, target)
    });
    let rollbacks = decision
        .rollback_syncs
        .iter()
        .map(|sync| (&sync.application, sync.revisions.as_slice()));
    triggered
        .chain(rollbacks)
        .filter_map(|(name, revisions)| {
            let app = live.get(name.as_str())?;
            if app.spec.operation.is_some() {
                return None;
            }
            let policy = app.spec.sync_policy.as_ref();
            let mut sync = SyncOperation {
                prune: policy.is_some_and(SyncPolicy::automated_prune),
                allow_empty: policy.is_some_and(SyncPolicy::automated_allow_empty),
                ..SyncOperation::default()
            };
            // One revision per source: a multi-source Application's become `revisions`.
            sync.set_revision(&join(revisions));
            Some(SyncRequest {
                application: name.clone(),
                resource_version: app.metadata.resource_version.clone(),
                operation: Operation {
                    sync,
                    initiated_by: InitiatedBy {
                        username: initiator(appset),
                        automated: true,
                    },
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(name: &str, extra: Value) -> Application {
        let mut value = json!({
            "apiVersion": API_VERSION,
            "kind": "Application",
            "metadata": {"name": name},
            "spec": {"project": "p", "source": {"repoURL": "r"}, "destination": {}}
        });
        for (key, field) in extra.as_object().into_iter().flatten() {
            value["spec"][key] = field.clone();
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn requests_pinned_syncs_only_where_none_is_requested_yet() {
        let input: RolloutInput = serde_json::from_value(json!({
            "now": "2025-01-01T00:00:00Z",
            "strategy": {"type": "RollingSync"},
            "applications": [
                {"name": "a", "targetRevisions": ["abc"]},
                {"name": "b", "status": {"revisions": ["old"]}},
                {"name": "c"},
            ]
        }))
        .unwrap();
        let existing = vec![
            live("a", json!({"syncPolicy": {"automated": {"prune": true}}})),
            live("b", json!({})),
            live(
                "c",
                json!({"operation": {"sync": {}, "initiatedBy": {"username": "me"}}}),
            ),
        ];
        let decision = RolloutDecision {
            sync_triggered: vec!["a".into(), "b".into(), "c".into(), "gone".into()],
            ..RolloutDecision::default()
        };
        let requests = sync_requests("stack", &input, &decision, &existing);
        let summary: Vec<(&str, &str, bool)> = requests
            .iter()
            .map(|r| {
                (
                    r.application.as_str(),
                    r.operation.sync.revision.as_str(),
                    r.operation.sync.prune,
                )
            })
            .collect();
        assert_eq!(summary, [("a", "abc", true), ("b", "old", false)]);
        assert_eq!(
            requests[0].apply_body(),
            json!({
                "apiVersion": "flotilla.dev/v1alpha1",
                "kind": "Application",
                "metadata": {"name": "a"},
                "spec": {"operation": {
                    "sync": {"revision": "abc", "prune": true},
                    "initiatedBy": {"username": "rollout/stack", "automated": true}
                }}
            })
        );
    }
}

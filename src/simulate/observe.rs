//! What the simulation observes of an Application after its sync, as the application
//! controller would report it: sync status from the operation, health aggregated from its live
//! objects (judged by `crate::health`), the worst one winning in Argo CD's order.

use crate::api::application_set_status::SyncStatusCode;
use crate::health::{HealthChecks, HealthStatus};
use crate::rollout::{ObservedStatus, OperationState as Rollout};
use crate::sync::execute::cluster_api::ClusterApi;
use crate::sync::{LiveObject, OperationPhase, OperationState, ResultStatus};

/// Argo CD's aggregation order: a later status is worse and wins.
const WORSE: [HealthStatus; 6] = [
    HealthStatus::Healthy,
    HealthStatus::Suspended,
    HealthStatus::Progressing,
    HealthStatus::Missing,
    HealthStatus::Degraded,
    HealthStatus::Unknown,
];

fn rank(status: HealthStatus) -> usize {
    WORSE
        .iter()
        .position(|s| *s == status)
        .unwrap_or(WORSE.len())
}

/// The Application's status after `state` ended, read from `cluster` and judged by `checks`.
pub async fn observe<C: ClusterApi>(
    cluster: &C,
    state: &OperationState,
    checks: &HealthChecks,
) -> ObservedStatus {
    let mut health = HealthStatus::Healthy;
    let mut message = String::new();
    let managed = state
        .resources
        .iter()
        .filter(|r| r.hook_type.is_none() && r.status != ResultStatus::Pruned);
    for record in managed {
        let key = record.key();
        let verdict = match cluster.get(&key).await {
            Ok(Some(object)) => LiveObject::from_object(&object, checks).map(|live| live.health),
            Ok(None) => Some(crate::health::Health::missing()),
            Err(_) => None,
        }
        .unwrap_or_else(|| crate::health::Health::new(HealthStatus::Unknown, ""));
        if rank(verdict.status) > rank(health) {
            health = verdict.status;
            message = format!("{key}: {verdict}");
        }
    }
    let phase = state.phase;
    if state.phase != OperationPhase::Succeeded && health == HealthStatus::Healthy {
        health = HealthStatus::Missing;
    }
    let now = cluster.now();
    ObservedStatus {
        health,
        health_message: message,
        sync: if state.phase == OperationPhase::Succeeded {
            SyncStatusCode::Synced
        } else {
            SyncStatusCode::OutOfSync
        },
        differences: Vec::new(),
        revisions: state.revision.iter().cloned().collect(),
        reconciled_at: Some(now),
        operation_state: Some(Rollout {
            phase,
            started_at: state.started_at.as_ref().map_or(now, |t| t.0),
            message: state.message.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worse_statuses_rank_higher() {
        assert!(rank(HealthStatus::Degraded) > rank(HealthStatus::Progressing));
        assert!(rank(HealthStatus::Missing) > rank(HealthStatus::Suspended));
        assert!(rank(HealthStatus::Unknown) > rank(HealthStatus::Degraded));
    }
}

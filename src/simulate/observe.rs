//! What the simulation observes of an Application after its sync, as the application
//! controller would report it: sync status from the operation, health aggregated from its live
//! objects (judged by `flotilla_core::health`) by the controller's rule, [`flotilla_core::health::worst`].

use crate::sync::execute::cluster_api::ClusterApi;
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::health::{Health, HealthChecks, HealthStatus, worst};
use flotilla_core::rollout::{ObservedStatus, OperationState as Rollout};
use flotilla_core::sync::{LiveObject, OperationPhase, OperationState, ResultStatus};

/// The Application's status after `state` ended, read from `cluster` and judged by `checks`.
pub async fn observe<C: ClusterApi>(
    cluster: &C,
    state: &OperationState,
    checks: &HealthChecks,
) -> ObservedStatus {
    let mut verdicts = Vec::new();
    let managed = state
        .resources
        .iter()
        .filter(|r| r.hook_type.is_none() && r.status != ResultStatus::Pruned);
    for record in managed {
        let key = record.key();
        let verdict = match cluster.get(&key).await {
            Ok(Some(object)) => LiveObject::from_object(&object, checks).map(|live| live.health),
            Ok(None) => Some(Health::missing()),
            Err(_) => None,
        }
        .unwrap_or_else(|| Health::new(HealthStatus::Unknown, ""));
        verdicts.push((key, verdict));
    }
    let Health {
        status: mut health,
        message,
    } = worst(verdicts.iter().map(|(key, health)| (key, health)));
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
            revisions: state.revision.iter().cloned().collect(),
        }),
    }
}

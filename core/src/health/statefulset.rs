//! StatefulSet health: observed generation, ready replicas, partitioned and rolling updates.

use k8s_openapi::api::apps::v1::StatefulSet;

use super::{Health, HealthStatus, generation_observed};

pub(super) fn assess(set: &StatefulSet) -> Health {
    let spec = set.spec.as_ref();
    let status = set.status.clone().unwrap_or_default();
    let observed = status.observed_generation.is_some_and(|g| g > 0)
        && generation_observed(set.metadata.generation, status.observed_generation);
    if !observed {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for statefulset spec update to be observed",
        );
    }
    let desired = spec.and_then(|s| s.replicas).unwrap_or(1);
    let ready = status.ready_replicas.unwrap_or(0);
    if ready < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "{ready}/{desired} ready, waiting for {} pods to be ready",
                desired - ready
            ),
        );
    }
    let strategy = spec.and_then(|s| s.update_strategy.as_ref());
    let strategy_type = strategy
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate");
    let partition = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.partition);
    if strategy_type == "OnDelete" {
        return Health::new(
            HealthStatus::Healthy,
            format!("statefulset has {ready} ready pods"),
        );
    }
    if let Some(partition) = partition {
        let updated = status.updated_replicas.unwrap_or(0);
        let expected = desired - partition;
        if updated < expected {
            return Health::new(
                HealthStatus::Progressing,
                format!(
                    "Waiting for partitioned roll out to finish: {updated} out of {expected} new pods have been updated"
                ),
            );
        }
        return Health::new(
            HealthStatus::Healthy,
            format!("partitioned roll out complete: {updated} new pods have been updated"),
        );
    }
    let update = status.update_revision.unwrap_or_default();
    if status
        .current_revision
        .as_deref()
        .is_some_and(|current| current != update)
    {
        return Health::new(
            HealthStatus::Progressing,
            format!("waiting for statefulset rolling update to complete: revision {update}"),
        );
    }
    Health::new(HealthStatus::Healthy, format!("{ready}/{desired} ready"))
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_cases;
    use serde_json::{Value, json};

    use crate::health::HealthStatus::*;

    fn set(spec: Value, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "s", "generation": 2}, "spec": spec, "status": status})
    }

    #[test]
    fn rules() {
        let cases = [
            (
                set(
                    json!({"replicas": 2}),
                    json!({"observedGeneration": 1, "readyReplicas": 2}),
                ),
                Progressing,
                "Waiting for statefulset spec update to be observed",
            ),
            (
                set(
                    json!({"replicas": 2}),
                    json!({"observedGeneration": 2, "readyReplicas": 1}),
                ),
                Progressing,
                "1/2 ready, waiting for 1 pods to be ready",
            ),
            (
                set(
                    json!({"replicas": 2, "updateStrategy": {"type": "OnDelete"}}),
                    json!({"observedGeneration": 2, "readyReplicas": 2}),
                ),
                Healthy,
                "statefulset has 2 ready pods",
            ),
            (
                set(
                    json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}}),
                    json!({"observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 1}),
                ),
                Progressing,
                "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated",
            ),
            (
                set(
                    json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}}),
                    json!({"observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 2}),
                ),
                Healthy,
                "partitioned roll out complete: 2 new pods have been updated",
            ),
            (
                set(
                    json!({"replicas": 2}),
                    json!({"observedGeneration": 2, "readyReplicas": 2,
                "currentRevision": "a", "updateRevision": "b"}),
                ),
                Progressing,
                "waiting for statefulset rolling update to complete: revision b",
            ),
            (
                set(
                    json!({"replicas": 2}),
                    json!({"observedGeneration": 2, "readyReplicas": 2,
                "currentRevision": "b", "updateRevision": "b"}),
                ),
                Healthy,
                "2/2 ready",
            ),
        ];
        assert_cases(cases);
    }
}

//! ReplicaSet health: observed generation, ReplicaFailure, available replicas.

use k8s_openapi::api::apps::v1::ReplicaSet;

use super::{Health, HealthStatus, generation_observed};

pub(super) fn assess(set: &ReplicaSet) -> Health {
    let status = set.status.clone().unwrap_or_default();
    let observed = status.observed_generation.is_some()
        && generation_observed(set.metadata.generation, status.observed_generation);
    if !observed {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for rollout to finish: observed replica set generation less than desired generation",
        );
    }
    if let Some(failure) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "ReplicaFailure" && c.status == "True")
    {
        return Health::new(
            HealthStatus::Degraded,
            failure.message.clone().unwrap_or_default(),
        );
    }
    let desired = set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let available = status.available_replicas.unwrap_or(0);
    if available < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {available} out of {desired} new replicas are available"
            ),
        );
    }
    Health::new(
        HealthStatus::Healthy,
        format!("{available}/{desired} available"),
    )
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_cases;
    use serde_json::{Value, json};

    use crate::health::HealthStatus::*;

    fn set(status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "generation": 1},
               "spec": {"replicas": 2, "selector": {}}, "status": status})
    }

    #[test]
    fn rules() {
        let cases = [
            (
                set(json!({"replicas": 2})),
                Progressing,
                "Waiting for rollout to finish: observed replica set generation less than desired generation",
            ),
            (
                set(
                    json!({"replicas": 0, "observedGeneration": 1, "conditions": [{"type": "ReplicaFailure",
                "status": "True", "message": "quota exceeded"}]}),
                ),
                Degraded,
                "quota exceeded",
            ),
            (
                set(json!({"replicas": 2, "observedGeneration": 1, "availableReplicas": 1})),
                Progressing,
                "Waiting for rollout to finish: 1 out of 2 new replicas are available",
            ),
            (
                set(json!({"replicas": 2, "observedGeneration": 1, "availableReplicas": 2})),
                Healthy,
                "2/2 available",
            ),
        ];
        assert_cases(cases);
    }
}

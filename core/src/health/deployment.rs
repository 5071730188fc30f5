//! Deployment health: paused, progress deadline, rollout progress, on the observed generation.

use k8s_openapi::api::apps::v1::Deployment;

use super::{Health, HealthStatus, generation_observed};

pub(super) fn assess(deployment: &Deployment) -> Health {
    let spec = deployment.spec.as_ref();
    let status = deployment.status.clone().unwrap_or_default();
    if spec.and_then(|s| s.paused).unwrap_or(false) {
        return Health::new(HealthStatus::Suspended, "Deployment is paused");
    }
    let observed = status.observed_generation.is_some()
        && generation_observed(deployment.metadata.generation, status.observed_generation);
    if !observed {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for rollout to finish: observed deployment generation less than desired generation",
        );
    }
    let desired = spec.and_then(|s| s.replicas).unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let replicas = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let deadline_exceeded = status.conditions.iter().flatten().any(|condition| {
        condition.type_ == "Progressing"
            && condition.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    if deadline_exceeded {
        return Health::new(
            HealthStatus::Degraded,
            format!("{available}/{desired} available, exceeded its progress deadline"),
        );
    }
    if updated < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!("{available}/{desired} available, {updated} of {desired} new replicas updated"),
        );
    }
    if replicas > updated {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "{available}/{desired} available, {} old replicas pending termination",
                replicas - updated
            ),
        );
    }
    if available < updated {
        return Health::new(
            HealthStatus::Progressing,
            format!("{available}/{desired} available, waiting for updated replicas"),
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

    fn deployment(generation: i64, spec: Value, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "generation": generation}, "spec": spec, "status": status})
    }

    #[test]
    fn rules() {
        let cases = [
            (
                deployment(1, json!({"paused": true}), json!({})),
                Suspended,
                "Deployment is paused",
            ),
            (
                deployment(
                    2,
                    json!({"replicas": 3}),
                    json!({"observedGeneration": 1, "replicas": 3,
                    "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Progressing,
                "Waiting for rollout to finish: observed deployment generation less than desired generation",
            ),
            (
                deployment(1, json!({"replicas": 3}), json!({})),
                Progressing,
                "Waiting for rollout to finish: observed deployment generation less than desired generation",
            ),
            (
                deployment(
                    1,
                    json!({"replicas": 3}),
                    json!({"observedGeneration": 1, "replicas": 3,
                    "updatedReplicas": 3, "availableReplicas": 0, "conditions": [{"type": "Progressing",
                    "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
                ),
                Degraded,
                "0/3 available, exceeded its progress deadline",
            ),
            (
                deployment(
                    1,
                    json!({"replicas": 3}),
                    json!({"observedGeneration": 1, "replicas": 3,
                    "updatedReplicas": 1, "availableReplicas": 2}),
                ),
                Progressing,
                "2/3 available, 1 of 3 new replicas updated",
            ),
            (
                deployment(
                    1,
                    json!({"replicas": 3}),
                    json!({"observedGeneration": 1, "replicas": 4,
                    "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Progressing,
                "3/3 available, 1 old replicas pending termination",
            ),
            (
                deployment(
                    1,
                    json!({"replicas": 3}),
                    json!({"observedGeneration": 1, "replicas": 3,
                    "updatedReplicas": 3, "availableReplicas": 0}),
                ),
                Progressing,
                "0/3 available, waiting for updated replicas",
            ),
            (
                deployment(
                    4,
                    json!({"replicas": 3}),
                    json!({"observedGeneration": 4, "replicas": 3,
                    "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Healthy,
                "3/3 available",
            ),
        ];
        assert_cases(cases);
    }
}

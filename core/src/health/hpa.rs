//! HorizontalPodAutoscaler health: failing conditions are Degraded, no conditions yet Progressing.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::{Health, HealthStatus};

pub(super) fn assess(hpa: &HorizontalPodAutoscaler) -> Health {
    let conditions = hpa.status.as_ref().and_then(|s| s.conditions.as_ref());
    let Some(conditions) = conditions.filter(|c| !c.is_empty()) else {
        return Health::new(HealthStatus::Progressing, "Waiting to Autoscale");
    };
    let failing = conditions.iter().find(|c| {
        c.status == "False"
            && matches!(c.type_.as_str(), "AbleToScale" | "ScalingActive")
            && c.reason.as_deref().is_some_and(|r| r.starts_with("Failed"))
    });
    if let Some(condition) = failing {
        return Health::new(
            HealthStatus::Degraded,
            condition.message.clone().unwrap_or_default(),
        );
    }
    Health::new(HealthStatus::Healthy, "")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::health::{HealthStatus::*, assess};

    fn hpa(conditions: Value) -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
               "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "Deployment", "name": "d"}},
               "status": {"desiredReplicas": 1, "conditions": conditions}})
    }

    #[test]
    fn rules() {
        let cases = [
            (hpa(json!([])), Progressing),
            (
                hpa(
                    json!([{"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric",
                         "message": "no metrics"}]),
                ),
                Degraded,
            ),
            (
                hpa(
                    json!([{"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled"}]),
                ),
                Healthy,
            ),
            (
                hpa(
                    json!([{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]),
                ),
                Healthy,
            ),
        ];
        for (object, status) in cases {
            assert_eq!(assess(&object).status, status, "{object}");
        }
    }
}

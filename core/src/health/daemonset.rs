//! DaemonSet health: observed generation, updated and available pods.

use k8s_openapi::api::apps::v1::DaemonSet;

use super::{Health, HealthStatus, generation_observed};

pub(super) fn assess(set: &DaemonSet) -> Health {
    let status = set.status.clone().unwrap_or_default();
    let observed = status.observed_generation.is_some()
        && generation_observed(set.metadata.generation, status.observed_generation);
    if !observed {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for rollout to finish: observed daemon set generation less than desired generation",
        );
    }
    let desired = status.desired_number_scheduled;
    let updated = status.updated_number_scheduled.unwrap_or(0);
    let available = status.number_available.unwrap_or(0);
    let on_delete = set
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some("OnDelete");
    if on_delete {
        return Health::new(
            HealthStatus::Healthy,
            format!("daemon set {updated} out of {desired} new pods have been updated"),
        );
    }
    if updated < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {updated} out of {desired} new pods have been updated"
            ),
        );
    }
    if available < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {available} of {desired} updated pods are available"
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

    fn set(strategy: &str, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "generation": 1},
               "spec": {"updateStrategy": {"type": strategy}}, "status": status})
    }

    #[test]
    fn rules() {
        let base = |updated: i32, available: i32, observed: i64| {
            json!({"observedGeneration": observed, "desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                   "numberMisscheduled": 0, "numberReady": 3,
                   "updatedNumberScheduled": updated, "numberAvailable": available})
        };
        let cases = [
            (
                set("RollingUpdate", base(3, 3, 0)),
                Progressing,
                "Waiting for rollout to finish: observed daemon set generation less than desired generation",
            ),
            (
                set("OnDelete", base(1, 3, 1)),
                Healthy,
                "daemon set 1 out of 3 new pods have been updated",
            ),
            (
                set("RollingUpdate", base(1, 3, 1)),
                Progressing,
                "Waiting for rollout to finish: 1 out of 3 new pods have been updated",
            ),
            (
                set("RollingUpdate", base(3, 2, 1)),
                Progressing,
                "Waiting for rollout to finish: 2 of 3 updated pods are available",
            ),
            (
                set("RollingUpdate", base(3, 3, 1)),
                Healthy,
                "3/3 available",
            ),
        ];
        assert_cases(cases);
    }
}

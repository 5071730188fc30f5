//! APIService health: the Available condition.

use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;

use super::{Health, HealthStatus};

pub(super) fn assess(service: &APIService) -> Health {
    let available = service
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Available");
    match available {
        Some(c) if c.status == "True" => Health::new(HealthStatus::Healthy, ""),
        Some(c) => Health::new(
            HealthStatus::Progressing,
            c.message
                .clone()
                .or_else(|| c.reason.clone())
                .unwrap_or_default(),
        ),
        None => Health::new(HealthStatus::Progressing, "Waiting to be processed"),
    }
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_cases;
    use serde_json::{Value, json};

    use crate::health::HealthStatus::*;

    fn service(conditions: Value) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": "v1.metrics"}, "spec": {"groupPriorityMinimum": 1, "versionPriority": 1},
               "status": {"conditions": conditions}})
    }

    #[test]
    fn rules() {
        let cases = [
            (service(json!([])), Progressing, "Waiting to be processed"),
            (
                service(
                    json!([{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]),
                ),
                Progressing,
                "MissingEndpoints",
            ),
            (
                service(json!([{"type": "Available", "status": "True"}])),
                Healthy,
                "",
            ),
        ];
        assert_cases(cases);
    }
}

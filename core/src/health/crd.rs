//! CustomResourceDefinition health: names accepted and Established.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::{Health, HealthStatus};

pub(super) fn assess(crd: &CustomResourceDefinition) -> Health {
    let conditions = crd.status.as_ref().and_then(|s| s.conditions.as_ref());
    let find = |type_: &str| conditions.into_iter().flatten().find(|c| c.type_ == type_);
    if let Some(names) = find("NamesAccepted").filter(|c| c.status == "False") {
        return Health::new(
            HealthStatus::Degraded,
            names.message.clone().unwrap_or_default(),
        );
    }
    match find("Established") {
        Some(established) if established.status == "True" => Health::new(HealthStatus::Healthy, ""),
        _ => Health::new(
            HealthStatus::Progressing,
            "waiting for the CRD to be Established",
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::health::{HealthStatus::*, assess};

    fn crd(conditions: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced", "versions": [],
                        "names": {"kind": "Widget", "plural": "widgets"}},
               "status": {"conditions": conditions}})
    }

    #[test]
    fn rules() {
        let cases = [
            (crd(json!([])), Progressing),
            (
                crd(json!([{"type": "Established", "status": "False"}])),
                Progressing,
            ),
            (
                crd(json!([{"type": "Established", "status": "True"}])),
                Healthy,
            ),
            (
                crd(json!([{"type": "NamesAccepted", "status": "False", "message": "conflict"}])),
                Degraded,
            ),
        ];
        for (object, status) in cases {
            assert_eq!(assess(&object).status, status, "{object}");
        }
    }
}

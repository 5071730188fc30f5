//! Namespace health: Active, or Progressing while Terminating.

use k8s_openapi::api::core::v1::Namespace;

use super::{Health, HealthStatus};

pub(super) fn assess(namespace: &Namespace) -> Health {
    match namespace.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Terminating") => Health::new(HealthStatus::Progressing, "namespace is terminating"),
        _ => Health::new(HealthStatus::Healthy, ""),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::health::{HealthStatus::*, assess};

    #[test]
    fn rules() {
        for (phase, status) in [
            (json!("Active"), Healthy),
            (json!("Terminating"), Progressing),
            (json!(null), Healthy),
        ] {
            let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"},
                                "status": {"phase": phase}});
            assert_eq!(assess(&object).status, status, "{object}");
        }
    }
}

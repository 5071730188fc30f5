//! PersistentVolumeClaim health: Bound, Pending, Lost.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use super::{Health, HealthStatus};

pub(super) fn assess(claim: &PersistentVolumeClaim) -> Health {
    match claim.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Bound") => Health::new(HealthStatus::Healthy, ""),
        Some("Pending") => Health::new(
            HealthStatus::Progressing,
            "waiting for the claim to be bound",
        ),
        Some("Lost") => Health::new(HealthStatus::Degraded, "the bound volume is lost"),
        other => Health::new(
            HealthStatus::Unknown,
            format!("phase {}", other.unwrap_or("not reported")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::health::{HealthStatus::*, assess};

    #[test]
    fn rules() {
        for (phase, status) in [
            (json!("Bound"), Healthy),
            (json!("Pending"), Progressing),
            (json!("Lost"), Degraded),
            (json!(null), Unknown),
        ] {
            let object = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                "metadata": {"name": "p"}, "status": {"phase": phase}});
            assert_eq!(assess(&object).status, status, "{object}");
        }
    }
}

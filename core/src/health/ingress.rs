//! Ingress health: Healthy once the controller published a load balancer address.

use k8s_openapi::api::networking::v1::Ingress;

use super::{Health, HealthStatus};

pub(super) fn assess(ingress: &Ingress) -> Health {
    let has_address = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .is_some_and(|addresses| !addresses.is_empty());
    if has_address {
        Health::new(HealthStatus::Healthy, "")
    } else {
        Health::new(HealthStatus::Progressing, "waiting for an ingress address")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::health::{HealthStatus::*, assess};

    #[test]
    fn rules() {
        for (addresses, status) in [
            (json!([]), Progressing),
            (json!([{"hostname": "lb"}]), Healthy),
        ] {
            let object = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
                                "status": {"loadBalancer": {"ingress": addresses}}});
            assert_eq!(assess(&object).status, status, "{object}");
        }
    }
}

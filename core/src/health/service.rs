//! Service health: a LoadBalancer is Healthy once it has an ingress address.

use k8s_openapi::api::core::v1::Service;

use super::{Health, HealthStatus};

pub(super) fn assess(service: &Service) -> Health {
    let is_load_balancer =
        service.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer");
    let has_ingress = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .is_some_and(|ingress| !ingress.is_empty());
    if is_load_balancer && !has_ingress {
        return Health::new(
            HealthStatus::Progressing,
            "waiting for a load balancer address",
        );
    }
    Health::new(HealthStatus::Healthy, "")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::health::{HealthStatus::*, assess};

    #[test]
    fn rules() {
        let service = |type_: &str, ingress: serde_json::Value| {
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": type_},
                   "status": {"loadBalancer": {"ingress": ingress}}})
        };
        let cases = [
            (service("ClusterIP", json!([])), Healthy),
            (service("LoadBalancer", json!([])), Progressing),
            (
                service("LoadBalancer", json!([{"ip": "10.0.0.1"}])),
                Healthy,
            ),
        ];
        for (object, status) in cases {
            assert_eq!(assess(&object).status, status, "{object}");
        }
    }
}

//! Health assessment of live objects, per kind, following Argo CD's gitops-engine rules, with
//! rules for the operators' kinds platform teams run ([`built_in_kinds`]), the status conventions
//! for every other kind, and a wait for a first status of custom resources whose CRD declares a
//! status subresource ([`awaiting_status`]). Pure: takes an object as JSON (and what the shell
//! learned of its cluster) and returns a status with a message; never talks to a cluster.

mod aggregate;
mod apiservice;
mod application;
mod argo_rollout;
#[cfg(test)]
mod cases;
mod cnpg_cluster;
mod conditions;
mod convention;
mod crd;
mod customizations;
mod daemonset;
mod deployment;
mod hpa;
mod ingress;
mod job;
mod kinds;
mod lua;
mod namespace;
mod pod;
mod pvc;
mod replicaset;
mod service;
mod statefulset;
mod status;
mod status_gate;
#[cfg(any(test, feature = "test-support"))]
pub mod walks;

pub use aggregate::{severity, worst};
pub use convention::Meaning;
#[cfg(test)]
pub(crate) use customizations::test_data;
pub use customizations::{
    AWAIT_STATUS_KEY_PREFIX, CUSTOMIZATIONS_KEY, CustomizationsError, HEALTH_KEY_PREFIX,
    HealthChecks, HealthDefaults, LibraryScript, OPEN_LIBS_KEY_PREFIX,
};
pub use kinds::{BuiltInKind, Selector, built_in_kinds, reference};
pub use lua::{INSTRUCTION_LIMIT, LuaError, MEMORY_LIMIT, TIME_LIMIT};
pub use pod::with_pod_problems;
pub use status::{Health, HealthStatus};
pub use status_gate::{DEFAULT_STATUS_GRACE, StatusKinds, awaiting_status};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::manifest::group_of;

/// Assesses a live object by its kind's built-in rule. Objects being deleted are Progressing;
/// kinds without a rule of their own are read by the status conventions ([`conditions`]).
#[must_use]
pub fn assess(object: &Value) -> Health {
    if object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Health::new(HealthStatus::Progressing, "Pending deletion");
    }
    let group = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .map_or("", group_of);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    kinds::built_in_kind(group, kind, object)
        .map_or_else(|| conditions::assess(object), |row| row.assess(object))
}

/// Reads the object as its k8s-openapi type and applies the rule; an unreadable object is Unknown.
fn typed<T: DeserializeOwned>(object: &Value, rule: fn(&T) -> Health) -> Health {
    match T::deserialize(object) {
        Ok(typed) => rule(&typed),
        Err(error) => Health::new(
            HealthStatus::Unknown,
            format!("cannot read object: {error}"),
        ),
    }
}

/// Whether the controller has seen the current spec: `status.observedGeneration >=
/// metadata.generation`, or true when either is absent.
#[must_use]
pub fn generation_observed(generation: Option<i64>, observed_generation: Option<i64>) -> bool {
    match (generation, observed_generation) {
        (Some(generation), Some(observed)) => observed >= generation,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn dispatches_by_group_and_kind() {
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                HealthStatus::Healthy,
            ),
            (
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
                HealthStatus::Healthy,
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
                HealthStatus::Progressing,
            ),
            (
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"},
                       "status": {"phase": "Bound"}}),
                HealthStatus::Healthy,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                       "spec": {"replicas": "three"}}),
                HealthStatus::Unknown,
            ),
        ];
        for (object, expected) in cases {
            assert_eq!(assess(&object).status, expected, "{object}");
        }
    }

    #[test]
    fn generation_rule() {
        assert!(generation_observed(Some(2), Some(2)));
        assert!(generation_observed(Some(2), Some(3)));
        assert!(!generation_observed(Some(3), Some(2)));
        assert!(generation_observed(None, Some(1)));
        assert!(generation_observed(Some(1), None));
    }
}

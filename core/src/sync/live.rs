//! What the planner needs to know about a live object: identity, generations, deletion, health
//! and annotations. Built from the object's JSON by a pure function.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::health::{Health, HealthChecks, generation_observed};
use crate::manifest::ObjectKey;

/// A live object as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveObject {
    /// Identity.
    pub key: ObjectKey,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Health assessment.
    pub health: Health,
    /// `metadata.annotations` (string values only).
    pub annotations: BTreeMap<String, String>,
}

impl LiveObject {
    /// Reads a live object, judging its health by `health`; None when it has no apiVersion,
    /// kind or name.
    #[must_use]
    pub fn from_object(object: &Value, health: &HealthChecks) -> Option<Self> {
        let key = ObjectKey::of_object(object)?;
        let metadata = object.get("metadata");
        let annotations = metadata
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some(Self {
            key,
            generation: metadata
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64),
            observed_generation: object
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64),
            deleting: metadata
                .and_then(|m| m.get("deletionTimestamp"))
                .is_some_and(|t| !t.is_null()),
            health: health.assess(object),
            annotations,
        })
    }

    /// Whether the controller has observed the current generation.
    #[must_use]
    pub fn generation_observed(&self) -> bool {
        generation_observed(self.generation, self.observed_generation)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::health::HealthStatus;

    #[test]
    fn reads_generations_deletion_and_health() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "generation": 3, "annotations": {"a": "b"},
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"observedGeneration": 2}});
        let live = LiveObject::from_object(&object, &HealthChecks::default()).unwrap();
        assert_eq!(live.key.to_string(), "ConfigMap n/c");
        assert_eq!(
            (live.generation, live.observed_generation, live.deleting),
            (Some(3), Some(2), true)
        );
        assert!(!live.generation_observed());
        assert_eq!(live.health.status, HealthStatus::Progressing);
        assert_eq!(live.annotations.get("a").map(String::as_str), Some("b"));
        assert_eq!(
            LiveObject::from_object(&json!({"kind": "ConfigMap"}), &HealthChecks::default()),
            None
        );
    }
}

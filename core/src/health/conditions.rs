//! Health of kinds without a rule of their own, from the status conventions most controllers
//! follow (kstatus, Knative, Crossplane, Flux): a spec not yet observed is Progressing;
//! `Stalled=True`, `Failed=True` or `Ready=False` with a failure reason are Degraded;
//! `Reconciling=True` or a `Ready` condition not yet True are Progressing; `Ready`, `Available`
//! or `Succeeded` True are Healthy; an object with no status, or none of these conditions, is
//! Healthy once it exists (as in Argo CD).

use serde_json::Value;

use super::convention::spec_unobserved;
use super::{Health, HealthStatus, generation_observed};

/// One entry of `status.conditions`.
pub(super) struct Condition<'a> {
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
    /// Cluster API's `severity` of a False condition (`Info`, `Warning`, `Error`), else empty.
    pub severity: &'a str,
    /// The generation the condition was written for, when it says.
    pub observed_generation: Option<i64>,
}

impl Condition<'_> {
    /// `message`, or `reason` when there is no message.
    pub fn text(&self) -> &str {
        if self.message.is_empty() {
            self.reason
        } else {
            self.message
        }
    }
}

/// The condition of `type_` in `object`'s `status.conditions`.
pub(super) fn condition<'a>(object: &'a Value, type_: &str) -> Option<Condition<'a>> {
    let text = |entry: &'a Value, field: &str| entry.get(field).and_then(Value::as_str);
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|entry| text(entry, "type") == Some(type_))
        .map(|entry| Condition {
            status: text(entry, "status").unwrap_or(""),
            reason: text(entry, "reason").unwrap_or(""),
            message: text(entry, "message").unwrap_or(""),
            severity: text(entry, "severity").unwrap_or(""),
            observed_generation: entry.get("observedGeneration").and_then(Value::as_i64),
        })
}

/// Whether a `Ready=False` reason says the object failed rather than is on its way.
fn failure_reason(reason: &str) -> bool {
    let reason = reason.to_ascii_lowercase();
    ["fail", "error", "invalid", "degraded", "denied", "stalled"]
        .iter()
        .any(|word| reason.contains(word))
}

/// The generic assessment.
pub(super) fn assess(object: &Value) -> Health {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    if let Some(waiting) = spec_unobserved(object) {
        return waiting;
    }
    for failed in ["Stalled", "Failed"] {
        if let Some(c) = condition(object, failed).filter(|c| c.status == "True") {
            return Health::new(HealthStatus::Degraded, c.text());
        }
    }
    let ready = condition(object, "Ready");
    if let Some(c) = ready.as_ref().filter(|c| c.status == "False") {
        let status = if failure_reason(c.reason) {
            HealthStatus::Degraded
        } else {
            HealthStatus::Progressing
        };
        return Health::new(status, c.text());
    }
    if let Some(c) = condition(object, "Reconciling").filter(|c| c.status == "True") {
        return Health::new(HealthStatus::Progressing, c.text());
    }
    if let Some(c) = ready.as_ref().filter(|c| c.status != "True") {
        return Health::new(HealthStatus::Progressing, c.text());
    }
    if let Some(c) = ready
        .as_ref()
        .filter(|c| !generation_observed(generation, c.observed_generation))
    {
        return Health::new(
            HealthStatus::Progressing,
            format!("Ready for an earlier generation: {}", c.text()),
        );
    }
    let healthy = ["Ready", "Available", "Succeeded"]
        .iter()
        .find_map(|type_| condition(object, type_).filter(|c| c.status == "True"));
    Health::new(
        HealthStatus::Healthy,
        healthy.as_ref().map_or("", Condition::text),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::health::HealthStatus::{self, *};
    use crate::health::assess;

    fn widget(generation: i64, status: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "generation": generation}, "status": status})
    }

    fn conditions(list: Value) -> Value {
        json!({"observedGeneration": 2, "conditions": list})
    }

    #[test]
    fn status_conventions() {
        let cases: [(Value, HealthStatus, &str); 13] = [
            (json!(null), Healthy, ""),
            (json!({}), Healthy, ""),
            (json!({"phase": "Whatever"}), Healthy, ""),
            (
                json!({"observedGeneration": 1}),
                Progressing,
                "Waiting for the controller to observe generation 2",
            ),
            (
                conditions(json!([{"type": "Ready", "status": "True", "message": "up"}])),
                Healthy,
                "up",
            ),
            (
                conditions(
                    json!([{"type": "Available", "status": "True", "reason": "MinimumReplicas"}]),
                ),
                Healthy,
                "MinimumReplicas",
            ),
            (
                conditions(json!([{"type": "Succeeded", "status": "True"}])),
                Healthy,
                "",
            ),
            (
                conditions(
                    json!([{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "creating volumes"}]),
                ),
                Progressing,
                "creating volumes",
            ),
            (
                conditions(
                    json!([{"type": "Ready", "status": "False", "reason": "ReconciliationFailed", "message": "bad password"}]),
                ),
                Degraded,
                "bad password",
            ),
            (
                conditions(
                    json!([{"type": "Ready", "status": "True"}, {"type": "Stalled", "status": "True", "message": "quota"}]),
                ),
                Degraded,
                "quota",
            ),
            (
                conditions(json!([{"type": "Failed", "status": "True", "reason": "BackoffLimit"}])),
                Degraded,
                "BackoffLimit",
            ),
            (
                conditions(
                    json!([{"type": "Ready", "status": "Unknown", "reason": "Reconciling"}]),
                ),
                Progressing,
                "Reconciling",
            ),
            (
                conditions(
                    json!([{"type": "Ready", "status": "True", "observedGeneration": 1, "message": "old"}]),
                ),
                Progressing,
                "Ready for an earlier generation: old",
            ),
        ];
        for (status, expected, message) in cases {
            let object = widget(2, status.clone());
            let health = assess(&object);
            assert_eq!(
                (health.status, health.message.as_str()),
                (expected, message),
                "{status}"
            );
        }
        let reconciling = widget(
            2,
            conditions(json!([{"type": "Reconciling", "status": "True", "message": "rolling"}])),
        );
        assert_eq!(assess(&reconciling).status, Progressing);
    }
}

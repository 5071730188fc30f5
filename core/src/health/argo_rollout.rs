//! Argo Rollouts `Rollout` health: a paused rollout is Suspended; a spec its controller has not
//! observed yet is Progressing; otherwise the phase the controller reports (`Healthy`,
//! `Progressing`, `Paused`, `Degraded`) with its message.

use serde_json::Value;

use super::{Health, HealthStatus, generation_observed};

pub(super) fn assess(object: &Value) -> Health {
    let status = object.get("status");
    let text = |field: &str| {
        status
            .and_then(|s| s.get(field))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    if object.pointer("/spec/paused") == Some(&Value::Bool(true)) {
        return Health::new(HealthStatus::Suspended, "Rollout is paused");
    }
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    // Written as a string by the Rollouts controller; older versions wrote a hash (ignored).
    let observed = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(|g| g.as_i64().or_else(|| g.as_str()?.parse().ok()));
    if !generation_observed(generation, observed) {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for rollout spec update to be observed",
        );
    }
    let message = text("message");
    match text("phase") {
        "Healthy" => Health::new(HealthStatus::Healthy, message),
        "Paused" => Health::new(HealthStatus::Suspended, message),
        "Degraded" => Health::new(HealthStatus::Degraded, message),
        "Progressing" => Health::new(HealthStatus::Progressing, message),
        _ => Health::new(
            HealthStatus::Progressing,
            "Waiting for the rollout to report its phase",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_recorded;

    #[test]
    fn recorded_statuses() {
        assert_recorded("argo-rollout.yaml");
    }
}

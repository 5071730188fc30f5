//! CloudNativePG `Cluster` health, from the phase the operator reports: `Cluster in healthy
//! state` with its `Ready` condition True is Healthy; a phase saying the operator cannot go on
//! is Degraded; any other phase (setting up, creating replicas, switching over, upgrading) is
//! Progressing, with the ready instances counted in the message.

use serde_json::Value;

use super::conditions::condition;
use super::{Health, HealthStatus};

/// The phase of a cluster whose instances all run as intended.
const HEALTHY_PHASE: &str = "Cluster in healthy state";

/// Words of the phases in which the operator stopped.
const FAILED_PHASE_WORDS: [&str; 4] = ["cannot", "unable", "failed", "error"];

pub(super) fn assess(object: &Value) -> Health {
    let status = object.get("status");
    let phase = status
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let ready = condition(object, "Ready");
    if phase == HEALTHY_PHASE && ready.as_ref().is_none_or(|c| c.status == "True") {
        return Health::new(HealthStatus::Healthy, phase);
    }
    let lower = phase.to_ascii_lowercase();
    if FAILED_PHASE_WORDS.iter().any(|word| lower.contains(word)) {
        let reason = status
            .and_then(|s| s.get("phaseReason"))
            .and_then(Value::as_str)
            .filter(|reason| !reason.is_empty());
        let message = reason.map_or_else(|| phase.to_owned(), |r| format!("{phase}: {r}"));
        return Health::new(HealthStatus::Degraded, message);
    }
    let count = |field: &str| {
        status
            .and_then(|s| s.get(field))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let waiting = if phase.is_empty() {
        "Waiting for the operator"
    } else {
        phase
    };
    Health::new(
        HealthStatus::Progressing,
        format!(
            "{waiting} ({} of {} instances ready)",
            count("readyInstances"),
            count("instances")
        ),
    )
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_recorded;

    #[test]
    fn recorded_statuses() {
        assert_recorded("cnpg-cluster.yaml");
    }
}

//! Health of a nested Flotilla or Argo CD Application: its own `status.health`.

use serde_json::Value;

use super::{Health, HealthStatus};

pub(super) fn assess(application: &Value) -> Health {
    let health = application.pointer("/status/health");
    let message = health
        .and_then(|h| h.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match health.and_then(|h| h.get("status")).and_then(Value::as_str) {
        None => Health::new(HealthStatus::Progressing, message),
        Some(status) => match status.parse::<HealthStatus>() {
            Ok(status) => Health::new(status, message),
            Err(error) => Health::new(HealthStatus::Unknown, error.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_cases;
    use serde_json::json;

    use crate::health::HealthStatus::*;

    #[test]
    fn rules() {
        let app = |group: &str, health: serde_json::Value| {
            json!({"apiVersion": format!("{group}/v1alpha1"), "kind": "Application", "metadata": {"name": "a"},
                   "status": {"health": health}})
        };
        let cases = [
            (
                app(
                    "flotilla.dev",
                    json!({"status": "Degraded", "message": "m"}),
                ),
                Degraded,
                "m",
            ),
            (
                app("argoproj.io", json!({"status": "Healthy"})),
                Healthy,
                "",
            ),
            (app("flotilla.dev", json!(null)), Progressing, ""),
            (
                app("flotilla.dev", json!({"status": "Weird"})),
                Unknown,
                "unknown health status \"Weird\"",
            ),
        ];
        assert_cases(cases);
    }
}

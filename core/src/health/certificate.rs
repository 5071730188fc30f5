//! cert-manager `Certificate` health: being issued is Progressing, `Ready=True` Healthy,
//! `Ready=False` (issuance failed, issuer missing) Degraded, no verdict yet Progressing.

use serde_json::Value;

use super::conditions::condition;
use super::{Health, HealthStatus};

pub(super) fn assess(object: &Value) -> Health {
    if let Some(issuing) = condition(object, "Issuing").filter(|c| c.status == "True") {
        return Health::new(HealthStatus::Progressing, issuing.text());
    }
    match condition(object, "Ready") {
        Some(ready) if ready.status == "True" => Health::new(HealthStatus::Healthy, ready.text()),
        Some(ready) if ready.status == "False" => Health::new(HealthStatus::Degraded, ready.text()),
        _ => Health::new(
            HealthStatus::Progressing,
            "Waiting for the certificate to be issued",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_recorded;

    #[test]
    fn recorded_statuses() {
        assert_recorded("certificate.yaml");
    }
}

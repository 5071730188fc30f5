//! Job health: Complete, Failed and Suspended conditions.

use k8s_openapi::api::batch::v1::Job;

use super::{Health, HealthStatus};

pub(super) fn assess(job: &Job) -> Health {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_ref());
    let active = |type_: &str| {
        conditions
            .into_iter()
            .flatten()
            .find(|c| c.type_ == type_ && c.status == "True")
            .map(|c| {
                c.message
                    .clone()
                    .or_else(|| c.reason.clone())
                    .unwrap_or_default()
            })
    };
    if let Some(message) = active("Failed") {
        return Health::new(HealthStatus::Degraded, message);
    }
    if let Some(message) = active("Complete") {
        return Health::new(HealthStatus::Healthy, message);
    }
    if let Some(message) = active("Suspended") {
        return Health::new(HealthStatus::Suspended, message);
    }
    let active_pods = job.status.as_ref().and_then(|s| s.active).unwrap_or(0);
    Health::new(
        HealthStatus::Progressing,
        format!("job running, {active_pods} active pods"),
    )
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_cases;
    use serde_json::{Value, json};

    use crate::health::HealthStatus::*;

    fn job(status: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": status})
    }

    #[test]
    fn rules() {
        let condition = |t: &str, s: &str, m: &str| json!({"conditions": [{"type": t, "status": s, "message": m}]});
        let cases = [
            (
                job(json!({"active": 1})),
                Progressing,
                "job running, 1 active pods",
            ),
            (job(condition("Complete", "True", "done")), Healthy, "done"),
            (
                job(condition("Failed", "True", "BackoffLimitExceeded")),
                Degraded,
                "BackoffLimitExceeded",
            ),
            (
                job(condition("Suspended", "True", "suspended")),
                Suspended,
                "suspended",
            ),
            (
                job(condition("Complete", "False", "no")),
                Progressing,
                "job running, 0 active pods",
            ),
        ];
        assert_cases(cases);
    }
}

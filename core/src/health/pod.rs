//! Pod health (container waiting errors, phase, readiness), and the pod problems a workload's
//! health message can be enriched with (`pod shop-api-7c9 ImagePullBackOff`).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use serde_json::Value;

use super::{Health, HealthStatus};

pub(super) fn assess(pod: &Pod) -> Health {
    let status = pod.status.clone().unwrap_or_default();
    let restart_always = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .is_none_or(|policy| policy == "Always");
    let containers: Vec<&ContainerStatus> = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .collect();
    // Like Argo CD, only for restartPolicy Always: hooks (Never/OnFailure) report through phase.
    if restart_always {
        let problems: Vec<String> = containers.iter().filter_map(|c| waiting_error(c)).collect();
        if !problems.is_empty() {
            return Health::new(HealthStatus::Degraded, problems.join("; "));
        }
    }
    let message = status.message.clone().unwrap_or_default();
    match status.phase.as_deref() {
        Some("Pending") => Health::new(HealthStatus::Progressing, message),
        Some("Succeeded") => Health::new(HealthStatus::Healthy, message),
        Some("Failed") => {
            let message = if message.is_empty() {
                terminated_messages(&containers)
            } else {
                message
            };
            Health::new(HealthStatus::Degraded, message)
        }
        Some("Running") => {
            let ready = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            if restart_always && ready {
                Health::new(HealthStatus::Healthy, message)
            } else {
                Health::new(HealthStatus::Progressing, message)
            }
        }
        _ => Health::new(HealthStatus::Unknown, message),
    }
}

/// `Reason: message` of a container waiting on an error (`Err*`, `*Error`, `*BackOff`).
fn waiting_error(container: &ContainerStatus) -> Option<String> {
    let waiting = container.state.as_ref()?.waiting.as_ref()?;
    let reason = waiting.reason.as_deref()?;
    let is_error =
        reason.starts_with("Err") || reason.ends_with("Error") || reason.ends_with("BackOff");
    is_error.then(|| match waiting.message.as_deref() {
        Some(message) if !message.is_empty() => format!("{reason}: {message}"),
        _ => reason.to_owned(),
    })
}

fn terminated_messages(containers: &[&ContainerStatus]) -> String {
    containers
        .iter()
        .filter_map(|c| {
            let terminated = c.state.as_ref()?.terminated.as_ref()?;
            (terminated.exit_code != 0).then(|| {
                let reason = terminated.reason.as_deref().unwrap_or("Error");
                format!(
                    "container {} {reason} (exit code {})",
                    c.name, terminated.exit_code
                )
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Appends the problems of a workload's pods to its health message, e.g.
/// `0/3 available, pod shop-api-7c9 ImagePullBackOff`. Pods that cannot be read are ignored.
#[must_use]
pub fn with_pod_problems(health: Health, pods: &[Value]) -> Health {
    let problems: Vec<String> = pods
        .iter()
        .filter_map(|pod| serde_json::from_value::<Pod>(pod.clone()).ok())
        .filter_map(|pod| {
            let status = pod.status?;
            let reasons: Vec<String> = status
                .init_container_statuses
                .iter()
                .flatten()
                .chain(status.container_statuses.iter().flatten())
                .filter_map(|c| {
                    let waiting = c.state.as_ref()?.waiting.as_ref()?;
                    waiting_error(c).map(|_| waiting.reason.clone().unwrap_or_default())
                })
                .collect();
            (!reasons.is_empty()).then(|| {
                format!(
                    "pod {} {}",
                    pod.metadata.name.unwrap_or_default(),
                    reasons.join(",")
                )
            })
        })
        .collect();
    if problems.is_empty() {
        return health;
    }
    let message = if health.message.is_empty() {
        problems.join(", ")
    } else {
        format!("{}, {}", health.message, problems.join(", "))
    };
    Health::new(health.status, message)
}

#[cfg(test)]
mod tests {
    use crate::health::cases::assert_cases;
    use serde_json::{Value, json};

    use super::*;
    use crate::health::HealthStatus::*;

    fn pod(restart: &str, status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shop-api-7c9"},
               "spec": {"restartPolicy": restart, "containers": []}, "status": status})
    }

    fn waiting(reason: &str) -> Value {
        json!({"phase": "Pending", "containerStatuses": [{"name": "app", "image": "i", "imageID": "",
               "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason}}}]})
    }

    #[test]
    fn rules() {
        let ready =
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
        let failed = json!({"phase": "Failed", "containerStatuses": [{"name": "m", "image": "i", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]});
        let cases = [
            (
                pod("Always", waiting("ImagePullBackOff")),
                Degraded,
                "ImagePullBackOff",
            ),
            (
                pod("Always", waiting("CreateContainerConfigError")),
                Degraded,
                "CreateContainerConfigError",
            ),
            (pod("Never", waiting("ImagePullBackOff")), Progressing, ""),
            (pod("Always", waiting("ContainerCreating")), Progressing, ""),
            (pod("Always", ready.clone()), Healthy, ""),
            (pod("Never", ready), Progressing, ""),
            (pod("Always", json!({"phase": "Running"})), Progressing, ""),
            (pod("Never", json!({"phase": "Succeeded"})), Healthy, ""),
            (
                pod("Never", failed),
                Degraded,
                "container m Error (exit code 2)",
            ),
            (
                pod("Never", json!({"phase": "Failed", "message": "evicted"})),
                Degraded,
                "evicted",
            ),
            (pod("Always", json!({})), Unknown, ""),
        ];
        assert_cases(cases);
    }

    #[test]
    fn workload_message_names_failing_pods() {
        let health = Health::new(Degraded, "0/3 available");
        let pods = [
            pod("Always", waiting("ImagePullBackOff")),
            pod("Always", waiting("ContainerCreating")),
        ];
        assert_eq!(
            with_pod_problems(health.clone(), &pods).message,
            "0/3 available, pod shop-api-7c9 ImagePullBackOff"
        );
        assert_eq!(with_pod_problems(health.clone(), &pods[1..]), health);
    }
}

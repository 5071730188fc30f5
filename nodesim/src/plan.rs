//! What the simulated kubelet does next with one pod: bind it, delete it, report a new status,
//! or nothing. Pure: the caller supplies the clock.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use super::placement::{NodeView, fits};
use super::pod_status::{Placement, RestartPolicy, Stage, observed_stage, pod_status, stage};
use flotilla_core::simulated_pod::{Behavior, BehaviorError};

/// The next step for a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Nothing to do (not ours, terminal, or already reporting the right stage).
    Nothing,
    /// Unscheduled and fits: bind it to the node (`pods/binding`).
    Bind,
    /// Terminating on our node: delete it with grace period 0, as a kubelet does once containers
    /// have stopped.
    Delete,
    /// Write this status (merge patch on `/status`).
    Report(Stage, Box<PodStatus>),
}

/// The node-side facts the plan needs besides the pod.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The simulated node.
    pub node: NodeView<'a>,
    /// Time since the simulator first saw the pod bound to the node.
    pub elapsed: Duration,
    /// Status placement (addresses, start time, now).
    pub placement: Placement,
    /// Start delay for pods without `sim.flotilla.dev/ready-after`.
    pub default_ready_after: Duration,
    /// A dedicated node binds no pod: it runs those that name it in `spec.nodeName`.
    pub dedicated: bool,
}

/// Decides the next step for `pod`.
///
/// # Errors
/// [`BehaviorError`] when a pod bound to the node carries an unreadable `sim.flotilla.dev/*`
/// annotation.
pub fn plan(pod: &Pod, context: &Context<'_>) -> Result<Action, BehaviorError> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(Action::Nothing);
    };
    let terminating = pod.metadata.deletion_timestamp.is_some();
    match spec.node_name.as_deref() {
        None if !terminating && !context.dedicated && fits(spec, &context.node) => {
            return Ok(Action::Bind);
        }
        Some(node) if node == context.node.name => {}
        _ => return Ok(Action::Nothing),
    }
    if terminating {
        return Ok(Action::Delete);
    }
    let current = pod.status.as_ref();
    if current
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed")
    {
        return Ok(Action::Nothing);
    }
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let behavior = Behavior::from_annotations(&annotations, context.default_ready_after)?;
    let desired = stage(behavior, RestartPolicy::of(spec), context.elapsed);
    if current.and_then(observed_stage) == Some(desired) {
        return Ok(Action::Nothing);
    }
    Ok(Action::Report(
        desired,
        Box::new(pod_status(desired, spec, &context.placement)),
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    fn context(labels: &BTreeMap<String, String>, elapsed_ms: u64) -> Context<'_> {
        Context {
            node: NodeView {
                name: "sim",
                labels,
            },
            elapsed: Duration::from_millis(elapsed_ms),
            placement: Placement {
                host_ip: "127.0.0.1".to_owned(),
                pod_ip: "10.244.0.2".to_owned(),
                start_time: Timestamp::UNIX_EPOCH,
                now: Timestamp::UNIX_EPOCH,
            },
            default_ready_after: Duration::from_secs(1),
            dedicated: false,
        }
    }

    fn kind(action: &Action) -> String {
        match action {
            Action::Report(stage, _) => format!("Report({stage:?})"),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn decides_by_binding_deletion_phase_and_time() {
        let labels = BTreeMap::new();
        let running = serde_json::to_value(pod_status(
            Stage::Running,
            &serde_json::from_value(serde_json::json!({"containers": [{"name": "app"}]})).unwrap(),
            &context(&labels, 0).placement,
        ))
        .unwrap();
        let base = |node: Option<&str>, extra: serde_json::Value| {
            let mut value = serde_json::json!({
                "metadata": {"name": "p", "namespace": "ns"},
                "spec": {"containers": [{"name": "app"}], "nodeName": node},
            });
            for (key, field) in extra.as_object().unwrap() {
                value
                    .as_object_mut()
                    .unwrap()
                    .insert(key.clone(), field.clone());
            }
            pod(value)
        };
        let deleted = serde_json::json!({"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"}});
        let failing = serde_json::json!({"metadata": {"name": "p", "annotations": {"sim.flotilla.dev/fail": "true"}}});
        let cases = [
            (base(None, serde_json::json!({})), 0, "Bind"),
            (base(None, deleted.clone()), 0, "Nothing"),
            (
                base(Some("elsewhere"), serde_json::json!({})),
                5_000,
                "Nothing",
            ),
            (base(Some("sim"), deleted), 0, "Delete"),
            (
                base(Some("sim"), serde_json::json!({})),
                0,
                "Report(Starting)",
            ),
            (
                base(Some("sim"), serde_json::json!({})),
                1_000,
                "Report(Running)",
            ),
            (
                base(Some("sim"), serde_json::json!({"status": running})),
                1_000,
                "Nothing",
            ),
            (base(Some("sim"), failing), 1_000, "Report(CrashLooping)"),
            (
                base(
                    Some("sim"),
                    serde_json::json!({"status": {"phase": "Succeeded"}}),
                ),
                1_000,
                "Nothing",
            ),
        ];
        for (pod, elapsed, expected) in cases {
            let action = plan(&pod, &context(&labels, elapsed)).unwrap();
            assert_eq!(kind(&action), expected, "{pod:?} after {elapsed}ms");
        }
        let dedicated = Context {
            dedicated: true,
            ..context(&labels, 0)
        };
        let unbound = base(None, serde_json::json!({}));
        assert_eq!(kind(&plan(&unbound, &dedicated).unwrap()), "Nothing");
    }

    #[test]
    fn unreadable_annotation_on_our_pod_is_an_error() {
        let labels = BTreeMap::new();
        let pod = pod(serde_json::json!({
            "metadata": {"name": "p", "annotations": {"sim.flotilla.dev/ready-after": "later"}},
            "spec": {"containers": [{"name": "app"}], "nodeName": "sim"},
        }));
        assert!(plan(&pod, &context(&labels, 0)).is_err());
    }
}

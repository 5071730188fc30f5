//! The simulated Node: its manifest (labels, capacity, a Ready condition) and its registration
//! and heartbeat against the API server.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeStatus,
    NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use super::error::NodeSimError;

/// The address the node reports (pods' `status.hostIP`).
pub const HOST_IP: &str = "127.0.0.1";
/// Label marking nodes created by the simulator.
pub const SIMULATED_LABEL: &str = "sim.flotilla.dev/simulated";
/// The `NoSchedule` taint of a dedicated node (one that runs only the pods naming it in
/// `spec.nodeName`), so that DaemonSets leave it alone.
pub const DEDICATED_TAINT: &str = "sim.flotilla.dev/dedicated";

/// The labels of the simulated node (what `nodeSelector`s are matched against).
#[must_use]
pub fn node_labels(name: &str) -> BTreeMap<String, String> {
    [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        (SIMULATED_LABEL, "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The Node object to create.
#[must_use]
pub fn node_manifest(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(node_labels(name)),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

/// A Ready status with generous capacity, heartbeat at `now`, its kubelet endpoint on
/// `kubelet_port`.
#[must_use]
pub fn node_status(now: Timestamp, kubelet_port: u16) -> NodeStatus {
    let resources: BTreeMap<String, Quantity> = [
        ("cpu", "64"),
        ("memory", "256Gi"),
        ("pods", "1000"),
        ("ephemeral-storage", "1Ti"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), Quantity(v.to_owned())))
    .collect();
    let condition = |type_: &str, status: &str, reason: &str| NodeCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        last_heartbeat_time: Some(Time(now)),
        ..NodeCondition::default()
    };
    NodeStatus {
        capacity: Some(resources.clone()),
        allocatable: Some(resources),
        conditions: Some(vec![
            condition("Ready", "True", "KubeletReady"),
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID"),
        ]),
        addresses: Some(vec![NodeAddress {
            type_: "InternalIP".to_owned(),
            address: HOST_IP.to_owned(),
        }]),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint {
                port: i32::from(kubelet_port),
            }),
        }),
        node_info: Some(NodeSystemInfo {
            architecture: "amd64".to_owned(),
            operating_system: "linux".to_owned(),
            os_image: "flotilla-node-sim".to_owned(),
            // Not a kubelet: the node names the simulator's own version.
            kubelet_version: concat!("v", env!("CARGO_PKG_VERSION"), "-node-sim").to_owned(),
            container_runtime_version: "sim://1".to_owned(),
            ..NodeSystemInfo::default()
        }),
        ..NodeStatus::default()
    }
}

/// The node's taints: none, or the [`DEDICATED_TAINT`] of a dedicated node.
#[must_use]
pub fn taints(dedicated: bool) -> serde_json::Value {
    if dedicated {
        serde_json::json!([{"key": DEDICATED_TAINT, "value": "true", "effect": "NoSchedule"}])
    } else {
        serde_json::Value::Null
    }
}

/// Creates the node if absent, sets its taints ([`taints`]), then marks it Ready with its
/// kubelet endpoint on `kubelet_port`.
///
/// The API server's `TaintNodesByCondition` admission taints new nodes
/// `node.kubernetes.io/not-ready:NoSchedule`; the node lifecycle controller that would lift it is
/// not running on the test control plane, and DaemonSets do not tolerate it.
///
/// # Errors
/// [`NodeSimError::RegisterNode`] when the API server refuses.
pub async fn register(
    api: &Api<Node>,
    name: &str,
    dedicated: bool,
    kubelet_port: u16,
) -> Result<(), NodeSimError> {
    match api
        .create(&PostParams::default(), &node_manifest(name))
        .await
    {
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(source) => {
            return Err(NodeSimError::RegisterNode {
                node: name.to_owned(),
                error: source.into(),
            });
        }
        Ok(_) => {}
    }
    let untaint = serde_json::json!({ "spec": { "taints": taints(dedicated) } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&untaint))
        .await
        .map_err(|source| NodeSimError::RegisterNode {
            node: name.to_owned(),
            error: source.into(),
        })?;
    heartbeat(api, name, kubelet_port).await
}

/// Rewrites the node's Ready status with a fresh heartbeat time (merge patch on `/status`).
///
/// # Errors
/// [`NodeSimError::RegisterNode`] when the API server refuses.
pub async fn heartbeat(api: &Api<Node>, name: &str, kubelet_port: u16) -> Result<(), NodeSimError> {
    let patch = serde_json::json!({ "status": node_status(Timestamp::now(), kubelet_port) });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|source| NodeSimError::RegisterNode {
            node: name.to_owned(),
            error: source.into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_ready_with_capacity_and_fresh_heartbeat() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let status = node_status(now, 10250);
        assert_eq!(
            status
                .daemon_endpoints
                .as_ref()
                .and_then(|d| d.kubelet_endpoint.as_ref())
                .map(|k| k.port),
            Some(10250)
        );
        let ready = status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(ready.status, "True");
        assert_eq!(ready.last_heartbeat_time, Some(Time(now)));
        assert_eq!(
            status.allocatable.unwrap()["pods"],
            Quantity("1000".to_owned())
        );
        let manifest = node_manifest("sim-1");
        assert_eq!(
            manifest.metadata.labels.unwrap()["kubernetes.io/hostname"],
            "sim-1"
        );
    }
}

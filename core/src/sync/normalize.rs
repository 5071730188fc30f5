//! Normalising a desired object before it is written: ports without a `protocol` get `TCP`, the
//! API server's default. `protocol` is part of the list key of Service ports and container ports,
//! so the live object's managed fields name each port with it (`k:{"port":80,"protocol":"TCP"}`):
//! an explicit value makes the desired object comparable with the live one, item by item.

use serde_json::Value;

/// The protocol the API server defaults ports to.
const DEFAULT_PROTOCOL: &str = "TCP";

/// Sets `protocol: TCP` on every Service port and on every container port of a pod spec (Pod,
/// workload templates, CronJob job templates) that does not name a protocol. Other kinds are
/// left alone.
pub fn normalize(object: &mut Value) {
    let group = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .map_or("", crate::manifest::group_of)
        .to_owned();
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match (group.as_str(), kind.as_str()) {
        ("", "Service") => default_protocols(object.pointer_mut("/spec/ports")),
        ("", "Pod") => pod_spec(object.pointer_mut("/spec")),
        ("", "ReplicationController" | "PodTemplate")
        | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job") => pod_spec(object.pointer_mut("/spec/template/spec")),
        ("batch", "CronJob") => {
            pod_spec(object.pointer_mut("/spec/jobTemplate/spec/template/spec"))
        }
        _ => {}
    }
}

fn pod_spec(spec: Option<&mut Value>) {
    let Some(spec) = spec.and_then(Value::as_object_mut) else {
        return;
    };
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let containers = spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten();
        for container in containers {
            default_protocols(container.get_mut("ports"));
        }
    }
}

fn default_protocols(ports: Option<&mut Value>) {
    let ports = ports
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut);
    for port in ports {
        let missing = port.get("protocol").is_none_or(Value::is_null);
        if missing {
            port.insert(
                "protocol".to_owned(),
                Value::String(DEFAULT_PROTOCOL.to_owned()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ports(protocol: Option<&str>) -> Value {
        match protocol {
            Some(protocol) => {
                json!([{"port": 53, "protocol": protocol}, {"port": 80, "protocol": "TCP"}])
            }
            None => json!([{"port": 53}, {"port": 80, "protocol": null}]),
        }
    }

    #[test]
    fn defaults_missing_protocols_where_the_server_does() {
        let container = |ports: Value| json!({"name": "c", "image": "i", "ports": ports});
        let pod_spec = |ports: Value| json!({"initContainers": [container(ports.clone())], "containers": [container(ports)]});
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": ports(None)}}),
                "/spec/ports",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "spec": pod_spec(ports(None))}),
                "/spec/containers/0/ports",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "spec": pod_spec(ports(None))}),
                "/spec/initContainers/0/ports",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "spec": {"template": {"spec": pod_spec(ports(None))}}}),
                "/spec/template/spec/containers/0/ports",
            ),
            (
                json!({"apiVersion": "batch/v1", "kind": "Job",
                       "spec": {"template": {"spec": pod_spec(ports(None))}}}),
                "/spec/template/spec/containers/0/ports",
            ),
            (
                json!({"apiVersion": "batch/v1beta1", "kind": "CronJob",
                       "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec(ports(None))}}}}}),
                "/spec/jobTemplate/spec/template/spec/containers/0/ports",
            ),
        ];
        for (mut object, path) in cases {
            normalize(&mut object);
            let expected =
                json!([{"port": 53, "protocol": "TCP"}, {"port": 80, "protocol": "TCP"}]);
            assert_eq!(object.pointer(path), Some(&expected), "{path}");
        }
    }

    #[test]
    fn keeps_written_protocols_and_other_kinds() {
        let mut service = json!({"apiVersion": "v1", "kind": "Service",
                                 "spec": {"ports": ports(Some("UDP"))}});
        normalize(&mut service);
        assert_eq!(service["spec"]["ports"], ports(Some("UDP")));
        let untouched = [
            json!({"apiVersion": "example.com/v1", "kind": "Service", "spec": {"ports": ports(None)}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"ports": "53"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": "not an object"}),
            json!({"kind": "Service"}),
        ];
        for object in untouched {
            let mut normalized = object.clone();
            normalize(&mut normalized);
            assert_eq!(normalized, object);
        }
    }
}

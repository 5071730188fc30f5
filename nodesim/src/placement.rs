//! Whether a pending pod may be bound to the simulated node: its `nodeSelector` and its required
//! node affinity (as the DaemonSet controller writes it) are checked against the node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, PodSpec};

/// The node properties scheduling constraints refer to.
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.labels`.
    pub labels: &'a BTreeMap<String, String>,
}

/// True when `spec` may run on `node`. Operators the simulator does not evaluate (`Gt`, `Lt`)
/// never match, so such pods stay pending rather than land on the wrong node.
#[must_use]
pub fn fits(spec: &PodSpec, node: &NodeView<'_>) -> bool {
    let selector_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(key, value)| node.labels.get(key) == Some(value));
    let required_terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|selector| selector.node_selector_terms.as_slice());
    let affinity_ok =
        required_terms.is_none_or(|terms| terms.iter().any(|term| term_matches(term, node)));
    selector_ok && affinity_ok
}

fn term_matches(term: &NodeSelectorTerm, node: &NodeView<'_>) -> bool {
    let fields = term.match_fields.iter().flatten().all(|r| {
        let value = (r.key == "metadata.name").then_some(node.name);
        requirement_matches(r, value)
    });
    let labels = term
        .match_expressions
        .iter()
        .flatten()
        .all(|r| requirement_matches(r, node.labels.get(&r.key).map(String::as_str)));
    fields && labels
}

fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let listed = || value.is_some_and(|v| requirement.values.iter().flatten().any(|x| x == v));
    match requirement.operator.as_str() {
        "In" => listed(),
        "NotIn" => !listed(),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: serde_json::Value) -> PodSpec {
        let mut spec = serde_json::json!({"containers": [{"name": "app"}]});
        spec.as_object_mut()
            .unwrap()
            .extend(value.as_object().unwrap().clone());
        serde_json::from_value(spec).unwrap()
    }

    fn affinity(requirement: serde_json::Value, kind: &str) -> serde_json::Value {
        serde_json::json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{kind: [requirement]}]}}}})
    }

    #[test]
    fn checks_selector_and_required_affinity() {
        let labels = BTreeMap::from([("kubernetes.io/os".to_owned(), "linux".to_owned())]);
        let node = NodeView {
            name: "sim",
            labels: &labels,
        };
        let name_in = |v: &str| {
            affinity(
                serde_json::json!({"key": "metadata.name", "operator": "In", "values": [v]}),
                "matchFields",
            )
        };
        let label = |op: &str| {
            affinity(
                serde_json::json!({"key": "kubernetes.io/os", "operator": op, "values": ["linux"]}),
                "matchExpressions",
            )
        };
        let cases = [
            (serde_json::json!({}), true),
            (
                serde_json::json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
                true,
            ),
            (
                serde_json::json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
                false,
            ),
            (name_in("sim"), true),
            (name_in("other"), false),
            (label("In"), true),
            (label("NotIn"), false),
            (label("Exists"), true),
            (label("DoesNotExist"), false),
            (label("Gt"), false),
        ];
        for (extra, expected) in cases {
            assert_eq!(fits(&spec(extra.clone()), &node), expected, "{extra}");
        }
    }
}

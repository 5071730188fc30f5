//! The `clusterDecisionResource` generator (Argo CD's duck-typed cluster decisions): the
//! ConfigMap `configMapRef` names a kind (`apiVersion`, `kind`), the list in the resources'
//! status holding the decisions (`statusListKey`, `clusters` by default) and the entry field
//! naming a cluster (`matchKey`). The resources are the one called `name`, or those matching
//! `labelSelector`; each decision whose `matchKey` value is the name of a known cluster yields
//! that cluster's parameters (as the clusters generator gives them), the decision's own fields,
//! and templated `values`. Decisions naming no known cluster are skipped, as in Argo CD.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::clusters::cluster_params;
use crate::generator::{
    GenerateContext, Generator, GeneratorError, GeneratorErrorReason, add_templated_values,
};
use crate::params::{Params, format_scalar};
use crate::source::{Cluster, IN_CLUSTER_SERVER, ObjectsError};
use crate::spec::ClusterDecisionResourceGenerator;

/// The status list read when the ConfigMap sets no `statusListKey`, as in Argo CD.
pub const DEFAULT_STATUS_LIST_KEY: &str = "clusters";

impl Generator for ClusterDecisionResourceGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let objects = ctx.namespace().objects;
        let config_map = self.config_map_ref.clone();
        let resource_error = |message: String| {
            GeneratorError::here(GeneratorErrorReason::DecisionResource {
                config_map: config_map.clone(),
                message,
            })
        };
        let config_error = |source| {
            GeneratorError::here(GeneratorErrorReason::DecisionConfig {
                config_map: config_map.clone(),
                source: Box::new(source),
            })
        };
        let config = objects.config_map(&config_map).map_err(config_error)?;
        let entry = |key: &str| {
            config
                .get(key)
                .filter(|value| !value.is_empty())
                .ok_or_else(|| {
                    config_error(ObjectsError::MissingKey {
                        kind: "ConfigMap".into(),
                        name: config_map.clone(),
                        key: key.into(),
                    })
                })
        };
        let (api_version, kind, match_key) =
            (entry("apiVersion")?, entry("kind")?, entry("matchKey")?);
        let list_key = config
            .get("statusListKey")
            .filter(|key| !key.is_empty())
            .map_or(DEFAULT_STATUS_LIST_KEY, String::as_str);
        if self.name.is_empty() && self.label_selector.is_none() {
            return Err(resource_error(
                "set name or labelSelector to choose the resources".into(),
            ));
        }
        let resources = objects.list(api_version, kind).map_err(config_error)?;
        let clusters = known_clusters(ctx)?;
        let mut sets = Vec::new();
        for resource in resources {
            if !self
                .selects(&resource)
                .map_err(|e| e.within("labelSelector"))?
            {
                continue;
            }
            let decisions = match resource.pointer(&format!("/status/{list_key}")) {
                None | Some(Value::Null) => continue,
                Some(Value::Array(decisions)) => decisions,
                Some(_) => {
                    return Err(resource_error(format!(
                        "{kind} {}: status.{list_key} is not a list",
                        name_of(&resource)
                    )));
                }
            };
            for decision in decisions {
                let Some(fields) = decision.as_object() else {
                    continue;
                };
                let Some(cluster) = fields
                    .get(match_key.as_str())
                    .and_then(Value::as_str)
                    .and_then(|wanted| clusters.get(wanted))
                else {
                    continue;
                };
                let mut params = cluster_params(cluster, ctx.mode());
                for (key, value) in fields {
                    params.insert(key.clone(), Value::String(format_scalar(value)));
                }
                add_templated_values(&self.values, &mut params, ctx)?;
                sets.push(params);
            }
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

impl ClusterDecisionResourceGenerator {
    /// Whether `resource` is one this generator reads: the one named `name`, else those matching
    /// `labelSelector`.
    fn selects(&self, resource: &Value) -> Result<bool, GeneratorError> {
        if !self.name.is_empty() {
            return Ok(name_of(resource) == self.name);
        }
        let Some(selector) = &self.label_selector else {
            return Ok(false);
        };
        let labels: BTreeMap<String, String> = resource
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .map(|(k, v)| (k.clone(), format_scalar(v)))
                    .collect()
            })
            .unwrap_or_default();
        selector.matches(&labels).map_err(GeneratorError::here)
    }
}

/// The inventory's clusters by name, with the implicit `in-cluster` unless one is registered
/// with its address.
fn known_clusters(ctx: &GenerateContext<'_>) -> Result<BTreeMap<String, Cluster>, GeneratorError> {
    let mut clusters = ctx.clusters().clusters().map_err(GeneratorError::here)?;
    if !clusters.iter().any(|c| c.server == IN_CLUSTER_SERVER) {
        clusters.push(Cluster::in_cluster());
    }
    Ok(clusters.into_iter().map(|c| (c.name.clone(), c)).collect())
}

fn name_of(resource: &Value) -> &str {
    resource
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::generator::{GenerateContext, GeneratorError, NamespaceSources, generate};
    use crate::params::Params;
    use crate::source::Offline;
    use crate::spec::GeneratorSpec;
    use crate::template::Renderer;
    use crate::testing::{MemoryGit, MemoryInventory, MemoryObjects, cluster, fast, go, params};

    const API: &str = "cluster.open-cluster-management.io/v1beta1";

    fn decision(name: &str, labels: Value, clusters: &[&str]) -> Value {
        let decisions: Vec<Value> = clusters
            .iter()
            .map(|c| json!({"clusterName": c, "reason": "chosen"}))
            .collect();
        json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"decisions": decisions},
        })
    }

    fn objects() -> MemoryObjects {
        MemoryObjects::default()
            .with_config_map(
                "ocm-placement",
                &[
                    ("apiVersion", API),
                    ("kind", "PlacementDecision"),
                    ("statusListKey", "decisions"),
                    ("matchKey", "clusterName"),
                ],
            )
            .with_resource(
                API,
                "PlacementDecision",
                decision(
                    "all",
                    json!({"placement": "all"}),
                    &["east", "west", "unknown"],
                ),
            )
            .with_resource(
                API,
                "PlacementDecision",
                decision("eu", json!({"placement": "eu"}), &["west"]),
            )
    }

    fn run(
        renderer: &Renderer,
        objects: &MemoryObjects,
        spec: Value,
    ) -> Result<Vec<Params>, GeneratorError> {
        let spec: GeneratorSpec = serde_json::from_value(spec).unwrap();
        let inventory = MemoryInventory(vec![
            cluster("east", "https://east", &[("env", "prod")]),
            cluster("west", "https://west", &[]),
        ]);
        let git = MemoryGit::default();
        let ctx =
            GenerateContext::new(renderer, &inventory, &git).with_namespace(NamespaceSources {
                appset: "fleet",
                objects,
                plugins: &Offline,
                scm: &Offline,
            });
        Ok(generate(&spec, &ctx)?
            .into_iter()
            .map(|s| s.params)
            .collect())
    }

    fn names(sets: &[Params]) -> Vec<String> {
        sets.iter()
            .map(|p| {
                p.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn decisions_naming_known_clusters_yield_their_parameters() {
        let spec = json!({"clusterDecisionResource": {
            "configMapRef": "ocm-placement",
            "name": "all",
            "values": {"where": "{{name}}-{{reason}}"},
        }});
        let sets = run(&fast(), &objects(), spec).unwrap();
        assert_eq!(names(&sets), ["east", "west"]);
        assert_eq!(
            sets[0],
            params(json!({
                "name": "east",
                "nameNormalized": "east",
                "server": "https://east",
                "project": "",
                "metadata.labels.env": "prod",
                "clusterName": "east",
                "reason": "chosen",
                "values.where": "east-chosen",
            }))
        );
    }

    #[test]
    fn a_label_selector_picks_the_resources() {
        let spec = json!({"clusterDecisionResource": {
            "configMapRef": "ocm-placement",
            "labelSelector": {"matchLabels": {"placement": "eu"}},
        }});
        let sets = run(&go(), &objects(), spec).unwrap();
        assert_eq!(names(&sets), ["west"]);
        assert_eq!(sets[0].get("metadata"), Some(&json!({})));

        let every = json!({"clusterDecisionResource": {
            "configMapRef": "ocm-placement",
            "labelSelector": {"matchExpressions": [{"key": "placement", "operator": "Exists"}]},
        }});
        assert_eq!(
            names(&run(&go(), &objects(), every).unwrap()),
            ["east", "west", "west"]
        );
    }

    #[test]
    fn the_default_status_list_is_clusters_and_missing_status_is_empty() {
        let objects = MemoryObjects::default()
            .with_config_map(
                "cm",
                &[("apiVersion", "v1"), ("kind", "Thing"), ("matchKey", "name")],
            )
            .with_resource("v1", "Thing", json!({"metadata": {"name": "t"}, "status": {"clusters": [{"name": "in-cluster"}]}}))
            .with_resource("v1", "Thing", json!({"metadata": {"name": "u"}}));
        let t = json!({"clusterDecisionResource": {"configMapRef": "cm", "name": "t"}});
        assert_eq!(names(&run(&go(), &objects, t).unwrap()), ["in-cluster"]);
        let u = json!({"clusterDecisionResource": {"configMapRef": "cm", "name": "u"}});
        assert_eq!(run(&go(), &objects, u).unwrap(), vec![]);
    }

    #[test]
    fn errors_name_the_config_map_and_what_is_wrong() {
        let cases = [
            (
                json!({"clusterDecisionResource": {"configMapRef": "missing", "name": "all"}}),
                objects(),
                "clusterDecisionResource: clusterDecisionResource missing: ConfigMap missing not found",
            ),
            (
                json!({"clusterDecisionResource": {"configMapRef": "ocm-placement"}}),
                objects(),
                "set name or labelSelector",
            ),
            (
                json!({"clusterDecisionResource": {"configMapRef": "cm", "name": "x"}}),
                MemoryObjects::default()
                    .with_config_map("cm", &[("apiVersion", "v1"), ("kind", "Thing")]),
                "clusterDecisionResource cm: ConfigMap cm has no key \"matchKey\"",
            ),
            (
                json!({"clusterDecisionResource": {"configMapRef": "cm", "name": "t"}}),
                MemoryObjects::default()
                    .with_config_map(
                        "cm",
                        &[
                            ("apiVersion", "v1"),
                            ("kind", "Thing"),
                            ("matchKey", "name"),
                        ],
                    )
                    .with_resource(
                        "v1",
                        "Thing",
                        json!({"metadata": {"name": "t"}, "status": {"clusters": "east"}}),
                    ),
                "Thing t: status.clusters is not a list",
            ),
        ];
        for (spec, objects, expected) in cases {
            let err = run(&go(), &objects, spec).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
    }
}

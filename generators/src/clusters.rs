//! The `clusters` generator: one parameter set per inventory cluster whose labels match
//! `selector`, plus the implicit `in-cluster` when no cluster has its server address and the
//! selector is empty (as in Argo CD). Parameters: `name`, `nameNormalized`, `server`, `project`
//! (`""` when the cluster has none), the cluster's labels and annotations under `metadata`, and
//! templated `values`. With `flatList: true` there is one parameter set, `clusters`: the list of
//! every matching cluster's parameters (nested maps, as Argo CD passes them).

use serde_json::{Map, Value};

use crate::generator::{GenerateContext, Generator, GeneratorError, add_templated_values};
use crate::params::{Params, normalize_name};
use crate::source::{Cluster, IN_CLUSTER_SERVER};
use crate::spec::ClusterGenerator;
use crate::template::TemplateMode;

impl Generator for ClusterGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let mut clusters = ctx.clusters().clusters().map_err(GeneratorError::here)?;
        let selector_is_empty = self
            .selector
            .as_ref()
            .is_none_or(|s| s.match_labels.is_empty() && s.match_expressions.is_empty());
        if selector_is_empty && !clusters.iter().any(|c| c.server == IN_CLUSTER_SERVER) {
            clusters.insert(0, Cluster::in_cluster());
        }
        let mut sets = Vec::new();
        for cluster in clusters {
            if let Some(selector) = &self.selector
                && !selector
                    .matches(&cluster.labels)
                    .map_err(|e| GeneratorError::here(e).within("selector"))?
            {
                continue;
            }
            let mut params = cluster_params(&cluster, ctx.mode());
            add_templated_values(&self.values, &mut params, ctx)?;
            sets.push(params);
        }
        if self.flat_list {
            let clusters = sets
                .iter()
                .map(|set| {
                    let map = set.iter().map(|(k, v)| (k.to_string(), v.clone()));
                    Value::Object(map.collect())
                })
                .collect();
            let mut flat = Params::new();
            flat.insert("clusters".into(), Value::Array(clusters));
            return Ok(vec![flat]);
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

pub(crate) fn cluster_params(cluster: &Cluster, mode: &TemplateMode) -> Params {
    let mut params = Params::new();
    params.insert("name".into(), cluster.name.clone().into());
    params.insert(
        "nameNormalized".into(),
        normalize_name(&cluster.name).into(),
    );
    params.insert("server".into(), cluster.server.clone().into());
    params.insert(
        "project".into(),
        cluster.project.clone().unwrap_or_default().into(),
    );
    let metadata = [
        ("labels", &cluster.labels),
        ("annotations", &cluster.annotations),
    ];
    match mode {
        TemplateMode::Fast => {
            for (group, entries) in metadata {
                for (key, value) in entries {
                    params.insert(format!("metadata.{group}.{key}"), value.clone().into());
                }
            }
        }
        TemplateMode::Go { .. } => {
            let nested: Map<String, Value> = metadata
                .into_iter()
                .filter(|(_, entries)| !entries.is_empty())
                .map(|(group, entries)| {
                    let map = entries
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect();
                    (group.to_string(), Value::Object(map))
                })
                .collect();
            params.insert("metadata".into(), Value::Object(nested));
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::generator::GeneratorErrorReason;
    use crate::selector::SelectorError;
    use crate::source::Cluster;
    use crate::testing::{MemoryGit, MemoryInventory, cluster, fast, go, params, run_with};

    fn inventory() -> MemoryInventory {
        let mut prod = cluster("Prod_EU", "https://prod.eu", &[("env", "prod")]);
        prod.project = Some("platform".into());
        prod.annotations.insert("owner".into(), "team-a".into());
        MemoryInventory(vec![
            prod,
            cluster("staging", "https://staging", &[("env", "staging")]),
        ])
    }

    fn names(sets: &[crate::params::Params]) -> Vec<String> {
        sets.iter()
            .map(|p| p["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn fasttemplate_params_are_flat() {
        let spec = json!({"clusters": {"selector": {"matchLabels": {"env": "prod"}}}});
        let sets = run_with(&fast(), &inventory(), &MemoryGit::default(), &spec).unwrap();
        assert_eq!(
            sets,
            vec![params(json!({
                "name": "Prod_EU",
                "nameNormalized": "prod-eu",
                "server": "https://prod.eu",
                "project": "platform",
                "metadata.labels.env": "prod",
                "metadata.annotations.owner": "team-a",
            }))]
        );
    }

    #[test]
    fn gotemplate_params_nest_metadata() {
        let spec = json!({"clusters": {"selector": {"matchLabels": {"env": "prod"}}}});
        let sets = run_with(&go(), &inventory(), &MemoryGit::default(), &spec).unwrap();
        assert_eq!(
            sets,
            vec![params(json!({
                "name": "Prod_EU",
                "nameNormalized": "prod-eu",
                "server": "https://prod.eu",
                "project": "platform",
                "metadata": {"labels": {"env": "prod"}, "annotations": {"owner": "team-a"}},
            }))]
        );
    }

    #[test]
    fn in_cluster_is_implicit_only_for_selectorless_generators() {
        let git = MemoryGit::default();
        let all = run_with(&fast(), &inventory(), &git, &json!({"clusters": {}})).unwrap();
        assert_eq!(names(&all), ["in-cluster", "Prod_EU", "staging"]);
        assert_eq!(
            all[0],
            params(
                json!({"name": "in-cluster", "nameNormalized": "in-cluster", "server": "https://kubernetes.default.svc", "project": ""})
            )
        );

        let not_staging = json!({"clusters": {"selector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["staging"]}]}}});
        assert_eq!(
            names(&run_with(&fast(), &inventory(), &git, &not_staging).unwrap()),
            ["Prod_EU"]
        );

        // A registered cluster with the in-cluster address replaces the implicit one.
        let mut registered = inventory();
        registered.0.push(Cluster {
            name: "local".into(),
            server: "https://kubernetes.default.svc".into(),
            ..Cluster::default()
        });
        assert_eq!(
            names(&run_with(&fast(), &registered, &git, &json!({"clusters": {}})).unwrap()),
            ["Prod_EU", "staging", "local"]
        );
    }

    #[test]
    fn flat_list_gives_one_set_of_every_cluster() {
        let spec = json!({"clusters": {"flatList": true, "values": {"team": "a"}}});
        let sets = run_with(&go(), &inventory(), &MemoryGit::default(), &spec).unwrap();
        assert_eq!(sets.len(), 1);
        let clusters = sets[0]["clusters"].as_array().unwrap();
        let names: Vec<&str> = clusters
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["in-cluster", "Prod_EU", "staging"]);
        assert_eq!(clusters[1]["project"], json!("platform"));
        assert_eq!(clusters[2]["project"], json!(""));
        assert_eq!(clusters[2]["values"], json!({"team": "a"}));

        let none =
            json!({"clusters": {"flatList": true, "selector": {"matchLabels": {"env": "qa"}}}});
        let sets = run_with(&go(), &inventory(), &MemoryGit::default(), &none).unwrap();
        assert_eq!(sets, vec![params(json!({"clusters": []}))]);
    }

    #[test]
    fn invalid_selector_is_located() {
        let spec = json!({"clusters": {"selector": {"matchExpressions": [{"key": "env", "operator": "Is"}]}}});
        let err = run_with(&fast(), &inventory(), &MemoryGit::default(), &spec).unwrap_err();
        assert_eq!(err.at, "clusters.selector");
        assert!(matches!(
            err.reason,
            GeneratorErrorReason::Selector(SelectorError::UnknownOperator { .. })
        ));
    }

    #[test]
    fn values_are_templated_with_cluster_params() {
        let spec = json!({"clusters": {
            "selector": {"matchLabels": {"env": "staging"}},
            "values": {"url": "{{server}}/{{metadata.labels.env}}"},
        }});
        let sets = run_with(&fast(), &inventory(), &MemoryGit::default(), &spec).unwrap();
        assert_eq!(sets[0]["values.url"], json!("https://staging/staging"));

        let spec = json!({"clusters": {
            "selector": {"matchLabels": {"env": "staging"}},
            "values": {"url": "{{ .server }}/{{ .metadata.labels.env }}"},
        }});
        let sets = run_with(&go(), &inventory(), &MemoryGit::default(), &spec).unwrap();
        assert_eq!(sets[0]["values"], json!({"url": "https://staging/staging"}));
    }
}

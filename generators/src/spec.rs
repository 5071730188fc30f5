//! The generator vocabulary users write in an ApplicationSet: serde + JSON-schema types mirroring
//! Argo CD's `argoproj.io/v1alpha1` generator fields. Pure data; the behaviour lives in one module
//! per generator.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::selector::LabelSelector;

/// One entry of `spec.generators`: exactly one generator kind is set, plus an optional
/// post-filter `selector` over the parameters it produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratorSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<ListGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<MatrixGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<PluginGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_decision_resource: Option<ClusterDecisionResourceGenerator>,
    /// Keeps only the parameter sets whose (flattened) parameters match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// `list`: literal parameter sets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListGenerator {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields_list")]
    pub elements: Vec<Value>,
    /// A YAML (or JSON) list of elements, usually templated from another generator's params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements_yaml: Option<String>,
    /// Overrides parts of the ApplicationSet template for the Applications this generator makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// `clusters`: one parameter set per cluster of the inventory matching `selector`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGenerator {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Extra parameters `values.<key>`, each templated with the cluster's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// One parameter set for all matching clusters: `clusters`, the list of their parameters.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flat_list: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// `git`: directories or files of a repository at a revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitGenerator {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<GitPathItem>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GitPathItem>,
    /// Prefixes the `path` parameters, e.g. `app` gives `app.path.basename`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_param_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// How often the controller re-resolves the revision (default 180 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// A glob over repository paths; `exclude: true` removes what it matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitPathItem {
    pub path: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude: bool,
}

/// `matrix`: the cartesian product of exactly two child generators; the second child may use the
/// first child's parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatrixGenerator {
    pub generators: Vec<NestedGeneratorSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// `merge`: the first child's parameter sets, overridden by later children's sets that agree on
/// every `mergeKeys` value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeGenerator {
    pub generators: Vec<NestedGeneratorSpec>,
    pub merge_keys: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// `plugin`: parameter sets answered by an HTTP service (Argo CD's generator plugins). The
/// ConfigMap `configMapRef.name` (in the ApplicationSet's namespace) holds `baseUrl` and `token`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginGenerator {
    pub config_map_ref: PluginConfigMapRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<PluginInput>,
    /// Extra parameters `values.<key>`, each templated with the plugin's parameters; not sent
    /// to the plugin.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// How often the controller asks the plugin again (default 30 min, as in Argo CD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// The ConfigMap describing a plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginConfigMapRef {
    pub name: String,
}

/// What the plugin is sent: `parameters`, any JSON values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInput {
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub parameters: serde_json::Map<String, Value>,
}

/// `clusterDecisionResource`: clusters chosen by another controller, read from the
/// `status.<statusListKey>` list of custom resources (duck-typed, e.g. Open Cluster Management's
/// PlacementDecision). The ConfigMap `configMapRef` holds `apiVersion`, `kind`, `statusListKey`
/// and `matchKey`; `name` or `labelSelector` picks the resources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecisionResourceGenerator {
    pub config_map_ref: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// How often the controller reads the resources again (default 3 min, as in Argo CD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// A child of `matrix` or `merge`. As in Argo CD, a nested `matrix`/`merge` is kept as raw JSON
/// (the schema cannot be recursive) and parsed when it is expanded, one level deep.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NestedGeneratorSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<ListGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub matrix: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub merge: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<PluginGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_decision_resource: Option<ClusterDecisionResourceGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// Schema for a free-form JSON object: `x-kubernetes-preserve-unknown-fields`.
pub fn preserve_unknown_fields(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Schema for a list of free-form JSON objects.
pub fn preserve_unknown_fields_list(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
    })
}

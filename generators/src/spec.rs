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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullRequestGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scm_provider: Option<ScmProviderGenerator>,
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

/// `pullRequest`: one parameter set per open pull request of a repository.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestGenerator {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<PullRequestGithub>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitlab: Option<PullRequestGitlab>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitea: Option<PullRequestGitea>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bitbucket_server: Option<PullRequestBitbucketServer>,
    /// A pull request is kept when it matches any filter (all of a filter's fields); all are
    /// kept when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<PullRequestFilter>,
    /// How often the controller asks the provider again (default 30 min, as in Argo CD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<u64>,
    /// Extra parameters `values.<key>`, each templated with the pull request's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// A Secret key holding a token, in the controller's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    pub secret_name: String,
    pub key: String,
}

/// GitHub (or GitHub Enterprise with `api`) pull requests of `owner/repo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestGithub {
    pub owner: String,
    pub repo: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<SecretKeyRef>,
    /// GitHub App authentication: refused (not implemented).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_secret_name: String,
    /// Only pull requests carrying every one of these labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// GitLab merge requests of `project` (its id or `group/name` path).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestGitlab {
    pub project: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<SecretKeyRef>,
    /// Only merge requests carrying every one of these labels (GitLab filters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// `opened`, `closed`, `merged`, `locked`; every state when empty, as GitLab answers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pull_request_state: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

/// Gitea pull requests of `owner/repo` on the server `api`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestGitea {
    pub owner: String,
    pub repo: String,
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<SecretKeyRef>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// Only pull requests carrying every one of these labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// Bitbucket Server (Data Center) pull requests of `project/repo` on the server `api`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestBitbucketServer {
    pub project: String,
    pub repo: String,
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<BearerToken>,
}

/// HTTP basic authentication: a user name and the Secret key holding the password.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuth {
    pub username: String,
    pub password_ref: SecretKeyRef,
}

/// A bearer token read from a Secret key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BearerToken {
    pub token_ref: SecretKeyRef,
}

/// One filter of pull requests: regular expressions (RE2 syntax) over the source and target
/// branch names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_match: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_branch_match: Option<String>,
}

/// `scmProvider`: one parameter set per repository (and branch) of an organisation, group,
/// owner or project, listed from the provider's REST API.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScmProviderGenerator {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<ScmProviderGithub>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitlab: Option<ScmProviderGitlab>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitea: Option<ScmProviderGitea>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bitbucket_server: Option<ScmProviderBitbucketServer>,
    /// `ssh` (the default) or `https`: which clone URL `url` is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub clone_protocol: String,
    /// A repository branch is kept when it matches any filter (all of a filter's fields); all
    /// are kept when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<ScmProviderFilter>,
    /// How often the controller asks the provider again (default 30 min, as in Argo CD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<u64>,
    /// Extra parameters `values.<key>`, each templated with the repository's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::spec::preserve_unknown_fields")]
    pub template: Option<Value>,
}

/// The repositories of a GitHub (or GitHub Enterprise with `api`) organisation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScmProviderGithub {
    pub organization: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<SecretKeyRef>,
    /// GitHub App authentication: refused (not implemented).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_secret_name: String,
    /// Every branch of every repository, not only the default branch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_branches: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_archived_repos: bool,
}

/// The projects of a GitLab group (its id or full path).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScmProviderGitlab {
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<SecretKeyRef>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_branches: bool,
    /// The projects of the group's subgroups too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_subgroups: bool,
    /// Projects shared with the group too (default true, as GitLab answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_shared_projects: Option<bool>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_archived_repos: bool,
    /// Only projects with this topic.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topic: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

/// The repositories of a Gitea organisation or user on the server `api`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScmProviderGitea {
    pub owner: String,
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<SecretKeyRef>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_branches: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_archived_repos: bool,
}

/// The repositories of a Bitbucket Server (Data Center) project on the server `api`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScmProviderBitbucketServer {
    pub project: String,
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<BearerToken>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_branches: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

/// One filter of repository branches: regular expressions (RE2 syntax) over the repository
/// name, its labels (any may match) and the branch name, and paths that must (not) exist on
/// the branch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScmProviderFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_match: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths_exist: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths_do_not_exist: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_match: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_match: Option<String>,
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
    pub pull_request: Option<PullRequestGenerator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scm_provider: Option<ScmProviderGenerator>,
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

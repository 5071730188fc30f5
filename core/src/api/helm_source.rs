//! `source.helm`: how a Helm chart is rendered (Argo CD's `ApplicationSourceHelm`), as written in
//! an Application or an ApplicationSet template. Only data; `flotilla::source::helm` turns it into
//! a `helm template` command.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Options of a Helm source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmSource {
    /// The release name; the Application's name when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub release_name: String,
    /// Values files, relative to the chart directory, applied in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_files: Vec<String>,
    /// Leave out values files that do not exist instead of failing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_missing_value_files: bool,
    /// Values as a YAML string, over the values files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub values: String,
    /// Values as an object, over `values` (Argo CD: `valuesObject` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "flotilla_generators::spec::preserve_unknown_fields")]
    pub values_object: Option<serde_json::Value>,
    /// `--set name=value` (or `--set-string` with `forceString`), over every values source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<HelmParameter>,
    /// `--set-file name=path`, the path relative to the chart directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_parameters: Vec<HelmFileParameter>,
    /// Leave out the chart's `crds/` directory.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_crds: bool,
    /// Leave out the chart's test hooks (`helm.sh/hook: test`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_tests: bool,
    /// The release namespace; the destination namespace when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The Kubernetes version the chart's `.Capabilities.KubeVersion` reports.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kube_version: String,
    /// API versions the chart's `.Capabilities.APIVersions` holds (`group/version` or
    /// `group/version/Kind`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// Send the chart repository's credentials to every host its index points at (helm's
    /// `--pass-credentials`), for `chart` sources and chart dependencies.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pass_credentials: bool,
    /// The Helm major version: empty or `v3` (the only one supported).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// One `--set` value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmParameter {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Keep the value a string (`--set-string`) rather than let Helm infer its type.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_string: bool,
}

/// One `--set-file` value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmFileParameter {
    pub name: String,
    /// A file relative to the chart directory.
    pub path: String,
}

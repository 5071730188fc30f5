//! `source.kustomize`: Application-level overrides of a Kustomize source (Argo CD's
//! `ApplicationSourceKustomize`). Only data; `flotilla::source::kustomize` applies them to a
//! private kustomization, never to the repository.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Overrides of a Kustomize source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KustomizeSource {
    /// Prepended to every object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name_prefix: String,
    /// Appended to every object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name_suffix: String,
    /// Image overrides as `kustomize edit set image` takes them: `name=newName:tag`,
    /// `name:tag`, `name@digest`, `name=newName`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// Replica counts by Deployment/StatefulSet/ReplicaSet name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<KustomizeReplica>,
    /// Labels added to every object (and, unless `labelWithoutSelector`, to selectors).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_labels: BTreeMap<String, String>,
    /// Annotations added to every object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_annotations: BTreeMap<String, String>,
    /// Expand `${VAR}` in `commonAnnotations` from the Application's environment (`ARGOCD_APP_NAME`,
    /// `ARGOCD_APP_NAMESPACE`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub common_annotations_envsubst: bool,
    /// Let `commonLabels` replace labels the kustomization's own `commonLabels` sets (refused
    /// without it, as Argo CD's `kustomize edit add label` without `--force`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_common_labels: bool,
    /// Let `commonAnnotations` replace annotations the kustomization's own `commonAnnotations`
    /// sets (refused without it, as `kustomize edit add annotation` without `--force`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_common_annotations: bool,
    /// Add `commonLabels` to objects only, not to selectors and templates.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub label_without_selector: bool,
    /// The namespace of every namespaced object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Patches (`patch` inline or `path` relative to the source path), each with an optional
    /// target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "flotilla_generators::spec::preserve_unknown_fields_list")]
    pub patches: Vec<serde_json::Value>,
    /// Components, relative to the source path (they may sit beside it: `../components/x`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// The Kubernetes version Helm charts the kustomization inflates (`helmCharts`) see.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kube_version: String,
    /// API versions Helm charts the kustomization inflates (`helmCharts`) see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
}

/// One replica override.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KustomizeReplica {
    pub name: String,
    /// The count (Argo CD accepts a number or a string of digits).
    pub count: IntOrString,
}

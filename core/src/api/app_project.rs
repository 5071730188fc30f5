//! The `AppProject` resource: what the Applications of a project may deploy, from where, to
//! where, and when (Argo CD's AppProject, whose `argoproj.io` YAML is accepted in files). Argo
//! CD's `roles`, `signatureKeys`, `orphanedResources` and `destinationServiceAccounts` are not
//! fields here, so a file or object using them is refused by name (Flotilla has no API server
//! whose roles they would be, verifies no commit signatures, reports no orphaned resources and
//! does not impersonate).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sync_window::SyncWindow;

/// The name of the project that permits everything when the operator has not created it.
pub const DEFAULT_PROJECT: &str = "default";

/// The limits a project puts on its Applications.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flotilla.dev",
    version = "v1alpha1",
    kind = "AppProject",
    namespaced,
    shortname = "fappproj",
    category = "flotilla",
    printcolumn = r#"{"name":"Description","type":"string","jsonPath":".spec.description"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AppProjectSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Repository URLs (globs) Applications may deploy from; `!` denies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_repos: Vec<String>,
    /// Clusters and namespaces Applications may deploy to; `!` on either denies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<ProjectDestination>,
    /// Cluster-scoped kinds Applications may deploy; none when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_whitelist: Vec<GroupKind>,
    /// Cluster-scoped kinds refused even when whitelisted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_blacklist: Vec<GroupKind>,
    /// Namespaced kinds Applications may deploy; every kind when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_whitelist: Vec<GroupKind>,
    /// Namespaced kinds refused even when whitelisted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_blacklist: Vec<GroupKind>,
    /// Namespaces (globs) other than the controller's whose Applications may use the project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_namespaces: Vec<String>,
    /// When syncs are allowed or denied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_windows: Vec<SyncWindow>,
}

/// A destination a project permits (or, with `!`, denies).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectDestination {
    /// The cluster's API server URL (glob).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server: String,
    /// The cluster's name (glob), instead of `server`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The namespace (glob).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// A kind in an API group, as the resource lists name them (globs: `*`, `*.k8s.io`), and
/// optionally only objects of matching names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupKind {
    /// The API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    pub kind: String,
    /// Only objects whose name matches this glob (any when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

//! The `Application` resource: one source rendered into one destination, synced by the wave/hook
//! engine. Mirrors the fields of Argo CD's Application that users write.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to deploy, where, and how to keep it in sync.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flotilla.dev",
    version = "v1alpha1",
    kind = "Application",
    namespaced,
    status = "ApplicationStatus",
    shortname = "fapp",
    shortname = "fapps",
    category = "flotilla",
    printcolumn = r#"{"name":"Sync","type":"string","jsonPath":".status.sync.status"}"#,
    printcolumn = r#"{"name":"Health","type":"string","jsonPath":".status.health.status"}"#,
    printcolumn = r#"{"name":"Revision","type":"string","jsonPath":".status.sync.revision","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// The project the Application belongs to (kept for Argo CD compatibility).
    pub project: String,
    pub source: ApplicationSource,
    pub destination: ApplicationDestination,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<SyncPolicy>,
}

/// Where the manifests come from: a git repository (or local path) at a revision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSource {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// Branch, tag or commit; empty means `HEAD`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_revision: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectorySource>,
}

/// Options for a plain directory of manifests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirectorySource {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recurse: bool,
    /// Glob (or `{a,b}` list) of files to include, relative to the path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub include: String,
    /// Glob (or `{a,b}` list) of files to leave out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exclude: String,
}

/// The cluster and namespace to deploy to: `server` or `name` of a registered cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationDestination {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// When and how the Application is synced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automated: Option<AutomatedSync>,
    /// Application-wide sync options, e.g. `CreateNamespace=true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
}

/// Automatic sync when the Application is OutOfSync.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomatedSync {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prune: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub self_heal: bool,
}

/// Retries of a failed sync.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryStrategy {
    /// Maximum number of attempts; negative means unlimited (as in Argo CD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
}

/// Exponential backoff between retries, durations like `5s` or `3m`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backoff {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<String>,
}

/// What the controller observed and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
}

/// Whether the live state matches the source, at which revision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncStatus {
    /// `Synced`, `OutOfSync` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
}

/// The aggregated health of the Application's resources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthStatus {
    /// `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

//! A project's sync window (Argo CD's `SyncWindow`): a cron schedule and a duration during which
//! syncs of the Applications, namespaces and clusters it names are allowed or denied.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a window allows or denies syncs while it is active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WindowKind {
    /// Syncs happen only while some allow window is active (once any allow window applies).
    #[default]
    Allow,
    /// No sync happens while the window is active (deny wins over allow).
    Deny,
}

/// One window of `spec.syncWindows`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncWindow {
    pub kind: WindowKind,
    /// When the window starts: a five-field cron expression (`0 22 * * 5`) or a descriptor
    /// (`@daily`), in `timeZone`.
    pub schedule: String,
    /// How long it stays active from each start, e.g. `1h`, `62h30m`.
    pub duration: String,
    /// Application names (globs) the window applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<String>,
    /// Destination namespaces (globs) the window applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Destination clusters, by server URL or name (globs), the window applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
    /// Manual syncs are allowed while a deny window is active (or outside allow windows).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual_sync: bool,
    /// The IANA time zone of `schedule` (default UTC).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub time_zone: String,
    /// The window applies only when an Application matches every non-empty list (applications,
    /// namespaces, clusters), instead of any.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub and_operator: bool,
    /// Free text shown with the window.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

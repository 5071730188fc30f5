//! What the ApplicationSet controller reports on an ApplicationSet: Argo CD-shaped conditions
//! (`ErrorOccurred`, `ParametersGenerated`, `ResourcesUpToDate`, `RolloutProgressing`) and one
//! entry per generated Application with its sync and health status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::application::HealthStatus;

/// The observed state of an ApplicationSet, written by the controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationSetCondition>,
    /// The generated Applications, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApplicationSetResource>,
}

/// One condition, as in Argo CD: `type`, `status`, `reason`, `message`, `lastTransitionTime`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetCondition {
    #[serde(rename = "type")]
    pub type_: ConditionType,
    pub status: ConditionStatus,
    /// A CamelCase word saying why, e.g. `RenderError`.
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// The condition types an ApplicationSet reports.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum ConditionType {
    /// The last reconcile failed; the reason and message say where.
    ErrorOccurred,
    /// The generators produced their parameter sets.
    ParametersGenerated,
    /// Every generated Application is as the template says (within `applicationsSync`).
    ResourcesUpToDate,
    /// A RollingSync rollout is under way (owned by the rollout strategy).
    RolloutProgressing,
}

/// `True`, `False` or `Unknown`, as Kubernetes conditions spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// One generated Application as Argo CD lists it in `status.resources`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetResource {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The Application's sync status (`Synced`, `OutOfSync`, `Unknown`); empty before its first
    /// comparison.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
}

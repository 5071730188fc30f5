//! The `ApplicationSet` resource: generators expand one template into many Applications, and an
//! optional RollingSync strategy decides when each of them syncs. Field names follow Argo CD's
//! `argoproj.io/v1alpha1` ApplicationSet so existing files work unchanged.

use std::collections::BTreeMap;

use flotilla_generators::selector::LabelSelectorRequirement;
use flotilla_generators::spec::GeneratorSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::application::ApplicationSpec;

/// Generators, a template, and how the generated Applications are kept and rolled out.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flotilla.dev",
    version = "v1alpha1",
    kind = "ApplicationSet",
    namespaced,
    status = "ApplicationSetStatus",
    shortname = "fappset",
    shortname = "fappsets",
    category = "flotilla"
)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetSpec {
    pub generators: Vec<GeneratorSpec>,
    pub template: ApplicationSetTemplate,
    /// Go-template syntax (`{{ .name }}`) instead of fasttemplate (`{{name}}`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub go_template: bool,
    /// For example `["missingkey=error"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub go_template_options: Vec<String>,
    /// A Go template rendering to YAML that is merged onto each generated Application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_patch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<ApplicationSetSyncPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RolloutStrategy>,
}

/// The Application template: metadata and spec, with templated strings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetTemplate {
    pub metadata: TemplateMetadata,
    pub spec: ApplicationSpec,
}

/// The metadata a template may set on generated Applications.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMetadata {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

/// What the controller may do to the Applications it generated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetSyncPolicy {
    /// Which changes the controller makes; `sync` (create, update and delete) when unset.
    #[serde(default, skip_serializing_if = "ApplicationsSync::is_default")]
    pub applications_sync: ApplicationsSync,
    /// Keep the resources of a deleted Application in the cluster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_resources_on_deletion: bool,
}

/// Which changes to generated Applications are applied (Argo CD's `applicationsSync`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ApplicationsSync {
    #[serde(rename = "create-only")]
    CreateOnly,
    #[serde(rename = "create-update")]
    CreateUpdate,
    #[serde(rename = "create-delete")]
    CreateDelete,
    #[default]
    #[serde(rename = "sync")]
    Sync,
}

impl ApplicationsSync {
    /// Whether this is the default policy (`sync`), left out when serializing.
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// How generated Applications are rolled out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    #[serde(rename = "type", default)]
    pub type_: StrategyType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_sync: Option<RollingSync>,
    /// While true, the rollout promotes nothing new; syncs already running finish.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
}

/// `AllAtOnce` (default) or `RollingSync`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StrategyType {
    #[default]
    AllAtOnce,
    RollingSync,
}

/// Ordered steps of label-selected Applications.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingSync {
    pub steps: Vec<RollingSyncStep>,
    /// How long a step may have Applications in flight before it counts as stalled (a duration
    /// such as `10m` or `1h30m`); the default for steps that set none. Unset: no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
}

/// One step: the Applications whose labels match every expression, at most `maxUpdate` of them
/// Pending or Progressing at once (an integer, a quoted integer, or a percentage).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingSyncStep {
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_update: Option<IntOrString>,
    /// This step's progress deadline, overriding the rollout's `progressDeadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
}

/// What the controller observed and decided (Argo CD's ApplicationSetStatus).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationSetCondition>,
    /// The rollout status of each generated Application, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_status: Vec<ApplicationSetApplicationStatus>,
    /// Sync and health of each generated Application, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApplicationSetResourceStatus>,
}

/// One condition of the ApplicationSet (Argo CD's ApplicationSetCondition).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetCondition {
    #[serde(rename = "type")]
    pub type_: ApplicationSetConditionType,
    pub status: ConditionStatus,
    /// A CamelCase word saying why, e.g. `ApplicationSetRolloutComplete`.
    pub reason: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// The kinds of ApplicationSet conditions: Argo CD's four and Flotilla's rollout additions.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum ApplicationSetConditionType {
    ErrorOccurred,
    ParametersGenerated,
    ResourcesUpToDate,
    /// True while the rollout has work left; False when complete, stalled or misconfigured.
    RolloutProgressing,
    /// The RollingSync strategy cannot be followed; the rollout does not advance.
    InvalidRolloutConfig,
    /// Some Applications match no RollingSync step and are never synced by the rollout.
    UnselectedApplications,
}

/// `True`, `False` or `Unknown`, as in every Kubernetes condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// Where one Application is in the rollout (Argo CD's ApplicationSetApplicationStatus).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetApplicationStatus {
    pub application: String,
    pub status: RolloutApplicationState,
    /// The 1-based step as a string (`"1"`), or `"-1"` for an Application in no step.
    pub step: String,
    /// The revisions this Application is being rolled out to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_revisions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The rollout states of one Application: Waiting → Pending → Progressing → Healthy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RolloutApplicationState {
    /// Not yet allowed to sync, or sent back by a new revision or spec.
    Waiting,
    /// Promoted: its sync was triggered and has not started yet.
    Pending,
    /// Its sync started; not yet Healthy and Synced.
    Progressing,
    /// Healthy and Synced on its target revisions.
    Healthy,
}

impl RolloutApplicationState {
    /// The name as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "Waiting",
            Self::Pending => "Pending",
            Self::Progressing => "Progressing",
            Self::Healthy => "Healthy",
        }
    }
}

/// Sync and health of one generated Application (Argo CD's ResourceStatus, as the ApplicationSet
/// reports it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetResourceStatus {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The sync status.
    pub status: SyncStatusCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

/// Health of a generated Application, with the message of its worst resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceHealth {
    pub status: HealthStatusCode,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The health vocabulary of Applications and resources (as in Argo CD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HealthStatusCode {
    Healthy,
    Progressing,
    Degraded,
    Suspended,
    Missing,
    #[default]
    Unknown,
}

/// The sync vocabulary of Applications (as in Argo CD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SyncStatusCode {
    Synced,
    OutOfSync,
    #[default]
    Unknown,
}

/// A health or sync status word outside the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} status {found:?} (expected one of {expected})")]
pub struct StatusCodeError {
    pub kind: &'static str,
    pub found: String,
    pub expected: &'static str,
}

impl HealthStatusCode {
    /// The name as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Healthy => "Healthy",
            Self::Progressing => "Progressing",
            Self::Degraded => "Degraded",
            Self::Suspended => "Suspended",
            Self::Missing => "Missing",
            Self::Unknown => "Unknown",
        }
    }
}

impl std::str::FromStr for HealthStatusCode {
    type Err = StatusCodeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::Healthy,
            Self::Progressing,
            Self::Degraded,
            Self::Suspended,
            Self::Missing,
            Self::Unknown,
        ]
        .into_iter()
        .find(|code| code.as_str() == s)
        .ok_or_else(|| StatusCodeError {
            kind: "health",
            found: s.to_string(),
            expected: "Healthy, Progressing, Degraded, Suspended, Missing, Unknown",
        })
    }
}

impl SyncStatusCode {
    /// The name as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Synced => "Synced",
            Self::OutOfSync => "OutOfSync",
            Self::Unknown => "Unknown",
        }
    }
}

impl std::str::FromStr for SyncStatusCode {
    type Err = StatusCodeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Synced, Self::OutOfSync, Self::Unknown]
            .into_iter()
            .find(|code| code.as_str() == s)
            .ok_or_else(|| StatusCodeError {
                kind: "sync",
                found: s.to_string(),
                expected: "Synced, OutOfSync, Unknown",
            })
    }
}

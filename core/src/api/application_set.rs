//! The `ApplicationSet` resource: generators expand one template into many Applications, and an
//! optional RollingSync strategy decides when each of them syncs. Field names follow Argo CD's
//! `argoproj.io/v1alpha1` ApplicationSet so existing files work unchanged.

use std::collections::BTreeMap;

use flotilla_generators::selector::LabelSelectorRequirement;
use flotilla_generators::spec::GeneratorSpec;
use flotilla_generators::strict::{self, UnknownFields};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::application::ApplicationSpec;
use super::application_set_status::ApplicationSetStatus;

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
    category = "flotilla",
    printcolumn = r#"{"name":"Strategy","type":"string","jsonPath":".spec.strategy.type"}"#,
    printcolumn = r#"{"name":"Rollout","type":"string","jsonPath":".status.conditions[?(@.type==\"RolloutProgressing\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
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
    /// Fields of generated Applications that people may change without the ApplicationSet
    /// reverting them (Argo CD's `ignoreApplicationDifferences`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_application_differences: Vec<ApplicationIgnoreDifferences>,
    /// Annotations and labels of generated Applications whose existing values an update keeps
    /// (Argo CD's `preservedFields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserved_fields: Option<PreservedFields>,
    /// Argo CD's `applyNestedSelectors`: accepted and without effect, as in Argo CD 3, where it
    /// is deprecated — the `selector` of a generator nested in a matrix or merge is always
    /// applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub apply_nested_selectors: bool,
}

/// The annotation and label keys whose values on an existing generated Application win over
/// the template's when the controller updates it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreservedFields {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// Fields of generated Applications (all, or the one named) that an update keeps as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationIgnoreDifferences {
    /// Only the Application of this name (any when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Fields by JSON pointer, e.g. `/spec/source/targetRevision`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_pointers: Vec<String>,
    /// Fields by jq path expression, e.g. `.spec.syncPolicy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jq_path_expressions: Vec<String>,
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
    /// In which order the Applications go when the ApplicationSet is deleted: `AllAtOnce`
    /// (default) or `Reverse` (RollingSync only: the last step's first, each step once the
    /// previous one's Applications are gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_order: Option<DeletionOrder>,
    /// Flotilla extension: in which order Applications that leave the generators' output are
    /// deleted: `Reverse` (the default with RollingSync steps: the steps in reverse dependency
    /// order, each step's Applications gone before the next step's are deleted) or `AllAtOnce`
    /// (as Argo CD does, and the only order without RollingSync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal_order: Option<DeletionOrder>,
}

/// How an ApplicationSet's Applications are deleted with it (Argo CD's `deletionOrder`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DeletionOrder {
    /// Every Application at once (garbage collection of the owned Applications).
    #[default]
    AllAtOnce,
    /// Step by step in reverse RollingSync step order, each step once the Applications of the
    /// later one are gone (with their resources).
    Reverse,
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
    /// Flotilla extension: what the rollout does when a step fails (an Application Degraded
    /// during its bake or on the target revision, or its sync failed): `pause` (default: the
    /// rollout stops there) or `rollback` (the step's Applications go back to the last revision
    /// each was Healthy on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailure>,
    /// Flotilla extension: with `onFailure: rollback`, the Applications of the steps completed
    /// before the failed one go back too, after it, latest step first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rollback_completed_steps: bool,
}

/// What a RollingSync does when a step fails (Flotilla extension).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum OnFailure {
    /// The rollout stops at the failed step until a new revision reaches it.
    #[default]
    #[serde(rename = "pause")]
    Pause,
    /// The failed step's Applications (and with `rollbackCompletedSteps` the earlier steps')
    /// are synced back to the last revision each was Healthy on.
    #[serde(rename = "rollback")]
    Rollback,
}

/// One step: the Applications whose labels match every expression, at most `maxUpdate` of them
/// Pending or Progressing at once (an integer, a quoted integer, or a percentage).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingSyncStep {
    /// Flotilla extension: the step's name, by which other steps wait for it (`dependsOn`),
    /// messages name it and `flotilla rollout promote --step` may approve it. Unique among the
    /// steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Flotilla extension: what this step waits for: the names of steps of this
    /// ApplicationSet, and steps of other ApplicationSets (`{applicationSet, step}`); it opens
    /// once all of them are complete, beside any other open step (each with its own
    /// `maxUpdate`, bake, approval and analysis). Unset: the step before it in the list (none
    /// for the first), as in Argo CD; `[]`: none, it opens with the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "step_dependencies_schema")]
    pub depends_on: Option<Vec<StepDependency>>,
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_update: Option<IntOrString>,
    /// This step's progress deadline, overriding the rollout's `progressDeadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
    /// Flotilla extension: how long every Application of the step must stay Healthy on its
    /// target revisions before the step counts as complete (a duration such as `10m`); an
    /// Application leaving Healthy during the bake fails the step. Unset: complete at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bake_time: Option<String>,
    /// Flotilla extension: `manual` — the step syncs nothing until someone approves it
    /// (`flotilla rollout promote APPSET --step N`, or the annotation [`PROMOTE_ANNOTATION`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// Flotilla extension: a check that must pass before the next step opens, run once every
    /// Application of the step is Healthy on its target revisions (and the bake, if any, is
    /// over); a failed analysis fails the step (`onFailure` applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<StepAnalysis>,
}

/// One entry of a step's `dependsOn` (Flotilla extension): a step of the same ApplicationSet by
/// name, or a step of another ApplicationSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepDependency {
    /// The name of a step of this ApplicationSet.
    Step(String),
    /// A step of another ApplicationSet.
    ApplicationSet(ApplicationSetStep),
}

impl StepDependency {
    /// The name of the step of this ApplicationSet, `None` for another ApplicationSet's step.
    #[must_use]
    pub fn local(&self) -> Option<&str> {
        match self {
            Self::Step(name) => Some(name),
            Self::ApplicationSet(_) => None,
        }
    }

    /// The step of another ApplicationSet, `None` for a step of this one.
    #[must_use]
    pub fn application_set(&self) -> Option<&ApplicationSetStep> {
        match self {
            Self::Step(_) => None,
            Self::ApplicationSet(step) => Some(step),
        }
    }
}

impl From<&str> for StepDependency {
    fn from(name: &str) -> Self {
        Self::Step(name.to_owned())
    }
}

impl Serialize for StepDependency {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Step(name) => name.serialize(serializer),
            Self::ApplicationSet(step) => step.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for StepDependency {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(name) => Ok(Self::Step(name)),
            object @ serde_json::Value::Object(_) => serde_json::from_value(object)
                .map(Self::ApplicationSet)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "expected a step's name or {{applicationSet, step}}, found {other}"
            ))),
        }
    }
}

/// A step of another ApplicationSet a step waits for (Flotilla extension): it opens once that
/// step of that ApplicationSet's current rollout is complete.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationSetStep {
    /// The other ApplicationSet's name.
    pub application_set: String,
    /// Its namespace. Unset: this ApplicationSet's; another must be permitted by the
    /// `sourceNamespaces` of this ApplicationSet's project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The name (or, for a step without one, the 1-based number) of its step.
    pub step: String,
    /// Complete only once every Application of that step targets this revision (a commit, or
    /// the start of one, or another revision as its status writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Complete only once every Application of that step targets a revision this step's
    /// Applications target: the same commit, when both ApplicationSets deploy from one
    /// repository.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub same_revision: bool,
    /// Complete only once that step has Applications with these labels, all of them complete.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}

/// The CRD schema of `dependsOn`: each entry a string or an object (a structural schema
/// cannot say "one of", so the entries are kept as written and read strictly by Flotilla).
fn step_dependencies_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "description": "A step of this ApplicationSet by name, or {applicationSet, step, namespace, revision, sameRevision, matchLabels}: a step of another ApplicationSet.",
            "x-kubernetes-preserve-unknown-fields": true,
        },
    })
}

/// The analysis of a RollingSync step (Flotilla extension): exactly one of `job` and `http`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepAnalysis {
    /// A Job run on the destination cluster of the step's Applications — one on each distinct
    /// cluster they go to: the analysis passes when every one succeeds and fails when one fails.
    /// Its name is derived from the ApplicationSet, the step and the target revisions, so it runs
    /// once per rollout of the step on each cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobAnalysis>,
    /// An HTTP GET that must answer 2xx (and, with `jsonPath`, carry `value` there), retried
    /// every `interval` until it passes or has failed `failureLimit` times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpAnalysis>,
}

/// A Job analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobAnalysis {
    /// The namespace the Job runs in, on each cluster (it must exist there). Unset: the
    /// destination namespace of the step's first Application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The Job's `spec` (its pod `template`, `backoffLimit`, ...), as in a `batch/v1` Job.
    #[schemars(schema_with = "flotilla_generators::spec::preserve_unknown_fields")]
    pub spec: AnalysisJobSpec,
}

/// An analysis Job's spec as written. The CRD keeps it as free-form JSON (a Pod's schema would
/// make the CRD too large for a client-side `kubectl apply`), so its fields are read strictly
/// here: those a `batch/v1` JobSpec does not have are kept in `unknown`, and the ApplicationSet
/// is refused naming them ([`super::unrendered_fields`]) instead of running a Job without them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalysisJobSpec {
    /// The JobSpec Flotilla creates.
    pub spec: k8s_openapi::api::batch::v1::JobSpec,
    /// The fields written that a JobSpec does not have.
    pub unknown: UnknownFields,
}

impl AnalysisJobSpec {
    /// A spec written with only known fields.
    #[must_use]
    pub fn new(spec: k8s_openapi::api::batch::v1::JobSpec) -> Self {
        Self {
            spec,
            unknown: UnknownFields::default(),
        }
    }
}

impl Serialize for AnalysisJobSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.spec.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AnalysisJobSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = serde_json::Value::deserialize(deserializer)?;
        let (spec, unknown) = strict::deserialize(&written).map_err(serde::de::Error::custom)?;
        Ok(Self { spec, unknown })
    }
}

/// An HTTP analysis.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAnalysis {
    /// The `http://` or `https://` URL to GET.
    pub url: String,
    /// A field of the JSON answer, as a dotted path (`status.phase`, `checks.0.ok`); with
    /// `value`, the answer passes only when that field equals it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// The value the field at `jsonPath` must have (a string, or a number or boolean as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// How long between attempts (a duration such as `10s`; default `10s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// How many failed attempts fail the analysis (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_limit: Option<u32>,
}

/// Who lets a RollingSync step start (Flotilla extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Approval {
    /// A person, through [`PROMOTE_ANNOTATION`].
    #[serde(rename = "manual")]
    Manual,
}

/// The ApplicationSet annotation that approves a step waiting for approval: its value is the
/// step's number (1-based). The controller removes it once it has recorded the approval.
pub const PROMOTE_ANNOTATION: &str = "flotilla.dev/promote";

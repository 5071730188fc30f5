//! What the controller reports on an ApplicationSet: Argo CD-shaped conditions, the RollingSync
//! state of each generated Application (`applicationStatus`), and each Application's sync and
//! health (`resources`), with the status vocabularies they use.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::application::HealthReport;

/// The observed state of an ApplicationSet, written by the controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationSetCondition>,
    /// The rollout status of each generated Application, sorted by name (RollingSync only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_status: Vec<ApplicationSetApplicationStatus>,
    /// Flotilla extension: set when the rollout has more Applications than `applicationStatus`
    /// may list within the controller's `--rollout-status-limit` (an ApplicationSet must stay
    /// within etcd's request limit): `applicationStatus` is then empty, each Application keeps
    /// its own entry in its `status.rollout`, and this counts them per step, state and set of
    /// target revisions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_status_summary: Vec<StepRolloutSummary>,
    /// The generated Applications, sorted by name: the first of them, as many as the
    /// controller's `--max-resources-status-count` and a size budget allow (an ApplicationSet's
    /// whole object must stay within etcd's request limit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApplicationSetResource>,
    /// How many Applications the ApplicationSet has; more than `resources` lists when the list
    /// was cut short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_count: Option<i64>,
    /// Flotilla extension: what the rollout keeps per RollingSync step besides each
    /// Application's state (a bake's start and end, a failure), sorted by step, so a restarted
    /// controller resumes where the last pass left off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rollout_steps: Vec<RolloutStepStatus>,
    /// Flotilla extension: the rollback of a failed step (`onFailure: rollback`), kept until a
    /// new revision reaches one of its Applications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_rollback: Option<RolloutRollback>,
    /// Flotilla extension: the latest rollouts of the RollingSync, newest first, at most 10
    /// (`MAX_ROLLOUT_HISTORY`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rollout_history: Vec<RolloutHistoryEntry>,
    /// Flotilla extension: where the ordered deletion of a deleted ApplicationSet stands
    /// (`strategy.deletionOrder: Reverse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<DeletionProgress>,
}

/// An ordered deletion in progress (`strategy.deletionOrder: Reverse`, Flotilla extension): the
/// step whose Applications are being deleted, and what is left after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionProgress {
    /// How many steps the strategy has.
    pub steps: u64,
    /// The group being deleted now.
    pub current: DeletionGroupStatus,
    /// The groups left after it, in the order they will be deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remaining: Vec<DeletionGroupStatus>,
}

/// The Applications of one RollingSync step that are still there, during an ordered deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionGroupStatus {
    /// The step, 1-based; 0: the Applications no step selects (deleted last).
    pub step: u64,
    /// Its Applications still there, by name.
    pub applications: Vec<String>,
}

/// A rollout's rollback after a failed step (Flotilla extension, `onFailure: rollback`): which
/// Applications go back to which revisions, in order, and which are back already, so a
/// restarted controller resumes it and syncs each back once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutRollback {
    /// The step that failed, 1-based.
    pub failed_step: u64,
    /// Why it failed.
    pub failure: String,
    /// When the rollback started.
    pub started_at: Time,
    /// When every Application was back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// The Applications of the rolled-back steps, in rollback order (the failed step first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<RolledBackApplication>,
}

/// One Application of a rollback (`status.rolloutRollback`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolledBackApplication {
    pub application: String,
    /// Its step, 1-based.
    pub step: u64,
    /// The revisions it goes back to (the last it was Healthy on); empty when there is nothing
    /// to roll back (it did not take the failed revision, or has no earlier one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// Its target revisions when the step failed: another target is a new revision, which ends
    /// the rollback.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_revisions: Vec<String>,
    /// When its rollback sync was seen Succeeded (or nothing was to be done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back_at: Option<Time>,
}

/// One rollout in `status.rolloutHistory` (Flotilla extension): the revisions it brought the
/// Applications to, when it started and ended, how it ended and how many Applications it synced
/// back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutHistoryEntry {
    /// The Applications' target revisions, distinct and sorted (the first 5, `MAX_REVISIONS`);
    /// a new set starts a new rollout.
    pub revisions: Vec<String>,
    /// How many distinct revisions there were, when more than `revisions` lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisions_count: Option<u64>,
    /// When the controller first saw these revisions targeted.
    pub started_at: Time,
    /// When it ended: complete, failed, rolled back, or replaced by newer revisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    pub outcome: RolloutHistoryOutcome,
    /// The `RolloutProgressing` message when it ended (or now, while it runs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The step that failed, 1-based, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<u64>,
    /// How many Applications were synced back to earlier revisions (`onFailure: rollback`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rollbacks: u32,
}

/// How a rollout in `status.rolloutHistory` stands or ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RolloutHistoryOutcome {
    /// Under way (its steps progress, wait, bake, or are stalled or paused).
    Progressing,
    /// Every step complete.
    Complete,
    /// A step failed its bake or analysis, and nothing was rolled back.
    Failed,
    /// A step failed and its Applications were synced back (`onFailure: rollback`).
    RolledBack,
    /// Newer revisions arrived before it ended.
    Superseded,
}

impl RolloutHistoryOutcome {
    /// The outcome as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Progressing => "Progressing",
            Self::Complete => "Complete",
            Self::Failed => "Failed",
            Self::RolledBack => "RolledBack",
            Self::Superseded => "Superseded",
        }
    }

    /// Whether the rollout is over.
    #[must_use]
    pub fn ended(self) -> bool {
        self != Self::Progressing
    }
}

/// One RollingSync step's own record (Flotilla extension): its bake, its approval, its analysis
/// and its failure; a step without `bakeTime`, `approval` or `analysis` that never failed has
/// none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStepStatus {
    /// The step, 1-based.
    pub step: u64,
    /// When every Application of the step was first seen Healthy on its target revisions: the
    /// bake's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bake_started_at: Option<Time>,
    /// When the bake ended and the step completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baked_at: Option<Time>,
    /// When the step failed (an Application left Healthy during the bake); it stays failed
    /// until a new revision or spec reaches one of its Applications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<Time>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub failure: String,
    /// Since when the step waits for approval (`approval: manual`), while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for_approval_since: Option<Time>,
    /// When the step was approved; it then syncs. Cleared when a new revision or spec sends
    /// one of its Applications back: the next rollout of the step asks again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<Time>,
    /// The step's analysis in this rollout of it, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisStatus>,
    /// When the steps of other ApplicationSets it waits for (`dependsOn`) were all complete:
    /// from then on this rollout of the step goes on whatever they do next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies_met_at: Option<Time>,
}

/// Where a step's analysis stands (Flotilla extension), so a restarted controller resumes it:
/// the same Job, the failures counted so far, the next attempt's time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisStatus {
    /// When the analysis started (every Application Healthy, the bake over).
    pub started_at: Time,
    /// The Job of a Job analysis, `namespace/name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub job: String,
    /// The clusters a Job analysis runs on (`server` or `name`, as the step's Applications'
    /// destinations name them): one Job, of the same name, on each; all must succeed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<AnalysisCluster>,
    /// Failed attempts of an HTTP analysis, or failed measurements of a metric one, so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u32,
    /// Measurements of a metric analysis taken so far (of its `count`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub measurements: u32,
    /// Inconclusive measurements of a metric analysis so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inconclusive: u32,
    /// When an HTTP or metric analysis tries next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<Time>,
    /// When it passed; the step is then complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_at: Option<Time>,
    /// The last result, e.g. `Job shop/platform-stack-1-3f2a succeeded` or `HTTP 500`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A cluster an analysis Job runs on: the destination cluster of some of the step's
/// Applications, named as their `destination` names it (`server` or `name`).
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisCluster {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

impl AnalysisCluster {
    /// The cluster `destination` names (its namespace left out).
    #[must_use]
    pub fn of(destination: &super::application::ApplicationDestination) -> Self {
        Self {
            server: destination.server.clone().unwrap_or_default(),
            name: destination.name.clone().unwrap_or_default(),
        }
    }

    /// As a destination without a namespace, to resolve it like an Application's.
    #[must_use]
    pub fn destination(&self) -> super::application::ApplicationDestination {
        let some = |text: &str| Some(text.to_owned()).filter(|t| !t.is_empty());
        super::application::ApplicationDestination {
            server: some(&self.server),
            name: some(&self.name),
            namespace: None,
        }
    }
}

impl std::fmt::Display for AnalysisCluster {
    /// The server URL, else the name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.server.is_empty() {
            f.write_str(&self.name)
        } else {
            f.write_str(&self.server)
        }
    }
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// True while a RollingSync rollout has work left; False when complete, stalled or
    /// misconfigured.
    RolloutProgressing,
    /// The RollingSync strategy cannot be followed; the rollout does not advance.
    InvalidRolloutConfig,
    /// Some Applications match no RollingSync step and are never synced by the rollout.
    UnselectedApplications,
    /// A failed step was rolled back (`onFailure: rollback`): which Applications, to which
    /// revisions (Flotilla extension).
    RolloutRolledBack,
    /// A step's `dependsOn` names a step of another ApplicationSet that cannot be waited for:
    /// the ApplicationSet or the step does not exist, its namespace is not permitted, or it
    /// waits back for the step (Flotilla extension). The step waits meanwhile.
    InvalidRolloutDependency,
}

impl ConditionType {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 8] = [
        Self::ErrorOccurred,
        Self::ParametersGenerated,
        Self::ResourcesUpToDate,
        Self::RolloutProgressing,
        Self::InvalidRolloutConfig,
        Self::UnselectedApplications,
        Self::RolloutRolledBack,
        Self::InvalidRolloutDependency,
    ];

    /// The value as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ErrorOccurred => "ErrorOccurred",
            Self::ParametersGenerated => "ParametersGenerated",
            Self::ResourcesUpToDate => "ResourcesUpToDate",
            Self::RolloutProgressing => "RolloutProgressing",
            Self::InvalidRolloutConfig => "InvalidRolloutConfig",
            Self::UnselectedApplications => "UnselectedApplications",
            Self::RolloutRolledBack => "RolloutRolledBack",
            Self::InvalidRolloutDependency => "InvalidRolloutDependency",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::ErrorOccurred => {
                "The last reconcile failed; the reason names the failed step and the message says where."
            }
            Self::ParametersGenerated => "The generators produced their parameter sets.",
            Self::ResourcesUpToDate => {
                "Every generated Application is as the template says (within `applicationsSync`)."
            }
            Self::RolloutProgressing => {
                "True while a RollingSync rollout has work left; False when complete, stalled or misconfigured."
            }
            Self::InvalidRolloutConfig => {
                "The RollingSync strategy cannot be followed; the rollout does not advance."
            }
            Self::UnselectedApplications => {
                "Some Applications match no RollingSync step and are never synced by the rollout."
            }
            Self::RolloutRolledBack => {
                "A failed step was rolled back (`onFailure: rollback`): which Applications, to which revisions (Flotilla's own)."
            }
            Self::InvalidRolloutDependency => {
                "A step's `dependsOn` names a step of another ApplicationSet that cannot be waited for: the ApplicationSet or the step does not exist, its namespace is not permitted, or it waits back for the step (Flotilla's own). The step waits meanwhile."
            }
        }
    }
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
    /// The Application's sync status (`Synced`, `OutOfSync`, `Unknown`); absent before its first
    /// comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub status: Option<SyncStatusCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthReport>,
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

/// How many Applications of one RollingSync step are in each rollout state (Flotilla
/// extension, [`ApplicationSetStatus::application_status_summary`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepRolloutSummary {
    /// The 1-based step as a string (`"1"`), or `"-1"` for the Applications in no step.
    pub step: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waiting: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pending: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub progressing: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub healthy: u32,
    /// How many of them target each set of revisions, so a cross-ApplicationSet gate's
    /// `revision` or `sameRevision` can be judged from counts; empty when they target more
    /// than [`MAX_COUNTED_REVISIONS`] distinct sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<RevisionCount>,
}

/// The most distinct sets of target revisions one step's [`StepRolloutSummary::revisions`]
/// counts (a rollout has one or two; Applications each on their own revision are not counted).
pub const MAX_COUNTED_REVISIONS: usize = 16;

/// How many Applications of a step target `targetRevisions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionCount {
    /// The revisions, one per source (as each Application's `applicationStatus` entry lists
    /// them); empty for Applications whose revision is not known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_revisions: Vec<String>,
    pub applications: u32,
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

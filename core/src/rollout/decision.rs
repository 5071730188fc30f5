//! What one rollout pass decided: the steps and their Applications, the new per-Application
//! rollout status, which syncs to trigger, the conditions, and per step what happens next and why.

use std::collections::BTreeMap;

use serde::Serialize;

use k8s_openapi::jiff::Timestamp;

use super::analysis::AnalysisJob;
use super::rollback::RollbackSync;
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ApplicationSetCondition, RolloutRollback, RolloutStepStatus,
};

/// The result of [`super::step`]: everything the controller writes or does, and what `explain`
/// prints.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutDecision {
    /// Step number (1-based) → the names of its Applications, sorted.
    pub steps: BTreeMap<usize, Vec<String>>,
    /// Applications that match no step (step `-1`): never synced by the rollout.
    pub unselected: Vec<String>,
    /// Applications in enabled steps (every earlier step complete).
    pub apps_to_sync: Vec<String>,
    /// The new `status.applicationStatus`, sorted by name.
    pub application_status: Vec<ApplicationSetApplicationStatus>,
    /// Applications whose sync the controller must trigger now.
    pub sync_triggered: Vec<String>,
    /// The rollout's conditions (`RolloutProgressing`, and `InvalidRolloutConfig` or
    /// `UnselectedApplications` when they hold), sorted by type; `lastTransitionTime` is `now`
    /// (see [`super::merge_conditions`]).
    pub conditions: Vec<ApplicationSetCondition>,
    /// One report per step, in order; empty when the strategy is invalid.
    pub step_reports: Vec<StepReport>,
    /// The new `status.rolloutSteps`: the record of each step that has one, by step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub step_status: Vec<RolloutStepStatus>,
    /// The step whose approval this pass recorded from the `flotilla.dev/promote` annotation:
    /// the controller removes the annotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<usize>,
    /// The first instant at which time alone changes the decision (a bake is over): when a pass
    /// should run again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_at: Option<Timestamp>,
    /// The rollback syncs the controller must request now (`onFailure: rollback`), each to the
    /// revisions it names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rollback_syncs: Vec<RollbackSync>,
    /// The new `status.rolloutRollback`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RolloutRollback>,
    /// The analysis Jobs the controller must make sure exist now.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub analysis_jobs: Vec<AnalysisJob>,
}

/// Where one step stands and what happens next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    pub step: usize,
    /// The step's `name`, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The steps (numbers) it waits for when the strategy is a graph (some step's `dependsOn`
    /// is not the step before it); `None` for a list, where each waits for the one before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<usize>>,
    /// The steps of other ApplicationSets it waits for: `ApplicationSet platform step database`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_application_sets: Vec<String>,
    pub state: StepState,
    /// `maxUpdate` as configured (`unlimited`, `3`, `25%`).
    pub max_update: String,
    /// Slots for Pending and Progressing Applications; `None` when unlimited.
    pub limit: Option<usize>,
    /// Applications Pending or Progressing after this pass.
    pub in_flight: usize,
    /// `progressDeadline` in effect (`10m`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
    /// `bakeTime` (`20s`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bake_time: Option<String>,
    /// The analysis (`Job`, `HTTP GET <url>`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analysis: Option<String>,
    /// What the controller does next and why, e.g. `waits: backend-eu Progressing 1/3 pods ready`.
    pub next: String,
}

impl StepReport {
    /// How `rollout explain` heads the step: `Step 2`, `Step 2 (backend-eu)`, in a graph
    /// `Step 4 (frontend, after steps 2, 3)`, and `Step 1 (api, after ApplicationSet platform
    /// step database)` when it waits for another ApplicationSet's step.
    #[must_use]
    pub fn title(&self) -> String {
        step_title(
            self.step,
            self.name.as_deref(),
            self.depends_on.as_deref(),
            &self.after_application_sets,
        )
    }

    /// The step's budget, deadline and bake: `maxUpdate 25%: 1/2 in flight, progressDeadline
    /// 10m, bakeTime 5m` (`no limit` when unlimited).
    #[must_use]
    pub fn budget(&self) -> String {
        let limit = self.limit.map_or_else(
            || "no limit".to_string(),
            |l| format!("{}/{l} in flight", self.in_flight),
        );
        let deadline = self
            .progress_deadline
            .as_ref()
            .map_or_else(String::new, |d| format!(", progressDeadline {d}"));
        let bake = self
            .bake_time
            .as_ref()
            .map_or_else(String::new, |b| format!(", bakeTime {b}"));
        let analysis = self
            .analysis
            .as_ref()
            .map_or_else(String::new, |a| format!(", analysis {a}"));
        format!(
            "maxUpdate {}: {limit}{deadline}{bake}{analysis}",
            self.max_update
        )
    }
}

/// The states of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StepState {
    /// Every Application Healthy on its target revisions (or no Applications).
    Complete,
    /// Enabled, with syncs in flight or promoted in this pass.
    Progressing,
    /// Enabled, waiting for something that is not a sync slot (creation, health, a started sync).
    Waiting,
    /// Enabled, but a sync window holds back an Application it would sync: nothing new is
    /// promoted until the window opens; syncs already started finish.
    WindowClosed,
    /// Enabled, but `maxUpdate` is 0: nothing syncs until someone syncs by hand.
    Held,
    /// An Application is Degraded, its sync failed, or the progress deadline passed.
    Stalled,
    /// Every Application is Healthy on its target revisions, and the step's `bakeTime` has not
    /// passed since they all became so.
    Baking,
    /// Every Application is Healthy (and baked), and the step's analysis runs.
    Analysing,
    /// An Application left Healthy during the bake, or the analysis failed: the step failed, and stays so until a new
    /// revision or spec reaches one of its Applications.
    Failed,
    /// Its steps are complete, but a step of another ApplicationSet it waits for
    /// (`dependsOn`) is not: nothing of it syncs until that one is.
    WaitingForApplicationSet,
    /// `approval: manual` and not approved yet: nothing of it syncs until someone runs
    /// `flotilla rollout promote`.
    WaitingForApproval,
    /// The rollout is paused: nothing new is promoted.
    Paused,
    /// A step failed and its Applications (or, with `rollbackCompletedSteps`, this step's)
    /// were rolled back: nothing syncs until a new revision arrives.
    RolledBack,
    /// An earlier step is not complete.
    Closed,
}

/// How a step is headed: `Step 2`, `Step 2 (backend-eu)`, in a graph `Step 4 (frontend,
/// after steps 2, 3)` (`depends_on`: the steps it waits for, `None` for a list), and `Step 1
/// (api, after ApplicationSet platform step database)` with the steps of other ApplicationSets
/// it waits for (`other`).
#[must_use]
pub fn step_title(
    step: usize,
    name: Option<&str>,
    depends_on: Option<&[usize]>,
    other: &[String],
) -> String {
    let after = depends_on.filter(|d| !d.is_empty()).map(after_steps);
    let other = (!other.is_empty()).then(|| format!("after {}", other.join(", ")));
    let notes: Vec<String> = name
        .map(str::to_owned)
        .into_iter()
        .chain(after)
        .chain(other)
        .collect();
    if notes.is_empty() {
        format!("Step {step}")
    } else {
        format!("Step {step} ({})", notes.join(", "))
    }
}

/// `after step 1`, `after steps 2, 3`, or `from the start` when `steps` is empty.
#[must_use]
pub fn after_steps(steps: &[usize]) -> String {
    match steps {
        [] => "from the start".to_owned(),
        [one] => format!("after step {one}"),
        many => {
            let numbers: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("after steps {}", numbers.join(", "))
        }
    }
}

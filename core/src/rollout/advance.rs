//! THE rollout step function: one pure pass from observed Applications and the prior rollout
//! status to the next status, the syncs to trigger, the conditions and an explanation. The
//! controller and `flotilla rollout explain` both call [`step`]; nothing here reads a clock or
//! talks to a cluster.
//!
//! A pass has three phases, as in Argo CD's RollingSync: observe each Application and move its
//! status along (Pending → Progressing → Healthy, or back to Waiting); find the first incomplete
//! step (every earlier one is enabled and complete) and check it for stalls; then promote its
//! Waiting Applications to Pending in name order while `maxUpdate` leaves a slot. A step with a
//! `bakeTime` ([`super::bake`]) completes only once its Applications stayed Healthy that long.
//! With `onFailure: rollback`, a failed step starts a rollback ([`super::rollback`]), and while
//! one is recorded the pass moves it along instead of rolling out, until a new revision.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::analysis::{AnalysisCheck, AnalysisJob, AnalysisObservation, combine_jobs, job_name};
use super::approval::Approval;
use super::conditions::{
    ProgressReason, REASON_NO_MATCHING_STEP, RollbackReason, holds, progressing,
};
use super::config::{RolloutConfig, RolloutConfigError, RolloutStep};
use super::decision::{RolloutDecision, StepReport, StepState};
use super::external::{self, DependencyProblem, ExternalApplicationSet, Verdict, Waiter};
use super::graph;
use super::input::{ApplicationState, RolloutInput};
use super::rollback;
use super::step_record::{Gate, fresh_records};
use crate::api::application_set::{OnFailure, PROMOTE_ANNOTATION, RollingSyncStep, StrategyType};
use crate::api::application_set_status::{
    AnalysisCluster, ApplicationSetApplicationStatus, ApplicationSetCondition, ConditionType,
    RolloutApplicationState as State, RolloutRollback, RolloutStepStatus, SyncStatusCode,
};
use crate::health::HealthStatus;
use flotilla_generators::duration::format_duration;

/// How many names a message lists before "and N more".
const NAMES_SHOWN: usize = 10;

/// One rollout pass. Never fails: an invalid strategy becomes an `InvalidRolloutConfig`
/// condition and the prior status is kept unchanged (the rollout does not advance).
#[must_use]
pub fn advance(input: &RolloutInput) -> RolloutDecision {
    if input.strategy.type_ != StrategyType::RollingSync {
        // No rollout, as the controller sees it: no applicationStatus (the prior one is
        // cleared) and no rollout condition.
        return RolloutDecision::default();
    }
    let now = whole_seconds(input.now);
    let config = match RolloutConfig::from_strategy(&input.strategy) {
        Ok(config) => config,
        Err(error) => return invalid(input, now, &error),
    };
    let mut apps: Vec<&ApplicationState> = input.applications.iter().collect();
    apps.sort_by(|a, b| a.name.cmp(&b.name));
    apps.dedup_by(|a, b| a.name == b.name);
    let step_of = match config.assign(apps.iter().map(|app| (app.name.as_str(), &app.labels))) {
        Ok(step_of) => step_of,
        Err(error) => return invalid(input, now, &error),
    };
    let labels: Vec<String> = (1..=config.steps.len()).map(|n| n.to_string()).collect();
    let unselected_label = "-1".to_string();
    let prior = prior_by_app(&apps, &input.prior_application_status);
    let mut pass = Pass {
        config: &config,
        now,
        entries: apps
            .iter()
            .zip(&step_of)
            .zip(&prior)
            .map(|((app, step), prior)| {
                let label = step.map_or(&unselected_label, |s| &labels[s]);
                observe(app, *prior, label, now)
            })
            .collect(),
        apps,
        members: vec![Vec::new(); config.steps.len()],
        records: Vec::new(),
        promote: input.promote.as_deref(),
        rollback: None,
        application_set: &input.application_set,
        strategy_steps: input
            .strategy
            .rolling_sync
            .as_ref()
            .map_or(&[][..], |rolling| &rolling.steps),
        analysis: &input.analysis,
        analysis_jobs: Vec::new(),
        namespace: &input.namespace,
        external: &input.external,
        external_waits: vec![None; config.steps.len()],
        broken: Vec::new(),
    };
    // Sent back to Waiting by this pass (a new revision or spec, OutOfSync again).
    let mut sent_back: Vec<bool> = prior
        .iter()
        .zip(&pass.entries)
        .map(|(prior, entry)| {
            entry.status == State::Waiting && prior.is_some_and(|p| p.status != State::Waiting)
        })
        .collect();
    let mut unselected = Vec::new();
    for (index, step) in step_of.iter().enumerate() {
        match step {
            Some(step) => pass.members[*step].push(index),
            None => unselected.push(pass.apps[index].name.clone()),
        }
    }
    let mut rollback = input.prior_rollback.clone();
    if let Some(prior) = &rollback
        && rollback::superseded(prior, |name| find(&pass.apps, name))
    {
        // A new revision reached a rolled-back Application: the rollback is over, and its steps
        // roll out afresh (bake and approval again).
        for entry in &prior.applications {
            if let Some(i) = position(&pass.apps, &entry.application) {
                sent_back[i] = true;
            }
        }
        rollback = None;
    }
    pass.records = fresh_records(&input.prior_step_status, &pass.members, &sent_back);
    pass.rollback = rollback;
    pass.decide(unselected)
}

/// The index of the Application `name` in `apps` (sorted by name, deduplicated).
fn position(apps: &[&ApplicationState], name: &str) -> Option<usize> {
    apps.binary_search_by(|app| app.name.as_str().cmp(name))
        .ok()
}

/// The Application `name` of `apps` (sorted by name, deduplicated).
fn find<'a>(apps: &[&'a ApplicationState], name: &str) -> Option<&'a ApplicationState> {
    position(apps, name).map(|i| apps[i])
}

/// The prior status entry of each of `apps` (sorted by name), found by walking both in order.
fn prior_by_app<'a>(
    apps: &[&ApplicationState],
    prior: &'a [ApplicationSetApplicationStatus],
) -> Vec<Option<&'a ApplicationSetApplicationStatus>> {
    let mut sorted: Vec<&ApplicationSetApplicationStatus> = prior.iter().collect();
    sorted.sort_by(|a, b| a.application.cmp(&b.application));
    let mut next = sorted.into_iter().peekable();
    apps.iter()
        .map(|app| {
            while next.next_if(|e| e.application < app.name).is_some() {}
            next.next_if(|e| e.application == app.name)
        })
        .collect()
}

/// The state of one pass over sorted, deduplicated Applications.
struct Pass<'a> {
    config: &'a RolloutConfig,
    now: Timestamp,
    apps: Vec<&'a ApplicationState>,
    /// Rollout status per Application, parallel to `apps`.
    entries: Vec<ApplicationSetApplicationStatus>,
    /// Per step, indices into `apps`, in name order.
    members: Vec<Vec<usize>>,
    /// Per step, its record (`status.rolloutSteps`), moved along by this pass.
    records: Vec<RolloutStepStatus>,
    /// The `flotilla.dev/promote` annotation, if set.
    promote: Option<&'a str>,
    /// The rollback in progress or done (`status.rolloutRollback`), until a new revision.
    rollback: Option<RolloutRollback>,
    /// The ApplicationSet's name (analysis Jobs are named after it).
    application_set: &'a str,
    /// The strategy's steps as written (the analysis Jobs' specs).
    strategy_steps: &'a [RollingSyncStep],
    /// What the controller saw of the analyses in progress.
    analysis: &'a [AnalysisObservation],
    /// The analysis Jobs to make sure exist, decided by this pass.
    analysis_jobs: Vec<AnalysisJob>,
    /// The ApplicationSet's namespace.
    namespace: &'a str,
    /// What the controller read of the ApplicationSets the steps wait for.
    external: &'a [ExternalApplicationSet],
    /// Per step, what it waits for in other ApplicationSets, decided by this pass.
    external_waits: Vec<Option<String>>,
    /// The dependencies on other ApplicationSets that can never be met (reason, message).
    broken: Vec<(DependencyProblem, String)>,
}

impl Pass<'_> {
    fn complete(&self, index: usize) -> bool {
        self.entries[index].status == State::Healthy && self.apps[index].healthy_on_target()
    }

    fn in_flight(&self, step: usize) -> usize {
        self.members[step]
            .iter()
            .filter(|&&i| matches!(self.entries[i].status, State::Pending | State::Progressing))
            .count()
    }

    /// Every Application of `step` complete (Healthy on its target revisions).
    fn all_complete(&self, step: usize) -> bool {
        self.members[step].iter().all(|&i| self.complete(i))
    }

    /// The Applications of `step` that are not complete, described.
    fn incomplete(&self, step: usize) -> String {
        list(
            self.members[step]
                .iter()
                .filter(|&&i| !self.complete(i))
                .map(|&i| describe(self.apps[i], &self.entries[i])),
        )
    }

    fn decide(mut self, unselected: Vec<String>) -> RolloutDecision {
        if let Some(rollback) = self.rollback.take() {
            return self.rolled_back(rollback, unselected);
        }
        let steps = self.members.len();
        let config = self.config;
        // Per step: `None` while a step it waits for is not complete (closed), else its gate.
        let mut gates: Vec<Option<Gate>> = vec![None; steps];
        let mut approved = None;
        for &step in &config.order {
            let open = config.steps[step]
                .depends_on
                .iter()
                .all(|&d| gates[d] == Some(Gate::Complete));
            if open {
                let (gate, now_approved) = self.judge(step);
                approved = approved.or(now_approved);
                gates[step] = Some(gate);
            }
        }
        // The open steps that are not complete, in list order.
        let current: Vec<usize> = (0..steps)
            .filter(|&s| gates[s].is_some_and(|gate| gate != Gate::Complete))
            .collect();
        let wake_at = current
            .iter()
            .filter_map(|&s| match gates[s] {
                Some(Gate::Baking { until, .. }) => until.checked_add(Duration::from_secs(1)).ok(),
                Some(Gate::Analysing { next, .. }) => next,
                _ => None,
            })
            .min();
        if let Some((step, failure)) = current
            .iter()
            .find_map(|&s| Some((s, self.failure(s, gates[s])?)))
        {
            let rollback = self.begin_rollback(step, failure, &gates);
            return self.rolled_back(rollback, unselected);
        }
        self.close_steps(&gates);
        let mut sync_triggered = Vec::new();
        let mut reports = Vec::with_capacity(steps);
        for (step, gate) in gates.iter().enumerate() {
            reports.push(match gate {
                Some(Gate::Complete) => {
                    self.report(step, StepState::Complete, self.complete_text(step))
                }
                None => {
                    let waited = self.frontier(step, &gates);
                    let verb = if waited.len() == 1 {
                        "completes"
                    } else {
                        "complete"
                    };
                    let next = format!("closed until {} {verb}", waited.join(", "));
                    self.report(step, StepState::Closed, next)
                }
                Some(gate) => self.open_report(step, *gate, &mut sync_triggered),
            });
        }
        let mut apps_to_sync: Vec<String> = (0..steps)
            .filter(|&s| gates[s].is_some())
            .flat_map(|s| &self.members[s])
            .map(|&i| self.apps[i].name.clone())
            .collect();
        apps_to_sync.sort();
        let mut conditions = vec![self.progress_condition(&current, &reports)];
        conditions.extend(self.unselected_condition(&unselected));
        conditions.extend(self.dependency_condition());
        conditions.sort_by_key(|c| c.type_);
        let analysis_jobs = std::mem::take(&mut self.analysis_jobs);
        RolloutDecision {
            apps_to_sync,
            sync_triggered,
            approved,
            wake_at,
            analysis_jobs,
            ..self.into_decision(unselected, conditions, reports)
        }
    }

    /// Where the open step `step` stands: its approval, bake and analysis judged (its record
    /// moved along), and the step approved by this pass's annotation, if it is this one.
    fn judge(&mut self, step: usize) -> (Gate, Option<usize>) {
        let all_complete = self.all_complete(step);
        let config = &self.config.steps[step];
        let bake_time = config.bake_time.filter(|_| !self.members[step].is_empty());
        let mut record = self.records[step].clone();
        if let Some(waits) = self.external_wait(step, all_complete, &mut record) {
            self.external_waits[step] = Some(waits);
            self.records[step] = record;
            return (Gate::WaitingForApplicationSet, None);
        }
        let config = &self.config.steps[step];
        let promoted = self.promote.is_some_and(|p| {
            let p = p.trim();
            p.parse::<usize>().ok() == Some(config.number) || config.name.as_deref() == Some(p)
        });
        let mut approved = None;
        let gate = match record.approval(config.manual_approval, all_complete, promoted, self.now) {
            Approval::Waiting { since } => Gate::WaitingForApproval { since },
            Approval::Given { now } => {
                approved = now.then_some(config.number);
                let gate =
                    record.judge(bake_time, all_complete, self.now, || self.incomplete(step));
                match (gate, &config.analysis) {
                    (Gate::Complete, Some(check)) if !self.members[step].is_empty() => {
                        self.analyse(step, check, &mut record)
                    }
                    (gate, _) => gate,
                }
            }
        };
        self.records[step] = record;
        (gate, approved)
    }

    /// The report of the open, incomplete step `step` at `gate`: its stalls, windows and
    /// promotions decided, the syncs to trigger added to `sync_triggered`.
    fn open_report(
        &mut self,
        step: usize,
        gate: Gate,
        sync_triggered: &mut Vec<String>,
    ) -> StepReport {
        let causes = self.stall_causes(step);
        let held = self.held_by_windows(step);
        let promoted =
            if causes.is_empty() && !self.config.paused && held.is_empty() && gate == Gate::Open {
                self.promote(step)
            } else {
                Vec::new()
            };
        if !self.config.paused {
            sync_triggered.extend(
                self.members[step]
                    .iter()
                    .filter(|&&i| self.needs_sync(i) && self.apps[i].sync_blocked_by.is_none())
                    .map(|&i| self.apps[i].name.clone()),
            );
        }
        match gate {
            Gate::Open | Gate::Complete => self.current_report(step, &causes, &promoted, &held),
            Gate::Baking { since, until } => {
                let next = format!(
                    "bakes until {until}: all {} Healthy on their target revisions since {since}",
                    self.members[step].len()
                );
                self.report(step, StepState::Baking, next)
            }
            Gate::WaitingForApproval { since } => {
                let next = self.approval_text(step, since);
                self.report(step, StepState::WaitingForApproval, next)
            }
            Gate::WaitingForApplicationSet => {
                let waits = self.external_waits[step].clone().unwrap_or_default();
                let message = format!("waits for {waits}");
                for &i in &self.members[step] {
                    let entry = &mut self.entries[i];
                    if entry.status == State::Waiting && entry.message != message {
                        entry.message.clone_from(&message);
                    }
                }
                self.report(step, StepState::WaitingForApplicationSet, message)
            }
            Gate::Analysing { since, .. } => {
                let next = self.analysis_text(step, since);
                self.report(step, StepState::Analysing, next)
            }
            Gate::Failed => {
                let next = format!(
                    "failed: {}; {} until a new revision reaches the step",
                    self.records[step].failure,
                    self.later_steps()
                );
                self.report(step, StepState::Failed, next)
            }
        }
    }

    /// What `step` (its own steps complete) waits for in other ApplicationSets, `None` once
    /// nothing: it has no such dependency, its Applications are complete anyway, or they were
    /// all met in this rollout of the step (recorded in `record`, so it goes on whatever those
    /// steps do next). Dependencies that can never be met are kept for the condition.
    fn external_wait(
        &mut self,
        step: usize,
        all_complete: bool,
        record: &mut RolloutStepStatus,
    ) -> Option<String> {
        let config = &self.config.steps[step];
        if config.external.is_empty() || all_complete || record.dependencies_met_at.is_some() {
            return None;
        }
        let revisions: BTreeSet<String> = self.members[step]
            .iter()
            .flat_map(|&i| self.apps[i].target())
            .cloned()
            .collect();
        let waiter = Waiter {
            namespace: self.namespace,
            name: self.application_set,
            config: self.config,
            step,
            revisions: &revisions,
        };
        let mut waits = Vec::new();
        for dependency in &config.external {
            match external::judge(dependency, &waiter, self.external) {
                Verdict::Met => {}
                Verdict::Waiting(text) => waits.push(text),
                Verdict::Broken(problem, text) => {
                    self.broken
                        .push((problem, format!("{}: dependsOn {text}", config.label())));
                    waits.push(text);
                }
            }
        }
        if waits.is_empty() {
            record.dependencies_met_at = Some(Time(self.now));
            None
        } else {
            Some(waits.join("; "))
        }
    }

    /// The `InvalidRolloutDependency` condition, when a step waits for what can never be.
    fn dependency_condition(&self) -> Option<ApplicationSetCondition> {
        let (problem, _) = self.broken.first()?;
        let messages: Vec<&str> = self.broken.iter().map(|(_, m)| m.as_str()).collect();
        Some(holds(
            ConditionType::InvalidRolloutDependency,
            problem.as_str(),
            format!(
                "{}; the step waits until this is fixed",
                messages.join("; ")
            ),
            self.now,
        ))
    }

    /// The open, incomplete steps the closed step `step` waits for, directly or through closed
    /// steps: `step 2`, or `step 2 (backend-eu), step 3 (backend-us)`.
    fn frontier(&self, step: usize, gates: &[Option<Gate>]) -> Vec<String> {
        graph::ancestors(&self.config.steps, step)
            .into_iter()
            .filter(|&s| gates[s].is_some_and(|gate| gate != Gate::Complete))
            .map(|s| self.config.steps[s].label())
            .collect()
    }

    /// What stays closed behind a stalled or failed step: the later steps of a list, the
    /// steps waiting for it in a graph.
    fn later_steps(&self) -> &'static str {
        if graph::is_graph(&self.config.steps) {
            "the steps waiting for it stay closed"
        } else {
            "later steps stay closed"
        }
    }

    /// `step 2 of 4`, or `step 2 of 4 (backend-eu)` for a named step.
    fn counted(&self, step: usize) -> String {
        let config = &self.config.steps[step];
        let of = self.config.steps.len();
        match &config.name {
            Some(name) => format!("step {} of {of} ({name})", config.number),
            None => format!("step {} of {of}", config.number),
        }
    }

    /// The decision of this pass with `conditions` and `reports`: the steps, the Applications'
    /// statuses and the steps' records; nothing to sync (the caller adds what it decided).
    fn into_decision(
        self,
        unselected: Vec<String>,
        conditions: Vec<ApplicationSetCondition>,
        reports: Vec<StepReport>,
    ) -> RolloutDecision {
        RolloutDecision {
            steps: self.step_names(),
            unselected,
            application_status: self.entries,
            conditions,
            step_reports: reports,
            step_status: self
                .records
                .into_iter()
                .filter(|record| !record.is_blank())
                .collect(),
            ..RolloutDecision::default()
        }
    }

    /// Step number (1-based) → the names of its Applications.
    fn step_names(&self) -> std::collections::BTreeMap<usize, Vec<String>> {
        self.members
            .iter()
            .enumerate()
            .map(|(step, members)| {
                (
                    step + 1,
                    members.iter().map(|&i| self.apps[i].name.clone()).collect(),
                )
            })
            .collect()
    }

    /// The `UnselectedApplications` condition, when some Applications match no step.
    fn unselected_condition(&self, unselected: &[String]) -> Option<ApplicationSetCondition> {
        (!unselected.is_empty()).then(|| {
            holds(
                ConditionType::UnselectedApplications,
                REASON_NO_MATCHING_STEP,
                format!(
                    "{} Application(s) match no step and are never synced by the rollout: {}",
                    unselected.len(),
                    list(unselected.iter().map(String::as_str))
                ),
                self.now,
            )
        })
    }

    /// Why `step` failed, when failures roll back (`onFailure: rollback`): its bake failed
    /// (`gate`), or an Application of it is Degraded or its sync failed (a passed
    /// `progressDeadline` stalls the step but is no failure).
    fn failure(&self, step: usize, gate: Option<Gate>) -> Option<String> {
        if self.config.on_failure != OnFailure::Rollback {
            return None;
        }
        if gate == Some(Gate::Failed) {
            return Some(self.records[step].failure.clone());
        }
        let causes: Vec<String> = self.members[step]
            .iter()
            .filter_map(|&i| stall_cause(self.apps[i], &self.entries[i], None, self.now))
            .collect();
        (!causes.is_empty()).then(|| list(causes.iter().map(String::as_str)))
    }

    /// The rollback of the failed step `failed` (0-based): its Applications that took the new
    /// revision (not Waiting), and with `rollbackCompletedSteps` those of every other open step
    /// (all of a complete step's), in reverse dependency order after the failed step's.
    fn begin_rollback(
        &self,
        failed: usize,
        failure: String,
        gates: &[Option<Gate>],
    ) -> RolloutRollback {
        let others =
            self.config.order.iter().rev().copied().filter(|&s| {
                self.config.rollback_completed_steps && s != failed && gates[s].is_some()
            });
        let steps: Vec<(usize, Vec<(&ApplicationState, bool)>)> = std::iter::once(failed)
            .chain(others)
            .map(|step| {
                let complete = gates[step] == Some(Gate::Complete);
                let apps = self.members[step]
                    .iter()
                    .map(|&i| {
                        let took = complete || self.entries[i].status != State::Waiting;
                        (self.apps[i], took)
                    })
                    .collect();
                (step + 1, apps)
            })
            .collect();
        rollback::begin(failed + 1, failure, &steps, self.now)
    }

    /// The decision while `rollback` is recorded: it moves along ([`rollback::advance`]), the
    /// rolled-back Applications wait for a new revision, nothing else syncs, and the
    /// `RolloutRolledBack` condition names the revisions.
    fn rolled_back(
        mut self,
        mut rollback: RolloutRollback,
        unselected: Vec<String>,
    ) -> RolloutDecision {
        let apps = self.apps.clone();
        let moved = rollback::advance(&mut rollback, |name| find(&apps, name), self.now);
        let failed = usize::try_from(rollback.failed_step).unwrap_or(usize::MAX);
        for entry in &rollback.applications {
            let Some(i) = position(&self.apps, &entry.application) else {
                continue;
            };
            let message = rollback::entry_message(entry, rollback.failed_step);
            let current = &mut self.entries[i];
            if current.status != State::Waiting || current.message != message {
                transition(current, State::Waiting, message, self.now);
            }
        }
        let steps = self.members.len();
        let text = rollback::describe(&rollback, steps, &moved.failed);
        // The steps the failed one waited for stay complete (a status from an older strategy
        // may name a step there is no more).
        let waited_for = if (1..=steps).contains(&failed) {
            graph::ancestors(&self.config.steps, failed - 1)
        } else {
            std::collections::BTreeSet::new()
        };
        let reports = (0..steps)
            .map(|step| {
                let number = step + 1;
                let rolled = rollback
                    .applications
                    .iter()
                    .any(|e| e.step == number as u64 && !e.revisions.is_empty());
                let back = rollback
                    .applications
                    .iter()
                    .filter(|e| e.step == number as u64)
                    .all(|e| e.rolled_back_at.is_some());
                if number == failed {
                    self.report(step, StepState::RolledBack, text.clone())
                } else if rolled {
                    let next = if back {
                        format!("rolled back after step {failed} failed")
                    } else {
                        format!("rolling back after step {failed} failed")
                    };
                    self.report(step, StepState::RolledBack, next)
                } else if waited_for.contains(&step) {
                    self.report(step, StepState::Complete, self.complete_text(step))
                } else {
                    let next = format!(
                        "closed: step {failed} failed and was rolled back; waits for a new revision"
                    );
                    self.report(step, StepState::Closed, next)
                }
            })
            .collect();
        let reason = if rollback.completed_at.is_some() {
            RollbackReason::RolledBack
        } else {
            RollbackReason::RollingBack
        };
        let mut conditions = vec![
            progressing(ProgressReason::RolloutRolledBack, text.clone(), self.now),
            holds(
                ConditionType::RolloutRolledBack,
                reason.as_str(),
                text,
                self.now,
            ),
        ];
        conditions.extend(self.unselected_condition(&unselected));
        conditions.sort_by_key(|c| c.type_);
        RolloutDecision {
            rollback_syncs: moved.requests,
            rollback: Some(rollback),
            ..self.into_decision(unselected, conditions, reports)
        }
    }

    /// Pending Applications of closed steps whose sync has not started go back to Waiting: the
    /// steps they wait for must prove the revision first.
    fn close_steps(&mut self, gates: &[Option<Gate>]) {
        for step in 0..self.members.len() {
            if gates[step].is_some() {
                continue;
            }
            let waited = self.frontier(step, gates);
            let verb = if waited.len() == 1 { "is" } else { "are" };
            let message = format!(
                "{} {verb} not complete any more; waiting again before syncing",
                waited.join(", ")
            );
            for &i in &self.members[step] {
                let entry = &mut self.entries[i];
                if entry.status == State::Pending && !sync_started_since(self.apps[i], entry) {
                    transition(entry, State::Waiting, message.clone(), self.now);
                }
            }
        }
    }

    /// Why the step cannot progress: Degraded Applications, failed syncs, passed deadlines.
    fn stall_causes(&self, step: usize) -> Vec<String> {
        let deadline = self.config.steps[step].progress_deadline;
        self.members[step]
            .iter()
            .filter_map(|&i| stall_cause(self.apps[i], &self.entries[i], deadline, self.now))
            .collect()
    }

    /// The Applications of `step` a sync window holds back — Waiting ones, and Pending ones whose
    /// sync has not started — with their Waiting entries saying so. While there is one, the
    /// step promotes nothing; syncs already started finish.
    fn held_by_windows(&mut self, step: usize) -> Vec<usize> {
        let mut held = Vec::new();
        for &i in &self.members[step] {
            let app = self.apps[i];
            let Some(block) = &app.sync_blocked_by else {
                continue;
            };
            let entry = &mut self.entries[i];
            let waiting = entry.status == State::Waiting && app.exists;
            if waiting || (entry.status == State::Pending && !sync_started_since(app, entry)) {
                if waiting {
                    entry.message = format!("waits for {}", block.short());
                }
                held.push(i);
            }
        }
        held
    }

    /// Promotes Waiting Applications of `step` in name order while a slot is free.
    fn promote(&mut self, step: usize) -> Vec<usize> {
        let config = &self.config.steps[step];
        let limit = config.max_update.limit(self.members[step].len());
        let mut in_flight = self.in_flight(step);
        let mut promoted = Vec::new();
        for &i in &self.members[step] {
            if limit.is_some_and(|limit| in_flight >= limit) {
                break;
            }
            let entry = &mut self.entries[i];
            if entry.status != State::Waiting || !self.apps[i].exists {
                continue;
            }
            in_flight += 1;
            let slots = limit.map_or_else(
                || "no limit".to_string(),
                |l| format!("{in_flight}/{l} in flight"),
            );
            transition(
                entry,
                State::Pending,
                format!(
                    "promoted in step {} ({slots}); sync triggered",
                    config.number
                ),
                self.now,
            );
            promoted.push(i);
        }
        promoted
    }

    /// Pending, its sync not started, and no other sync running: the controller triggers one.
    fn needs_sync(&self, index: usize) -> bool {
        let (app, entry) = (self.apps[index], &self.entries[index]);
        entry.status == State::Pending
            && !sync_started_since(app, entry)
            && app
                .status
                .operation_state
                .as_ref()
                .is_none_or(|op| !op.phase.running())
    }

    fn report(&self, step: usize, state: StepState, next: String) -> StepReport {
        let config: &RolloutStep = &self.config.steps[step];
        StepReport {
            step: config.number,
            name: config.name.clone(),
            depends_on: graph::is_graph(&self.config.steps)
                .then(|| config.depends_on.iter().map(|&d| d + 1).collect()),
            after_application_sets: config
                .external
                .iter()
                .map(|d| external::dependency_label(d, self.namespace))
                .collect(),
            state,
            max_update: config.max_update.to_string(),
            limit: config.max_update.limit(self.members[step].len()),
            in_flight: self.in_flight(step),
            progress_deadline: config.progress_deadline.map(format_duration),
            bake_time: config.bake_time.map(format_duration),
            analysis: config.analysis.as_ref().map(AnalysisCheck::describe),
            next,
        }
    }

    /// Moves the analysis of `step` (otherwise complete) along in `record`; a Job analysis
    /// whose Job was not seen asks for its creation.
    fn analyse(
        &mut self,
        step: usize,
        check: &AnalysisCheck,
        record: &mut RolloutStepStatus,
    ) -> Gate {
        let number = self.config.steps[step].number;
        let namespace = match check {
            AnalysisCheck::Job { namespace } => namespace
                .clone()
                .or_else(|| {
                    self.members[step]
                        .first()
                        .and_then(|&i| self.apps[i].destination.namespace.clone())
                })
                .unwrap_or_default(),
            AnalysisCheck::Http(_) => String::new(),
        };
        let mut clusters: Vec<AnalysisCluster> = self.members[step]
            .iter()
            .map(|&i| AnalysisCluster::of(&self.apps[i].destination))
            .collect();
        clusters.sort();
        clusters.dedup();
        let name = || {
            let revisions: Vec<&str> = self.members[step]
                .iter()
                .flat_map(|&i| self.apps[i].target())
                .map(String::as_str)
                .collect();
            job_name(self.application_set, number, &revisions)
        };
        let observed: Vec<&AnalysisObservation> =
            self.analysis.iter().filter(|o| o.step == number).collect();
        if let (AnalysisCheck::Job { .. }, Some(analysis)) = (check, record.analysis.as_mut())
            && analysis.clusters.is_empty()
        {
            // Recorded before the clusters were: the Jobs go where the Applications are.
            analysis.clusters.clone_from(&clusters);
        }
        let combined = match (check, &record.analysis) {
            (AnalysisCheck::Job { .. }, Some(analysis)) => {
                combine_jobs(&analysis.clusters, &observed)
            }
            _ => observed.first().map(|&o| o.clone()),
        };
        let analysed = record.analyse(
            check,
            || (format!("{namespace}/{}", name()), clusters),
            combined.as_ref(),
            self.now,
        );
        if analysed.create
            && let Some(analysis) = &record.analysis
            && let Some((namespace, name)) = analysis.job.split_once('/')
            && let Some(spec) = self.job_spec(step)
        {
            for cluster in &analysis.clusters {
                self.analysis_jobs.push(AnalysisJob {
                    step: number,
                    cluster: cluster.clone(),
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    spec: spec.clone(),
                });
            }
        }
        if let Some(analysis) = &record.analysis {
            let message = format!("step {number} analysis: {}", analysis.message);
            for &i in &self.members[step] {
                self.entries[i].message.clone_from(&message);
            }
        }
        analysed.gate
    }

    /// The Job spec of `step`'s Job analysis, from the strategy.
    fn job_spec(&self, step: usize) -> Option<k8s_openapi::api::batch::v1::JobSpec> {
        self.strategy_steps
            .get(step)?
            .analysis
            .as_ref()?
            .job
            .as_ref()
            .map(|job| job.spec.spec.clone())
    }

    /// What a step whose analysis runs says: since when, the last result, what is next.
    fn analysis_text(&self, step: usize, since: Timestamp) -> String {
        let record = &self.records[step];
        let analysis = record.analysis.as_ref();
        let last = analysis.map_or("", |a| a.message.as_str());
        let next = match (&self.config.steps[step].analysis, analysis) {
            (Some(AnalysisCheck::Http(check)), Some(a)) => {
                let at = a
                    .next_attempt_at
                    .as_ref()
                    .map_or_else(|| "now".to_owned(), |t| t.0.to_string());
                format!(
                    "; next GET at {at} ({}, {} so far)",
                    super::analysis::retry_text(check),
                    a.failures
                )
            }
            _ => String::new(),
        };
        format!("analysing since {since}: {last}{next}; later steps open when it passes")
    }

    /// What a step waiting for approval says: since when, what it would sync, how to approve.
    fn approval_text(&self, step: usize, since: Timestamp) -> String {
        let number = self.config.steps[step].number;
        let to_sync = self.members[step]
            .iter()
            .filter(|&&i| !self.complete(i))
            .count();
        let annotation = self
            .promote
            .filter(|p| {
                let p = p.trim();
                p.parse::<usize>().is_err()
                    && !self
                        .config
                        .steps
                        .iter()
                        .any(|s| s.name.as_deref() == Some(p))
            })
            .map_or_else(String::new, |p| {
                format!("; the annotation {PROMOTE_ANNOTATION} {p:?} is not a step number")
            });
        format!(
            "waits for approval since {since}: {to_sync} Application(s) to sync; approve with flotilla rollout promote --step {number} (annotation {PROMOTE_ANNOTATION}: \"{number}\"){annotation}"
        )
    }

    fn complete_text(&self, step: usize) -> String {
        let baked = self.records[step]
            .baked_at
            .as_ref()
            .map_or_else(String::new, |at| format!(", baked until {}", at.0));
        match self.members[step].len() {
            0 => "complete: no Applications".to_string(),
            n => format!("complete: all {n} Healthy on their target revisions{baked}"),
        }
    }

    fn current_report(
        &self,
        step: usize,
        causes: &[String],
        promoted: &[usize],
        held: &[usize],
    ) -> StepReport {
        let limit = self.config.steps[step]
            .max_update
            .limit(self.members[step].len());
        let in_flight = self.in_flight(step);
        let waiting = self.members[step]
            .iter()
            .filter(|&&i| self.entries[i].status == State::Waiting && self.apps[i].exists)
            .count();
        let slots = limit.map_or_else(String::new, |l| format!(" ({in_flight}/{l} in flight)"));
        let in_flight_apps = || {
            self.members[step]
                .iter()
                .filter(|&&i| matches!(self.entries[i].status, State::Pending | State::Progressing))
                .map(|&i| describe(self.apps[i], &self.entries[i]))
        };
        let (state, next) = if !causes.is_empty() {
            (
                StepState::Stalled,
                format!(
                    "stalled: {}; {}",
                    list(causes.iter().map(String::as_str)),
                    self.later_steps()
                ),
            )
        } else if self.config.paused {
            let running = if in_flight > 0 {
                format!("; {in_flight} in flight finish: {}", list(in_flight_apps()))
            } else {
                String::new()
            };
            (
                StepState::Paused,
                format!("paused: nothing new is promoted{running}"),
            )
        } else if let Some(block) = held
            .iter()
            .filter_map(|&i| self.apps[i].sync_blocked_by.as_ref())
            .max_by_key(|block| block.opens_at.unwrap_or(Timestamp::MAX))
        {
            let names = held.iter().map(|&i| self.apps[i].name.as_str());
            let started: Vec<String> = self.members[step]
                .iter()
                .filter(|&i| !held.contains(i))
                .filter(|&&i| matches!(self.entries[i].status, State::Pending | State::Progressing))
                .map(|&i| describe(self.apps[i], &self.entries[i]))
                .collect();
            let running = if started.is_empty() {
                String::new()
            } else {
                format!("; in flight finish: {}", list(started.iter()))
            };
            (
                StepState::WindowClosed,
                format!(
                    "waits for {}; held back: {}{running}",
                    block.short(),
                    list(names)
                ),
            )
        } else if !promoted.is_empty() {
            let names = promoted.iter().map(|&i| self.apps[i].name.as_str());
            (
                StepState::Progressing,
                format!("syncs {} now{slots}", list(names)),
            )
        } else if limit == Some(0) && waiting > 0 {
            (
                StepState::Held,
                format!(
                    "holds: maxUpdate {} lets nothing sync; {waiting} Waiting until someone syncs them by hand",
                    self.config.steps[step].max_update
                ),
            )
        } else if in_flight > 0 {
            let queue = if waiting > 0 {
                format!("; {waiting} Waiting for a free slot{slots}")
            } else {
                String::new()
            };
            (
                StepState::Progressing,
                format!("waits: {}{queue}", list(in_flight_apps())),
            )
        } else {
            let blocking = self.members[step]
                .iter()
                .filter(|&&i| !self.complete(i))
                .map(|&i| describe(self.apps[i], &self.entries[i]));
            (StepState::Waiting, format!("waits: {}", list(blocking)))
        };
        self.report(step, state, next)
    }

    fn progress_condition(
        &self,
        current: &[usize],
        reports: &[StepReport],
    ) -> crate::api::application_set_status::ApplicationSetCondition {
        let Some(lead) = current
            .iter()
            .copied()
            .min_by_key(|&s| urgency(reports[s].state))
        else {
            let apps: usize = self.members.iter().map(Vec::len).sum();
            return progressing(
                ProgressReason::ApplicationSetRolloutComplete,
                format!(
                    "rollout complete: all {apps} Application(s) in {} step(s) are Healthy on their target revisions",
                    self.members.len()
                ),
                self.now,
            );
        };
        let reason = match reports[lead].state {
            StepState::Stalled => ProgressReason::RolloutStalled,
            StepState::RolledBack => ProgressReason::RolloutRolledBack,
            StepState::Failed => ProgressReason::StepFailed,
            StepState::Baking => ProgressReason::StepBaking,
            StepState::Analysing => ProgressReason::StepAnalysing,
            StepState::WaitingForApproval => ProgressReason::StepWaitingForApproval,
            StepState::WaitingForApplicationSet => ProgressReason::StepWaitingForApplicationSet,
            StepState::Paused => ProgressReason::RolloutPaused,
            StepState::Held => ProgressReason::StepHeld,
            StepState::WindowClosed => ProgressReason::StepWaitingForWindow,
            StepState::Waiting => ProgressReason::StepWaiting,
            StepState::Progressing | StepState::Complete | StepState::Closed => {
                ProgressReason::StepProgressing
            }
        };
        // Every open step, in list order: parallel steps each say where they stand.
        let message: Vec<String> = current
            .iter()
            .map(|&s| format!("{} {}", self.counted(s), reports[s].next))
            .collect();
        progressing(reason, message.join("; "), self.now)
    }
}

/// How much a step's state says about the whole rollout (lower says more): the condition's
/// reason is that of the open step with the lowest.
fn urgency(state: StepState) -> u8 {
    match state {
        StepState::Stalled => 0,
        StepState::Failed => 1,
        StepState::RolledBack => 2,
        StepState::WaitingForApproval => 3,
        StepState::WaitingForApplicationSet => 4,
        StepState::WindowClosed => 5,
        StepState::Held => 6,
        StepState::Paused => 7,
        StepState::Analysing => 8,
        StepState::Baking => 9,
        StepState::Progressing => 10,
        StepState::Waiting => 11,
        StepState::Complete | StepState::Closed => 12,
    }
}

/// Phase one for one Application: its prior rollout status moved along by what is observed now.
fn observe(
    app: &ApplicationState,
    prior: Option<&ApplicationSetApplicationStatus>,
    step: &str,
    now: Timestamp,
) -> ApplicationSetApplicationStatus {
    let target = app.target();
    let mut entry = prior
        .cloned()
        .unwrap_or_else(|| ApplicationSetApplicationStatus {
            application: app.name.clone(),
            status: State::Waiting,
            step: String::new(),
            target_revisions: target.to_vec(),
            last_transition_time: Some(Time(now)),
            message: "new in the rollout; Waiting".to_string(),
        });
    if entry.step != step {
        entry.step = step.to_string();
    }
    if entry.target_revisions.is_empty() {
        entry.target_revisions = target.to_vec();
    }
    if entry.target_revisions != target {
        let message = format!(
            "target revision changed from {} to {}; waiting to roll it out in order",
            revisions(&entry.target_revisions),
            revisions(target)
        );
        entry.target_revisions = target.to_vec();
        if entry.status != State::Waiting {
            transition(&mut entry, State::Waiting, message, now);
        }
    }
    if app.spec_changed && entry.status != State::Waiting {
        let message = "generated spec changed; waiting to sync it in order".to_string();
        transition(&mut entry, State::Waiting, message, now);
    }
    if entry.status == State::Healthy && app.status.sync == SyncStatusCode::OutOfSync {
        let message = "OutOfSync again; waiting to sync it in order".to_string();
        transition(&mut entry, State::Waiting, message, now);
    }
    if entry.status == State::Pending && sync_started_since(app, &entry) {
        let started = app.status.operation_state.as_ref().map(|op| op.started_at);
        let message = format!(
            "sync started at {}",
            started.map(|t| t.to_string()).unwrap_or_default()
        );
        transition(&mut entry, State::Progressing, message, now);
    }
    if entry.status == State::Waiting && !app.spec_changed && app.healthy_on_target() {
        let message = format!(
            "already Synced and Healthy on {}; no sync needed",
            revisions(target)
        );
        transition(&mut entry, State::Healthy, message, now);
    }
    if entry.status == State::Progressing && app.healthy_on_target() {
        let message = format!("sync finished: Healthy and Synced on {}", revisions(target));
        transition(&mut entry, State::Healthy, message, now);
    }
    entry
}

fn transition(
    entry: &mut ApplicationSetApplicationStatus,
    status: State,
    message: String,
    now: Timestamp,
) {
    entry.status = status;
    entry.message = message;
    entry.last_transition_time = Some(Time(now));
}

/// A sync operation started at or after the entry's last transition (Pending).
fn sync_started_since(app: &ApplicationState, entry: &ApplicationSetApplicationStatus) -> bool {
    app.status.operation_state.as_ref().is_some_and(|op| {
        // Times have whole seconds: an earlier sync (of the previous revision) that started in
        // the second the entry became Pending is not the one requested, which syncs the target.
        let requested = op.revisions.is_empty() || op.revisions == entry.target_revisions;
        requested
            && entry
                .last_transition_time
                .as_ref()
                .is_none_or(|since| op.started_at >= since.0)
    })
}

/// Why one Application stalls its step, if it does.
fn stall_cause(
    app: &ApplicationState,
    entry: &ApplicationSetApplicationStatus,
    deadline: Option<Duration>,
    now: Timestamp,
) -> Option<String> {
    let name = &app.name;
    let in_flight = matches!(entry.status, State::Pending | State::Progressing);
    if (in_flight || entry.status == State::Healthy) && app.status.health == HealthStatus::Degraded
    {
        return Some(format!(
            "{name} Degraded{}",
            detail(&app.status.health_message)
        ));
    }
    if entry.status == State::Progressing
        && let Some(op) = app
            .status
            .operation_state
            .as_ref()
            .filter(|op| op.phase.failed())
    {
        return Some(format!("{name} sync {:?}{}", op.phase, detail(&op.message)));
    }
    let deadline = deadline.filter(|_| in_flight)?;
    let since = match (&entry.status, &app.status.operation_state) {
        (State::Progressing, Some(op)) => op.started_at,
        _ => entry.last_transition_time.as_ref().map_or(now, |t| t.0),
    };
    let elapsed_ms = now.as_millisecond().saturating_sub(since.as_millisecond());
    let elapsed = Duration::from_millis(u64::try_from(elapsed_ms).unwrap_or(0));
    (elapsed > deadline).then(|| {
        format!(
            "{name} {} for {}, over the {} progressDeadline ({}{})",
            entry.status.as_str(),
            format_duration(Duration::from_secs(elapsed.as_secs())),
            format_duration(deadline),
            app.status.health.as_str(),
            detail(&app.status.health_message)
        )
    })
}

/// `": message"`, or nothing for an empty message.
fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

/// One Application in a "waits:" explanation, e.g. `backend-eu Progressing 1/3 pods ready`.
fn describe(app: &ApplicationState, entry: &ApplicationSetApplicationStatus) -> String {
    let name = &app.name;
    if !app.exists {
        return format!("{name} not created yet");
    }
    let status = &app.status;
    let health = format!(
        "{}{}",
        status.health.as_str(),
        if status.health_message.is_empty() {
            String::new()
        } else {
            format!(" {}", status.health_message)
        }
    );
    match entry.status {
        State::Pending => match &status.operation_state {
            Some(op) if op.phase.running() => {
                format!("{name} Pending (an earlier sync is still running)")
            }
            _ => format!("{name} Pending (sync triggered, not started)"),
        },
        State::Progressing if status.health == HealthStatus::Progressing => {
            format!(
                "{name} Progressing{}",
                health.strip_prefix("Progressing").unwrap_or("")
            )
        }
        State::Progressing => format!("{name} Progressing ({health}, {})", status.sync.as_str()),
        State::Waiting => format!("{name} Waiting ({health}, {})", status.sync.as_str()),
        State::Healthy => format!(
            "{name} {health}, {} on {} (target {})",
            status.sync.as_str(),
            revisions(&status.revisions),
            revisions(app.target())
        ),
    }
}

fn revisions(revisions: &[String]) -> String {
    if revisions.is_empty() {
        "no revision".to_string()
    } else {
        revisions.join(",")
    }
}

/// `a, b, c and 4 more`.
fn list<'a>(items: impl Iterator<Item = impl AsRef<str> + 'a>) -> String {
    let mut shown = Vec::new();
    let mut more = 0usize;
    for item in items {
        if shown.len() < NAMES_SHOWN {
            shown.push(item.as_ref().to_string());
        } else {
            more += 1;
        }
    }
    let mut text = shown.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// `now` as Kubernetes stores times (whole seconds), so a pass replayed from status agrees.
fn whole_seconds(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// The decision for a strategy that cannot be followed: prior status kept, nothing synced.
fn invalid(input: &RolloutInput, now: Timestamp, error: &RolloutConfigError) -> RolloutDecision {
    let message = format!("{error}; the rollout does not advance until this is fixed");
    let mut application_status = input.prior_application_status.clone();
    application_status.sort_by(|a, b| a.application.cmp(&b.application));
    let mut conditions = vec![
        holds(
            ConditionType::InvalidRolloutConfig,
            error.reason().as_str(),
            message.clone(),
            now,
        ),
        progressing(ProgressReason::InvalidRolloutConfig, message, now),
    ];
    conditions.sort_by_key(|c| c.type_);
    RolloutDecision {
        application_status,
        conditions,
        step_status: input.prior_step_status.clone(),
        rollback: input.prior_rollback.clone(),
        ..RolloutDecision::default()
    }
}

//! The simulation's report, built from what the executor recorded and the rollout decided:
//! total time, each step's and each Application's start and end, every Application's bar split
//! into phases and waves (in execution order), the critical path, what blocked, when steps
//! waited for sync windows, and the rollout condition a user would see. Times are seconds of virtual time since the start.
//! The web view draws a live rollout as the same report (`crate::web::timeline`), from the
//! operations recorded in Applications' status, with [`segments`], [`step_times`] and
//! [`critical_path`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla_core::health::HealthStatus;
use flotilla_core::rollout::RolloutDecision;
use flotilla_core::rollout::decision::step_title;
use flotilla_core::rollout::graph;
use flotilla_core::sync::{HookPhase, ResourceResult, ResultStatus, SyncPhase};
use flotilla_generators::duration::format_duration;

use super::clock::VirtualClock;
use super::driver::{Driven, WaitKind};

/// How the rollout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Ending {
    /// Every Application synced and is Healthy.
    Complete,
    /// A sync failed; what depends on it never started.
    Failed,
    /// Nothing failed, but some Applications were never synced (paused, held, unselected, a
    /// step waiting for an approval nobody gave).
    Stuck,
    /// A step failed and was rolled back (`onFailure: rollback`).
    RolledBack,
    /// Work is left (a live rollout drawn by the web view, never a simulation).
    InProgress,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// `RollingSync` or `AllAtOnce`.
    pub strategy: String,
    /// How it ended.
    pub ending: Ending,
    /// Virtual seconds from the start to the end of the last sync.
    pub total_seconds: f64,
    /// Steps in order (`AllAtOnce`: one step with every Application).
    pub steps: Vec<StepTimes>,
    /// Every Application, by step then name.
    pub applications: Vec<AppReport>,
    /// The Applications each step waited for last, in order.
    pub critical_path: Vec<PathLink>,
    /// What failed or never ran, and why.
    pub blocked: Vec<Blocked>,
    /// When steps waited for sync windows or baked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_waits: Vec<StepWaitReport>,
    /// The `RolloutProgressing` condition as the ApplicationSet would show it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// One step's Applications and times.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepTimes {
    /// 1-based.
    pub step: usize,
    /// Its Applications.
    pub applications: Vec<String>,
    /// When its first sync started.
    pub start: Option<f64>,
    /// When its last Application was done (synced, and Healthy if it became so), once all are.
    pub end: Option<f64>,
    /// What the rollout said of it last.
    pub state: String,
    /// The step's `name`, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The steps it waited for, when the strategy is a graph (`None` for a list: the one
    /// before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<usize>>,
    /// The steps of other ApplicationSets it waited for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_application_sets: Vec<String>,
}

impl StepTimes {
    /// `Step 2`, `Step 2 (backend-eu)`, `Step 4 (frontend, after steps 2, 3)`.
    #[must_use]
    pub fn title(&self) -> String {
        step_title(
            self.step,
            self.name.as_deref(),
            self.after.as_deref(),
            &self.after_application_sets,
        )
    }
}

/// One Application's run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppReport {
    /// Name.
    pub name: String,
    /// Its step; `None` when it matches no step.
    pub step: Option<usize>,
    /// Its destination cluster.
    pub destination: String,
    /// `Succeeded`, `Failed`, `Terminated`, or `NotSynced`.
    pub result: String,
    /// When its sync started.
    pub start: Option<f64>,
    /// When its sync ended.
    pub end: Option<f64>,
    /// When it was seen turning Healthy after its sync (the operation ends once its last wave
    /// is applied, maybe before); `None` when it was not (or is not known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy: Option<f64>,
    /// The operation's message.
    pub message: String,
    /// Its phases and waves, in execution order.
    pub segments: Vec<Segment>,
    /// Its rollback sync (`onFailure: rollback`): when requested and when it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback: Option<(f64, f64)>,
}

/// A stretch of one sync: one phase and wave.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    /// `PreSync`, `wave 0`, `PostSync wave 1`, ...
    pub label: String,
    /// The phase.
    pub phase: SyncPhase,
    /// The wave.
    pub wave: i32,
    /// When its first object was applied.
    pub start: f64,
    /// When the next segment started, or the operation ended.
    pub end: f64,
    /// Something in it failed.
    pub failed: bool,
    /// `Kind name` of its objects (hooks marked), in the order applied.
    pub objects: Vec<String>,
}

/// One link of the critical path.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathLink {
    /// The step.
    pub step: usize,
    /// The Application that ended last in it.
    pub application: String,
    /// Its start.
    pub start: f64,
    /// Its end.
    pub end: f64,
    /// Its longest segment, e.g. `PreSync (30.0s)`.
    pub longest: String,
}

/// A stretch during which a step waited for a sync window or baked.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepWaitReport {
    /// The step.
    pub step: usize,
    /// What it waited for.
    pub kind: WaitKind,
    /// What the rollout said, e.g. `waits for window 'prod freeze' (opens Mon 08:00 UTC); ...`.
    pub reason: String,
    /// When the wait began.
    pub start: f64,
    /// When it ended.
    pub end: f64,
}

/// An Application that failed or never synced.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Blocked {
    /// Its name.
    pub application: String,
    /// Why.
    pub reason: String,
}

impl AppReport {
    /// When it was done: Healthy after its sync, or else its sync's end.
    #[must_use]
    pub fn done(&self) -> Option<f64> {
        let end = self.end?;
        Some(self.healthy.map_or(end, |healthy| healthy.max(end)))
    }
}

/// Builds the report of a simulation.
#[must_use]
pub fn build(driven: &Driven, clock: &VirtualClock, strategy: &str) -> Report {
    let offset = |time: Timestamp| secs(clock.offset(time));
    let seconds = |time: &Option<Time>| time.as_ref().map(|t| offset(t.0));
    let step_of = step_of(driven);
    let mut applications: Vec<AppReport> = driven
        .runs
        .iter()
        .map(|run| {
            let operation = run.operation.as_ref();
            AppReport {
                name: run.name.clone(),
                step: step_of.get(run.name.as_str()).copied(),
                destination: run.destination.clone(),
                result: operation.map_or("NotSynced".to_owned(), |op| format!("{:?}", op.phase)),
                start: run.triggered_at.map(secs),
                end: operation.and_then(|op| seconds(&op.finished_at)),
                healthy: run.healthy_at.map(secs),
                message: operation.map(|op| op.message.clone()).unwrap_or_default(),
                segments: operation
                    .map(|op| segments(&op.resources, seconds(&op.finished_at), &offset))
                    .unwrap_or_default(),
                rollback: run
                    .rollback
                    .map(|(start, end)| (secs(start), secs(end.unwrap_or(driven.ended_at)))),
            }
        })
        .collect();
    applications.sort_by(|a, b| {
        (a.step.is_none(), a.step, &a.name).cmp(&(b.step.is_none(), b.step, &b.name))
    });
    let steps = step_times(driven.decision.as_ref(), &applications);
    // A sync that succeeded leaves a Degraded Application failed all the same (its last wave
    // ended the operation before its health showed, as in Argo CD).
    let degraded: BTreeSet<&str> = driven
        .runs
        .iter()
        .filter(|run| {
            run.operation.is_some() && run.observed.status.health == HealthStatus::Degraded
        })
        .map(|run| run.name.as_str())
        .collect();
    let failed_step = driven.decision.as_ref().is_some_and(|d| {
        d.step_reports
            .iter()
            .any(|r| r.state == flotilla_core::rollout::StepState::Failed)
    });
    let ending = if driven
        .decision
        .as_ref()
        .is_some_and(|d| d.rollback.is_some())
    {
        Ending::RolledBack
    } else if failed_step
        || applications.iter().any(|a| {
            a.start.is_some() && (a.result != "Succeeded" || degraded.contains(a.name.as_str()))
        })
    {
        Ending::Failed
    } else if applications.iter().all(|a| a.result == "Succeeded") {
        Ending::Complete
    } else {
        Ending::Stuck
    };
    Report {
        strategy: strategy.to_owned(),
        ending,
        total_seconds: secs(driven.ended_at),
        critical_path: critical_path(&steps, &applications),
        blocked: blocked(driven, &applications),
        step_waits: driven
            .step_waits
            .iter()
            .map(|wait| StepWaitReport {
                step: wait.step,
                kind: wait.kind,
                reason: wait.reason.clone(),
                start: secs(wait.start),
                end: secs(wait.end.min(driven.ended_at)),
            })
            .collect(),
        condition: driven.decision.as_ref().and_then(condition),
        steps,
        applications,
    }
}

fn secs(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1000.0).round() / 1000.0
}

/// Each Application's step: RollingSync's assignment, or step 1 for everything.
fn step_of(driven: &Driven) -> BTreeMap<&str, usize> {
    match &driven.decision {
        Some(decision) => decision
            .steps
            .iter()
            .flat_map(|(step, apps)| apps.iter().map(move |app| (app.as_str(), *step)))
            .collect(),
        None => driven
            .runs
            .iter()
            .map(|run| (run.name.as_str(), 1))
            .collect(),
    }
}

/// Consecutive records of one phase and wave form a segment; `offset` gives a time's seconds
/// on the report's axis, `finished` the operation's end.
#[must_use]
pub fn segments(
    records: &[ResourceResult],
    finished: Option<f64>,
    offset: &dyn Fn(Timestamp) -> f64,
) -> Vec<Segment> {
    let start_of = |r: &ResourceResult| r.started_at.as_ref().map_or(0.0, |t| offset(t.0));
    let groups: Vec<&[ResourceResult]> = records
        .chunk_by(|a, b| (a.sync_phase, a.wave) == (b.sync_phase, b.wave))
        .collect();
    groups
        .iter()
        .enumerate()
        .map(|(i, group)| {
            let first = &group[0];
            let start = start_of(first);
            let end = groups
                .get(i + 1)
                .map(|next| start_of(&next[0]))
                .or(finished)
                .unwrap_or(start);
            Segment {
                label: label(first.sync_phase, first.wave),
                phase: first.sync_phase,
                wave: first.wave,
                start,
                end,
                failed: group.iter().any(|r| {
                    r.hook_phase == Some(HookPhase::Failed)
                        || r.status == ResultStatus::SyncFailed
                        || r.health == Some(HealthStatus::Degraded)
                }),
                objects: group
                    .iter()
                    .map(|r| match r.hook_type {
                        Some(hook) => format!("{} {} ({hook} hook)", r.kind, r.name),
                        None => format!("{} {}", r.kind, r.name),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// `wave 0` for the Sync phase, `PreSync` or `PostSync wave 1` for hooks.
fn label(phase: SyncPhase, wave: i32) -> String {
    match (phase, wave) {
        (SyncPhase::Sync, wave) => format!("wave {wave}"),
        (phase, 0) => phase.to_string(),
        (phase, wave) => format!("{phase} wave {wave}"),
    }
}

/// Each step's Applications, times and last state (from `decision`; a single step without).
#[must_use]
pub fn step_times(
    decision: Option<&RolloutDecision>,
    applications: &[AppReport],
) -> Vec<StepTimes> {
    let reports: BTreeMap<usize, &flotilla_core::rollout::StepReport> = decision
        .map(|d| d.step_reports.iter().map(|r| (r.step, r)).collect())
        .unwrap_or_default();
    let mut by_step: BTreeMap<usize, Vec<&AppReport>> = BTreeMap::new();
    for app in applications {
        if let Some(step) = app.step {
            by_step.entry(step).or_default().push(app);
        }
    }
    if let Some(decision) = decision {
        for step in decision.steps.keys() {
            by_step.entry(*step).or_default();
        }
    }
    by_step
        .into_iter()
        .map(|(step, apps)| {
            let start = apps.iter().filter_map(|a| a.start).reduce(f64::min);
            let ends: Vec<Option<f64>> = apps.iter().map(|a| a.done()).collect();
            let end = ends
                .iter()
                .copied()
                .collect::<Option<Vec<f64>>>()
                .and_then(|ends| ends.into_iter().reduce(f64::max));
            let report = reports.get(&step);
            StepTimes {
                step,
                applications: apps.iter().map(|a| a.name.clone()).collect(),
                start,
                end,
                name: report.and_then(|r| r.name.clone()),
                after: report.and_then(|r| r.depends_on.clone()),
                after_application_sets: report
                    .map(|r| r.after_application_sets.clone())
                    .unwrap_or_default(),
                state: report
                    .map(|r| format!("{:?}: {}", r.state, r.next))
                    .unwrap_or_else(|| {
                        if apps.iter().all(|a| a.result == "Succeeded") {
                            "Complete".to_owned()
                        } else {
                            "Failed".to_owned()
                        }
                    }),
            }
        })
        .collect()
}

/// The chain of steps that bounded the rollout — from the step that ended last back through
/// the step each waited for that ended last ([`graph::critical_path`]; for a list, every
/// step) — and in each, the Application that ended last: the one the next step waited for.
#[must_use]
pub fn critical_path(steps: &[StepTimes], applications: &[AppReport]) -> Vec<PathLink> {
    let index: BTreeMap<usize, usize> =
        steps.iter().enumerate().map(|(i, s)| (s.step, i)).collect();
    let depends_on: Vec<Vec<usize>> = steps
        .iter()
        .enumerate()
        .map(|(i, step)| match &step.after {
            Some(after) => after.iter().filter_map(|n| index.get(n).copied()).collect(),
            None => i.checked_sub(1).into_iter().collect(),
        })
        .collect();
    // A step's end, or its last Application's when not all ended (a stuck rollout).
    let ends: Vec<Option<f64>> = steps
        .iter()
        .map(|step| {
            step.end.or_else(|| {
                applications
                    .iter()
                    .filter(|a| a.step == Some(step.step))
                    .filter_map(AppReport::done)
                    .reduce(f64::max)
            })
        })
        .collect();
    graph::critical_path(&depends_on, &ends)
        .into_iter()
        .map(|i| &steps[i])
        .filter_map(|step| {
            let last = applications
                .iter()
                .filter(|a| a.step == Some(step.step))
                .filter_map(|a| Some((a, a.start?, a.done()?)))
                .max_by(|x, y| x.2.total_cmp(&y.2))?;
            let (app, start, end) = last;
            let longest = app
                .segments
                .iter()
                .max_by(|a, b| (a.end - a.start).total_cmp(&(b.end - b.start)))
                .map(|s| format!("{} ({})", s.label, format_seconds(s.end - s.start)))
                .unwrap_or_default();
            Some(PathLink {
                step: step.step,
                application: app.name.clone(),
                start,
                end,
                longest,
            })
        })
        .collect()
}

fn blocked(driven: &Driven, applications: &[AppReport]) -> Vec<Blocked> {
    let rollout_reason = |app: &AppReport| -> String {
        let Some(decision) = &driven.decision else {
            return "not synced".to_owned();
        };
        let Some(step) = app.step else {
            return "matches no RollingSync step; the rollout never syncs it".to_owned();
        };
        let report = decision.step_reports.iter().find(|r| r.step == step);
        let entry = decision
            .application_status
            .iter()
            .find(|s| s.application == app.name);
        match (report, entry) {
            (Some(report), Some(entry)) => {
                format!(
                    "{} in step {step}; step {step} {}",
                    entry.status.as_str(),
                    report.next
                )
            }
            _ => format!("step {step} never started"),
        }
    };
    applications
        .iter()
        .filter(|app| app.result != "Succeeded")
        .map(|app| Blocked {
            application: app.name.clone(),
            reason: if app.start.is_some() {
                format!("sync {}: {}", app.result, app.message)
            } else {
                rollout_reason(app)
            },
        })
        .collect()
}

/// `RolloutProgressing=False (RolloutStalled): step 1 of 3 stalled: ...`.
fn condition(decision: &RolloutDecision) -> Option<String> {
    let condition = decision
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutProgressing)?;
    let status = match condition.status {
        ConditionStatus::True => "True",
        ConditionStatus::False => "False",
        ConditionStatus::Unknown => "Unknown",
    };
    Some(format!(
        "RolloutProgressing={status} ({}): {}",
        condition.reason, condition.message
    ))
}

/// Report seconds as a duration (`12.5s`, `1m5s`, `1h2m3s`): tenths of a second below a minute,
/// whole seconds above.
#[must_use]
pub fn format_seconds(seconds: f64) -> String {
    let tenths = if seconds < 60.0 {
        (seconds * 10.0).round()
    } else {
        seconds.round() * 10.0
    };
    format_duration(Duration::from_millis(tenths.max(0.0) as u64 * 100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_seconds_for_people() {
        let cases = [
            (0.0, "0s"),
            (12.34, "12.3s"),
            (59.5, "59.5s"),
            (65.4, "1m5s"),
            (600.0, "10m0s"),
            (3723.0, "1h2m3s"),
        ];
        for (seconds, text) in cases {
            assert_eq!(format_seconds(seconds), text);
        }
    }

    #[test]
    fn labels_name_phase_and_wave() {
        assert_eq!(label(SyncPhase::Sync, -1), "wave -1");
        assert_eq!(label(SyncPhase::PreSync, 0), "PreSync");
        assert_eq!(label(SyncPhase::PostSync, 2), "PostSync wave 2");
    }
}

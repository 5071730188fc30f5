//! The sync step function: `plan_step(&SyncState) -> SyncStep`, a pure decision of what an
//! executor does next, from the plan, the live objects and the results recorded so far.
//!
//! Order of an operation: PreSync batches, prune (non-`PruneLast`, reverse wave order), Sync
//! batches, `PruneLast` prunes (reverse wave order), PostSync batches, then PreDelete or
//! PostDelete batches (which only the plan of a deleted Application's hooks has, see
//! [`SyncPlan::deletion_hook_plan`]). A batch is one phase and
//! wave (its Namespaces and CRDs first, as a batch of their own) and completes when every hook in
//! it finished and every other object is Healthy on its current generation — except the final
//! batch, as in Argo CD's gitops-engine: once the last wave is applied and no hook is left, the
//! operation has succeeded ("all tasks run") whatever the health of what it applied, which the
//! Application's health reports from then on. Objects of a final batch that also holds hooks are
//! waited for only when the operation has more than one step (phase and wave), and fail it when
//! Degraded in a single-step one, as gitops-engine's running tasks do. Any failure (a
//! rejected apply, a failed hook, a Degraded object, the timeout) stops the sequence; SyncFail
//! hooks then run through the same batch logic and the operation ends Failed. A prune wave with a
//! `Prune=confirm` object waits, deleting nothing, until the pruning is confirmed (as Argo CD's
//! "waiting for pruning confirmation"); the wait counts against the timeout. Because every
//! decision is derived from recorded results, a restarted executor resumes where it stopped and
//! never re-runs a finished hook; a hook it created but had not recorded when it stopped is
//! recognised by its operation mark and adopted, not run again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::health::{Health, HealthStatus};
use crate::manifest::ObjectKey;
use flotilla_generators::duration::format_duration;

use super::hook_instance::created_by;
use super::live::LiveObject;
use super::plan::SyncPlan;
use super::prune::PruneTask;
use super::task::{Batch, PlannedTask, SyncTask};
use crate::api::operation_state::{HookPhase, ResourceResult, ResultStatus};
use crate::api::sync_phase::SyncPhase;

/// Everything `plan_step` decides from.
#[derive(Debug, Clone, Copy)]
pub struct SyncState<'a> {
    /// The desired tasks.
    pub plan: &'a SyncPlan,
    /// Live objects (desired ones and hooks), by identity. Only looked up, never iterated, so a
    /// hash map keeps the step deterministic and fast.
    pub live: &'a HashMap<ObjectKey, LiveObject>,
    /// Results recorded so far in this operation.
    pub results: &'a [ResourceResult],
    /// The operation's id: a hook instance it created is its own (see [`super::created_by`]).
    pub operation_id: &'a str,
    /// Objects to prune (empty unless pruning is enabled); see [`super::plan_prune`].
    pub prune: &'a [PruneTask],
    /// The recorded failure once the operation failed (SyncFail hooks are then running).
    pub failure: Option<&'a str>,
    /// Set by the executor to the limit that passed when its deadline is exceeded.
    pub timed_out: Option<Duration>,
    /// Whether the pruning of `Prune=confirm` objects is confirmed for this operation.
    pub prune_confirmed: bool,
    /// How long after a wave's last apply its health may count (Argo CD's
    /// `ARGOCD_SYNC_WAVE_DELAY`): other controllers get that long to react to what was applied
    /// before the next wave starts. Not after the final wave.
    pub wave_delay: Duration,
    /// The executor's clock, read once for this decision.
    pub now: Timestamp,
}

/// The next thing to do.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncStep<'a> {
    /// Apply these tasks (independent of each other) and record a result for each.
    Apply {
        /// The batch.
        batch: Batch,
        /// Its tasks not applied yet.
        tasks: Vec<PlannedTask<'a>>,
    },
    /// Record these hooks as applied: their live instance was created by this operation, which
    /// stopped before it recorded them (a crash or restart between the write and the record).
    AdoptHooks {
        /// The batch.
        batch: Batch,
        /// Hooks whose live instance is this operation's.
        tasks: Vec<PlannedTask<'a>>,
    },
    /// Delete the previous instances of these hooks before they are created again.
    DeleteHooks {
        /// The batch.
        batch: Batch,
        /// Hooks whose live object must go.
        tasks: Vec<PlannedTask<'a>>,
    },
    /// Record these hooks as finished, and delete those whose policy says so.
    FinishHooks {
        /// The batch.
        batch: Batch,
        /// Finished hooks.
        hooks: Vec<FinishedHook<'a>>,
    },
    /// Delete these extraneous objects (one wave, highest first) and record them as pruned.
    Prune {
        /// Their wave.
        wave: i32,
        /// Whether these are `PruneLast` deletions.
        last: bool,
        /// The objects.
        objects: Vec<&'a PruneTask>,
    },
    /// A prune wave holds `Prune=confirm` objects: nothing of it is deleted until the pruning is
    /// confirmed.
    AwaitPruneConfirmation {
        /// The wave.
        wave: i32,
        /// The objects that ask for confirmation.
        objects: Vec<&'a PruneTask>,
    },
    /// Nothing to do until the live state changes.
    Wait(Waiting),
    /// The wave delay after `batch`: nothing to do for `left`, then step again.
    Delay {
        /// The batch just applied.
        batch: Batch,
        /// What is left of the delay.
        left: Duration,
    },
    /// Record `reason` as the operation's failure, then keep stepping: SyncFail hooks run next.
    RunSyncFail {
        /// Why the operation failed.
        reason: String,
    },
    /// The operation is over.
    Done(Outcome),
}

/// A hook that finished.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedHook<'a> {
    /// The hook.
    pub task: &'a SyncTask,
    /// Healthy (succeeded) or Degraded (failed).
    pub succeeded: bool,
    /// Its health message.
    pub message: String,
    /// Whether its delete policy deletes it now.
    pub delete: bool,
}

/// What a wait is for: where the operation stands and which objects block it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// `wave 1`, `PreSync wave 0`, `prune wave 2`.
    pub at: String,
    /// The blocking objects with their health.
    pub on: Vec<Blocker>,
}

/// One object a wait is blocked on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// The object.
    pub key: ObjectKey,
    /// Its health and why.
    pub health: Health,
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every task ran.
    Succeeded,
    /// It failed.
    Failed {
        /// Names the blocking wave, objects and reasons.
        reason: String,
    },
}

/// The message of a successful operation.
pub const SUCCESS_MESSAGE: &str = "successfully synced (all tasks run)";

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key, self.health)
    }
}

impl fmt::Display for Waiting {
    /// `wave 1: Deployment shop/shop-api Progressing: 0/3 available; …`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, join(&self.on))
    }
}

impl fmt::Display for SyncStep<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = |tasks: &[PlannedTask<'_>]| {
            tasks
                .iter()
                .map(|t| t.key.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Self::Apply { batch, tasks } => write!(f, "apply {batch}: {}", keys(tasks)),
            Self::AdoptHooks { batch, tasks } => {
                write!(
                    f,
                    "adopt hooks {batch} created before a restart: {}",
                    keys(tasks)
                )
            }
            Self::DeleteHooks { batch, tasks } => {
                write!(f, "delete previous hooks {batch}: {}", keys(tasks))
            }
            Self::FinishHooks { batch, hooks } => {
                let hooks: Vec<String> = hooks
                    .iter()
                    .map(|h| {
                        let outcome = if h.succeeded { "succeeded" } else { "failed" };
                        let delete = if h.delete { ", deleted" } else { "" };
                        format!("{} {outcome}{delete}", h.task.key)
                    })
                    .collect();
                write!(f, "finish hooks {batch}: {}", hooks.join(", "))
            }
            Self::Prune {
                wave,
                last,
                objects,
            } => {
                let last = if *last { " (PruneLast)" } else { "" };
                let keys: Vec<String> = objects.iter().map(|o| o.key.to_string()).collect();
                write!(f, "prune wave {wave}{last}: {}", keys.join(", "))
            }
            Self::AwaitPruneConfirmation { wave, objects } => {
                let keys: Vec<String> = objects.iter().map(|o| o.key.to_string()).collect();
                write!(
                    f,
                    "prune wave {wave}: waiting for pruning confirmation of {} (Prune=confirm)",
                    keys.join(", ")
                )
            }
            Self::Wait(waiting) => write!(f, "wait {waiting}"),
            Self::Delay { batch, left } => {
                write!(
                    f,
                    "wave delay after {batch}: {} left",
                    format_duration(*left)
                )
            }
            Self::RunSyncFail { reason } => write!(f, "failed, running SyncFail hooks: {reason}"),
            Self::Done(Outcome::Succeeded) => write!(f, "{SUCCESS_MESSAGE}"),
            Self::Done(Outcome::Failed { reason }) => write!(f, "failed: {reason}"),
        }
    }
}

/// Decides the next step of a sync operation. Pure and cheap; call it after every executed step
/// and on every relevant change of live state.
#[must_use]
pub fn plan_step<'a>(state: &SyncState<'a>) -> SyncStep<'a> {
    let records: Records<'_> = state
        .results
        .iter()
        .map(|r| {
            (
                (
                    r.sync_phase,
                    r.group.as_str(),
                    r.kind.as_str(),
                    r.namespace.as_str(),
                    r.name.as_str(),
                ),
                r,
            )
        })
        .collect();
    let stages = stages(state.plan, state.failure.is_some());
    let final_stage = stages.iter().rposition(|stage| stage.has_work(state.prune));
    let single_step = stages
        .iter()
        .filter(|stage| stage.has_work(state.prune))
        .map(Stage::step)
        .collect::<BTreeSet<_>>()
        .len()
        == 1;
    let progress = stages
        .iter()
        .enumerate()
        .map(|(index, stage)| match stage {
            Stage::Batch(batch, first, tasks) => {
                let end = if final_stage == Some(index) {
                    End::Final { single_step }
                } else {
                    // The delay is between waves: not between a wave's Namespaces and CRDs
                    // and its other objects.
                    let next = stages[index + 1..]
                        .iter()
                        .find(|next| next.has_work(state.prune));
                    End::Healthy {
                        wave_end: next.is_none_or(|next| next.step() != stage.step()),
                    }
                };
                batch_progress(*batch, *first, tasks, end, &records, state)
            }
            Stage::Prune { last } => prune_progress(state, *last, &records),
        })
        .find(|progress| !matches!(progress, Progress::Complete))
        .unwrap_or(Progress::Complete);
    let failed = |reason: String| match state.failure {
        Some(failure) => SyncStep::Done(Outcome::Failed {
            reason: format!("{failure}; SyncFail hooks: {reason}"),
        }),
        None if state.plan.has_phase(SyncPhase::SyncFail) => SyncStep::RunSyncFail { reason },
        None => SyncStep::Done(Outcome::Failed { reason }),
    };
    match progress {
        Progress::Complete => match state.failure {
            None => SyncStep::Done(Outcome::Succeeded),
            Some(failure) => SyncStep::Done(Outcome::Failed {
                reason: failure.to_owned(),
            }),
        },
        Progress::Failed(reason) => failed(reason),
        Progress::Next(step) => match state.timed_out {
            None => step,
            Some(limit) => {
                let limit = format_duration(limit);
                failed(match step {
                    SyncStep::Wait(waiting) => format!("timed out after {limit}: {waiting}"),
                    other => format!("timed out after {limit} before: {other}"),
                })
            }
        },
    }
}

enum Stage<'a> {
    /// A batch, the index of its first task in the plan, and its tasks.
    Batch(Batch, usize, &'a [SyncTask]),
    Prune {
        last: bool,
    },
}

impl Stage<'_> {
    /// Whether the stage has anything to do in this operation.
    fn has_work(&self, prune: &[PruneTask]) -> bool {
        match self {
            Self::Batch(_, _, tasks) => !tasks.is_empty(),
            Self::Prune { last } => prune.iter().any(|task| task.last == *last),
        }
    }

    /// The step (phase and wave) of the operation the stage belongs to, as gitops-engine counts
    /// them: a wave's Namespaces and CRDs are of its step; `PruneLast` prunes are a step after
    /// every wave, other prunes one before them.
    fn step(&self) -> (SyncPhase, i32) {
        match self {
            Self::Batch(batch, _, _) => (batch.phase, batch.wave),
            Self::Prune { last: false } => (SyncPhase::PreSync, i32::MAX),
            Self::Prune { last: true } => (SyncPhase::Sync, i32::MAX),
        }
    }
}

/// When a batch's objects (hooks aside) are done.
#[derive(Clone, Copy)]
enum End {
    /// Once Healthy on their current generation: a later stage depends on them. At the end of
    /// a wave, not before the wave delay has passed since its last apply.
    Healthy {
        /// Whether the next stage is of another wave (or phase).
        wave_end: bool,
    },
    /// The last stage of the operation: once applied (see the module documentation).
    Final {
        /// Whether the operation has this one step only.
        single_step: bool,
    },
}

fn stages(plan: &SyncPlan, failing: bool) -> Vec<Stage<'_>> {
    // Batches are consecutive runs of the plan's tasks: each starts where the last ended.
    let mut first = 0;
    let batches: Vec<(Batch, usize, &[SyncTask])> = plan
        .batches()
        .into_iter()
        .map(|(batch, tasks)| {
            first += tasks.len();
            (batch, first - tasks.len(), tasks)
        })
        .collect();
    let of_phase = |phase: SyncPhase| {
        batches
            .iter()
            .filter(move |(batch, _, _)| batch.phase == phase)
            .map(|(batch, first, tasks)| Stage::Batch(*batch, *first, tasks))
    };
    if failing {
        return of_phase(SyncPhase::SyncFail).collect();
    }
    of_phase(SyncPhase::PreSync)
        .chain([Stage::Prune { last: false }])
        .chain(of_phase(SyncPhase::Sync))
        .chain([Stage::Prune { last: true }])
        .chain(of_phase(SyncPhase::PostSync))
        .chain(of_phase(SyncPhase::PreDelete))
        .chain(of_phase(SyncPhase::PostDelete))
        .collect()
}

enum Progress<'a> {
    Next(SyncStep<'a>),
    Failed(String),
    Complete,
}

/// Recorded results by (phase, group, kind, namespace, name), borrowed: no allocation per lookup.
type Records<'r> = HashMap<(SyncPhase, &'r str, &'r str, &'r str, &'r str), &'r ResourceResult>;

fn record<'r>(
    records: &Records<'r>,
    phase: SyncPhase,
    key: &ObjectKey,
) -> Option<&'r ResourceResult> {
    let namespace = key.namespace.as_deref().unwrap_or("");
    records
        .get(&(
            phase,
            key.group.as_str(),
            key.kind.as_str(),
            namespace,
            key.name.as_str(),
        ))
        .copied()
}

fn batch_progress<'a>(
    batch: Batch,
    first: usize,
    tasks: &'a [SyncTask],
    end: End,
    records: &Records<'_>,
    state: &SyncState<'_>,
) -> Progress<'a> {
    let live = state.live;
    let has_hooks = tasks.iter().any(|task| task.hook.is_some());
    // Objects applied in the final batch are done (as gitops-engine's last wave): at once
    // without hooks beside them; with hooks, unless Degraded in a single-step operation.
    let applied_is_done = |health: Option<&Health>| match end {
        End::Healthy { .. } => false,
        End::Final { .. } if !has_hooks => true,
        End::Final { single_step } => {
            single_step && health.is_none_or(|h| h.status != HealthStatus::Degraded)
        }
    };
    let mut adopt = Vec::new();
    let mut unapplied = Vec::new();
    let mut delete_first = Vec::new();
    let mut deleting = Vec::new();
    let mut blockers = Vec::new();
    let mut finished = Vec::new();
    let mut failures = Vec::new();
    for (offset, task) in tasks.iter().enumerate() {
        let planned = PlannedTask {
            index: first + offset,
            task,
        };
        let current = live.get(&task.key);
        let Some(record) = record(records, task.phase, &task.key) else {
            match (&task.hook, current) {
                (Some(_), Some(instance)) if created_by(instance, state.operation_id) => {
                    adopt.push(planned);
                }
                (Some(hook), Some(previous)) if hook.replaces_previous(&task.key) => {
                    if previous.deleting {
                        deleting.push(blocker(
                            task,
                            HealthStatus::Progressing,
                            "previous hook instance is being deleted",
                        ));
                    } else {
                        delete_first.push(planned);
                    }
                }
                _ => unapplied.push(planned),
            }
            continue;
        };
        if record.status == ResultStatus::SyncFailed {
            failures.push(format!("{} apply failed: {}", task.key, record.message));
            continue;
        }
        match (&task.hook, record.hook_phase) {
            (Some(_), Some(HookPhase::Succeeded)) => {}
            (Some(_), Some(HookPhase::Failed)) => {
                failures.push(format!("{} hook failed: {}", task.key, record.message))
            }
            (None, _) if applied_is_done(current.map(|live| &live.health)) => {}
            (hook, _) => match settled(task, record, current) {
                Settled::Pending(blocked) => blockers.push(blocked),
                Settled::Observed(health) => match (hook, health.status) {
                    (Some(hook), HealthStatus::Healthy | HealthStatus::Degraded) => {
                        let succeeded = health.status == HealthStatus::Healthy;
                        finished.push(FinishedHook {
                            task,
                            succeeded,
                            message: health.message.clone(),
                            delete: hook.deleted_after(succeeded),
                        });
                    }
                    (None, HealthStatus::Healthy) => {}
                    (None, HealthStatus::Degraded) => {
                        failures.push(format!("{} {health}", task.key))
                    }
                    _ => blockers.push(Blocker {
                        key: task.key.clone(),
                        health: health.clone(),
                    }),
                },
            },
        }
    }
    if !adopt.is_empty() {
        return Progress::Next(SyncStep::AdoptHooks {
            batch,
            tasks: adopt,
        });
    }
    if !finished.is_empty() {
        return Progress::Next(SyncStep::FinishHooks {
            batch,
            hooks: finished,
        });
    }
    if !failures.is_empty() {
        return Progress::Failed(format!("{batch}: {}", failures.join("; ")));
    }
    if !delete_first.is_empty() {
        return Progress::Next(SyncStep::DeleteHooks {
            batch,
            tasks: delete_first,
        });
    }
    if !unapplied.is_empty() && deleting.is_empty() {
        return Progress::Next(SyncStep::Apply {
            batch,
            tasks: unapplied,
        });
    }
    deleting.extend(blockers);
    if deleting.is_empty() {
        match delay_left(tasks, end, records, state) {
            Some(left) => Progress::Next(SyncStep::Delay { batch, left }),
            None => Progress::Complete,
        }
    } else {
        Progress::Next(SyncStep::Wait(Waiting {
            at: batch.to_string(),
            on: deleting,
        }))
    }
}

/// What is left of the wave delay after a complete batch: counted from the last apply of its
/// tasks (recorded, so a restarted executor keeps counting), only at the end of a wave that is
/// not the final one.
fn delay_left(
    tasks: &[SyncTask],
    end: End,
    records: &Records<'_>,
    state: &SyncState<'_>,
) -> Option<Duration> {
    if !matches!(end, End::Healthy { wave_end: true }) || state.wave_delay.is_zero() {
        return None;
    }
    let applied = tasks
        .iter()
        .filter_map(|task| record(records, task.phase, &task.key))
        .filter_map(|record| record.finished_at.as_ref().or(record.started_at.as_ref()))
        .map(|time| time.0)
        .max()?;
    let since = Duration::try_from(state.now.duration_since(applied)).unwrap_or_default();
    let left = state.wave_delay.saturating_sub(since);
    (!left.is_zero()).then_some(left)
}

/// Whether an applied object's live state reflects the apply.
enum Settled<'l> {
    /// It does; its health counts.
    Observed(&'l Health),
    /// Not yet, and why.
    Pending(Blocker),
}

fn settled<'l>(
    task: &SyncTask,
    record: &ResourceResult,
    live: Option<&'l LiveObject>,
) -> Settled<'l> {
    let Some(live) = live else {
        return Settled::Pending(blocker(task, HealthStatus::Missing, "not observed yet"));
    };
    if let (Some(applied), Some(current)) = (record.generation, live.generation)
        && current < applied
    {
        let message = format!("waiting to observe generation {applied}");
        return Settled::Pending(blocker(task, HealthStatus::Progressing, &message));
    }
    if !live.generation_observed() {
        let message = format!(
            "observedGeneration {} < generation {}",
            live.observed_generation.unwrap_or_default(),
            live.generation.unwrap_or_default()
        );
        return Settled::Pending(blocker(task, HealthStatus::Progressing, &message));
    }
    Settled::Observed(&live.health)
}

fn blocker(task: &SyncTask, status: HealthStatus, message: &str) -> Blocker {
    Blocker {
        key: task.key.clone(),
        health: Health::new(status, message),
    }
}

fn prune_progress<'a>(state: &SyncState<'a>, last: bool, records: &Records<'_>) -> Progress<'a> {
    let (prune, live) = (state.prune, state.live);
    let mut waves: BTreeMap<std::cmp::Reverse<i32>, Vec<&PruneTask>> = BTreeMap::new();
    for task in prune.iter().filter(|task| task.last == last) {
        waves
            .entry(std::cmp::Reverse(task.wave))
            .or_default()
            .push(task);
    }
    for (std::cmp::Reverse(wave), tasks) in waves {
        let mut pending = Vec::new();
        let mut blockers = Vec::new();
        let mut failures = Vec::new();
        for task in tasks {
            let current = live.get(&task.key);
            match (record(records, SyncPhase::Sync, &task.key), current) {
                (None, Some(_)) => pending.push(task),
                (None, None) => {}
                (Some(record), _) if record.status == ResultStatus::SyncFailed => {
                    failures.push(format!("{} delete failed: {}", task.key, record.message));
                }
                (Some(_), Some(_)) => blockers.push(Blocker {
                    key: task.key.clone(),
                    health: Health::new(HealthStatus::Progressing, "being deleted"),
                }),
                (Some(_), None) => {}
            }
        }
        if !failures.is_empty() {
            return Progress::Failed(format!("prune wave {wave}: {}", failures.join("; ")));
        }
        let unconfirmed: Vec<&PruneTask> = pending
            .iter()
            .copied()
            .filter(|task| task.confirm && !state.prune_confirmed)
            .collect();
        if !unconfirmed.is_empty() {
            return Progress::Next(SyncStep::AwaitPruneConfirmation {
                wave,
                objects: unconfirmed,
            });
        }
        if !pending.is_empty() {
            return Progress::Next(SyncStep::Prune {
                wave,
                last,
                objects: pending,
            });
        }
        if !blockers.is_empty() {
            return Progress::Next(SyncStep::Wait(Waiting {
                at: format!("prune wave {wave}"),
                on: blockers,
            }));
        }
    }
    Progress::Complete
}

fn join(blockers: &[Blocker]) -> String {
    blockers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

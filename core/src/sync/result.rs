//! The records an operation keeps of its tasks, built here and nowhere else: the record a task
//! starts with, a refusal before anything is written, the server's dry-run rejections, the
//! destination namespace it created, the outcome of an apply, a hook adopted after a restart or
//! finished, and a prune. The records themselves are
//! persisted types of [`crate::api::operation_state`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::operation_state::{HookPhase, ResourceAction, ResourceResult, ResultStatus};
use crate::api::sync_phase::SyncPhase;
use crate::health::HealthStatus;
use crate::manifest::ObjectKey;

use super::live::LiveObject;
use super::plan::SyncPlan;
use super::prune::PruneTask;
use super::task::SyncTask;

/// A record for a task with the given status; hooks start Running when Synced.
#[must_use]
pub fn task_record(task: &SyncTask, status: ResultStatus) -> ResourceResult {
    let hook_type = task.hook.as_ref().map(|hook| hook.hook_type);
    let mut result = ResourceResult::for_object(&task.key, task.phase, task.wave, status);
    result.hook_type = hook_type;
    result.hook_phase = hook_type
        .filter(|_| status == ResultStatus::Synced)
        .map(|_| HookPhase::Running);
    result
}

/// The record of `key` refused before anything was written: its task's, or a PreSync record for
/// an object the plan does not hold (the namespace `CreateNamespace=true` would create).
#[must_use]
pub fn refused_record(
    plan: &SyncPlan,
    key: &ObjectKey,
    message: String,
    now: &Time,
) -> ResourceResult {
    let task = plan.tasks.iter().find(|task| &task.key == key);
    let mut record = task.map_or_else(
        || ResourceResult::for_object(key, SyncPhase::PreSync, 0, ResultStatus::SyncFailed),
        |task| task_record(task, ResultStatus::SyncFailed),
    );
    record.message = message;
    record.finished_at = Some(now.clone());
    record
}

/// A record of each object the server rejected in a dry run (with its message), and what the
/// operation's failure says when there is one.
#[must_use]
pub fn rejected_records(
    rejected: &[(&SyncTask, &str)],
    now: &Time,
) -> (Vec<ResourceResult>, Option<String>) {
    let records = rejected
        .iter()
        .map(|(task, message)| {
            let mut record = task_record(task, ResultStatus::SyncFailed);
            record.message = format!("rejected by the server's dry run: {message}");
            record.finished_at = Some(now.clone());
            record
        })
        .collect();
    let failure = (!rejected.is_empty()).then(|| {
        let named: Vec<String> = rejected
            .iter()
            .map(|(task, message)| format!("{}: {message}", task.key))
            .collect();
        format!(
            "the server rejected {} object(s) in a dry run: {}",
            rejected.len(),
            named.join("; ")
        )
    });
    (records, failure)
}

/// The record of the destination namespace `CreateNamespace=true` wrote (its action and
/// health) or failed to write (the error's text), and the operation's failure in that case. A
/// namespace that `existed` was written for its `managedNamespaceMetadata`.
#[must_use]
pub fn created_namespace_record(
    key: &ObjectKey,
    existed: bool,
    created: Result<(ResourceAction, Option<HealthStatus>), String>,
    started: Time,
    finished: Time,
) -> (ResourceResult, Option<String>) {
    let status = match created {
        Ok(_) => ResultStatus::Synced,
        Err(_) => ResultStatus::SyncFailed,
    };
    let mut record = ResourceResult::for_object(key, SyncPhase::PreSync, 0, status);
    record.started_at = Some(started);
    record.finished_at = Some(finished);
    let what = if existed {
        "managedNamespaceMetadata applied"
    } else {
        "created (CreateNamespace=true)"
    };
    let failure = match created {
        Ok((action, health)) => {
            record.action = Some(action);
            record.health = health;
            record.message = what.to_owned();
            None
        }
        Err(error) => {
            let failure = if existed {
                format!("writing the managedNamespaceMetadata of {key} failed: {error}")
            } else {
                format!("creating {key} (CreateNamespace=true) failed: {error}")
            };
            record.message = error;
            Some(failure)
        }
    };
    (record, failure)
}

/// What a write of a task came to: the object the server answered (its live state, when it has
/// one the health rules read) or the error's text; a note the write adds (how it was written).
#[derive(Debug)]
pub struct WriteOutcome<'a> {
    /// The server's answer.
    pub result: Result<Written<'a>, String>,
    /// What the record's message says of the write, if anything.
    pub note: Option<String>,
}

/// A write the server accepted.
#[derive(Debug)]
pub struct Written<'a> {
    /// Created, configured or unchanged.
    pub action: ResourceAction,
    /// `metadata.generation` of the object written.
    pub generation: Option<i64>,
    /// Its live state, when it has one.
    pub live: Option<&'a LiveObject>,
}

/// The record of an applied task: Synced with the written object's action, generation and health
/// (finished at once unless it is a hook, which runs on), or SyncFailed with the error.
#[must_use]
pub fn applied_record(
    task: &SyncTask,
    outcome: WriteOutcome<'_>,
    started: &Time,
    finished: &Time,
) -> ResourceResult {
    let mut record = match outcome.result {
        Ok(written) => {
            let mut record = task_record(task, ResultStatus::Synced);
            record.action = Some(written.action);
            record.generation = written.generation;
            if let Some(live) = written.live {
                record.health = Some(live.health.status);
                record.message = live.health.message.clone();
            }
            if task.hook.is_none() {
                record.finished_at = Some(finished.clone());
            }
            if let Some(note) = outcome.note {
                record.message = note;
            }
            record
        }
        Err(error) => {
            let mut record = task_record(task, ResultStatus::SyncFailed);
            record.message = match outcome.note {
                Some(note) => format!("{error} ({note})"),
                None => error,
            };
            record.finished_at = Some(finished.clone());
            record
        }
    };
    record.started_at = Some(started.clone());
    record
}

/// The record of a hook this operation created before it stopped (a restart between the write
/// and its record), from its live instance, as [`applied_record`] would have made it.
#[must_use]
pub fn adopted_record(task: &SyncTask, live: Option<&LiveObject>, now: &Time) -> ResourceResult {
    let mut record = task_record(task, ResultStatus::Synced);
    record.action = Some(ResourceAction::Created);
    if let Some(live) = live {
        record.generation = live.generation;
        record.health = Some(live.health.status);
        record.message = live.health.message.clone();
    }
    record.started_at = Some(now.clone());
    record
}

/// Records on a hook's `record` that it finished (`succeeded` or not, with its `message`), and
/// what came of deleting it when its policy said so (`deleted`: the error's text if it failed).
pub fn finish_hook_record(
    record: &mut ResourceResult,
    succeeded: bool,
    message: String,
    deleted: Option<Result<(), String>>,
    now: Time,
) {
    record.hook_phase = Some(if succeeded {
        HookPhase::Succeeded
    } else {
        HookPhase::Failed
    });
    record.health = Some(if succeeded {
        HealthStatus::Healthy
    } else {
        HealthStatus::Degraded
    });
    record.message = message;
    record.finished_at = Some(now);
    match deleted {
        Some(Ok(())) => record.action = Some(ResourceAction::Deleted),
        Some(Err(error)) => {
            record.message = format!("{}; deleting it failed: {error}", record.message);
        }
        None => {}
    }
}

/// How the deletion of a pruned object went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PruneOutcome {
    /// Its deletion was requested.
    Requested,
    /// It was gone already.
    AlreadyGone,
    /// Deleting it failed (the error's text).
    Failed(String),
}

/// The record of pruning `object`.
#[must_use]
pub fn pruned_record(object: &PruneTask, outcome: PruneOutcome, started: Time) -> ResourceResult {
    let status = match outcome {
        PruneOutcome::Failed(_) => ResultStatus::SyncFailed,
        _ => ResultStatus::Pruned,
    };
    let mut record = ResourceResult::for_object(&object.key, SyncPhase::Sync, object.wave, status);
    record.started_at = Some(started);
    match outcome {
        PruneOutcome::Requested => {
            record.action = Some(ResourceAction::Pruned);
            record.message = "pruned".to_owned();
        }
        PruneOutcome::AlreadyGone => {
            record.action = Some(ResourceAction::Pruned);
            record.message = "already gone".to_owned();
        }
        PruneOutcome::Failed(error) => record.message = error,
    }
    record
}

//! The record an operation starts for a task; the records themselves are persisted types of
//! [`crate::api::operation_state`].

use crate::api::operation_state::{HookPhase, ResourceResult, ResultStatus};

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

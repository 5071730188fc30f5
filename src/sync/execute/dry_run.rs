//! Server-side dry runs: every operation sends its objects as dry runs before its first write
//! ([`dry_run_tasks`], as Argo CD's engine does; not an operation of one object that writes
//! nothing else, which its apply checks as well), and `--dry-run` does only that ([`dry_run`]):
//! every task of the plan (except SyncFail hooks) is sent to the server as a dry-run apply (a
//! dry-run replace with `Replace=true`), and prune candidates are listed; nothing is written and
//! nothing is waited for. Objects that depend on a Namespace or CRD this sync would create (or
//! carry `SkipDryRunOnMissingResource=true`) cannot be checked yet; they are deferred rather
//! than rejected.

use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::settings::ExecuteSettings;
use crate::sync::execute::cluster_api::{ClusterApi, ClusterError};
use flotilla_core::sync::{
    OperationPhase, OperationState, PlannedKinds, PruneTask, ResourceAction, ResourceResult,
    ResultStatus, SyncPhase, SyncPlan, SyncTask, WritePolicy, namespace_to_create,
};
use flotilla_core::sync::{desired, task_record};

/// What the server said of one object sent as a server-side dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It would be written, with this action.
    Accepted(ResourceAction),
    /// It cannot be checked before this sync creates its Namespace or kind (the reason).
    Deferred(String),
    /// The server rejected it (its message).
    Rejected(String),
}

/// Sends `tasks` of `plan` to the server as dry runs (a dry-run replace with `Replace=true`, or
/// after `Validate=false`'s apply is refused for an undeclared field), at
/// most `settings.concurrency` at once, and returns each one's verdict in order. An object whose
/// kind is defined by a CRD of the sync (or that carries `SkipDryRunOnMissingResource=true`), or
/// whose Namespace the sync creates, is deferred rather than rejected.
pub async fn dry_run_tasks<'p, C: ClusterApi>(
    cluster: &C,
    plan: &SyncPlan,
    tasks: Vec<&'p SyncTask>,
    settings: &ExecuteSettings,
) -> Vec<(&'p SyncTask, Verdict)> {
    let application = &settings.sync_options;
    let destination = settings.destination_namespace.as_deref();
    let mut created_namespaces: BTreeSet<String> = plan
        .tasks
        .iter()
        .filter(|t| t.key.group.is_empty() && t.key.kind == "Namespace")
        .map(|t| t.key.name.clone())
        .collect();
    created_namespaces.extend(namespace_to_create(plan, application, destination).map(|k| k.name));
    let planned_kinds = PlannedKinds::of(plan);
    // Futures built in a loop, not by a closure (see the executor's writes).
    let mut checks = Vec::with_capacity(tasks.len());
    for task in tasks {
        checks.push(async move {
            let object = desired(task);
            let policy = WritePolicy::for_task(task, application);
            let result = if policy.replaces() {
                cluster.replace(&object, true, policy.validation).await
            } else {
                match cluster.apply(&object, true, policy.validation).await {
                    Err(error) if policy.replace_after_rejection(error.is_undeclared_field()) => {
                        cluster.replace(&object, true, policy.validation).await
                    }
                    result => result,
                }
            };
            (task, policy.force, result)
        });
    }
    let results: Vec<_> = futures::stream::iter(checks)
        .buffered(settings.concurrency.max(1))
        .collect()
        .await;
    results
        .into_iter()
        .map(|(task, force, result)| {
            let verdict = match result {
                Ok(applied) => Verdict::Accepted(applied.action),
                Err(ClusterError::Rejected { code: 422, .. }) if force => Verdict::Deferred(
                    "Force=true: deleted and created again if the server refuses the update"
                        .to_owned(),
                ),
                Err(ClusterError::UnknownKind { .. })
                    if let Some(excuse) = planned_kinds.excuse(task, application) =>
                {
                    Verdict::Deferred(excuse.to_string())
                }
                Err(error)
                    if error.is_not_found()
                        && task
                            .key
                            .namespace
                            .as_ref()
                            .is_some_and(|ns| created_namespaces.contains(ns)) =>
                {
                    Verdict::Deferred("its Namespace is created by this sync".to_owned())
                }
                Err(error) => Verdict::Rejected(error.to_string()),
            };
            (task, verdict)
        })
        .collect()
}

/// Dry-runs `plan` and records what each object would do.
pub async fn dry_run<C: ClusterApi>(
    cluster: &C,
    plan: &SyncPlan,
    prune: &[PruneTask],
    mut state: OperationState,
    settings: &ExecuteSettings,
) -> OperationState {
    let application = &settings.sync_options;
    let destination = settings.destination_namespace.as_deref();
    if let Some(key) = namespace_to_create(plan, application, destination) {
        let mut record =
            ResourceResult::for_object(&key, SyncPhase::PreSync, 0, ResultStatus::Synced);
        record.message = if settings.managed_namespace_metadata.is_some() {
            "created when missing, its managedNamespaceMetadata applied (CreateNamespace=true; dry run)"
        } else {
            "created when missing (CreateNamespace=true; dry run)"
        }
        .to_owned();
        state.resources.push(record);
    }
    let tasks: Vec<&SyncTask> = plan
        .tasks
        .iter()
        .filter(|t| t.phase != SyncPhase::SyncFail)
        .collect();
    for (task, verdict) in dry_run_tasks(cluster, plan, tasks, settings).await {
        let mut record = task_record(task, ResultStatus::Synced);
        record.hook_phase = None;
        match verdict {
            Verdict::Accepted(action) => {
                record.action = Some(action);
                record.message = "dry run".to_owned();
            }
            Verdict::Deferred(reason) => record.message = format!("dry run skipped: {reason}"),
            Verdict::Rejected(message) => {
                record.status = ResultStatus::SyncFailed;
                record.message = message;
            }
        }
        state.resources.push(record);
    }
    for object in prune {
        let mut record = ResourceResult::for_object(
            &object.key,
            SyncPhase::Sync,
            object.wave,
            ResultStatus::Pruned,
        );
        record.message = if object.confirm {
            "would be pruned once confirmed (Prune=confirm; dry run)".to_owned()
        } else {
            "would be pruned (dry run)".to_owned()
        };
        state.resources.push(record);
    }
    let failed = state
        .resources
        .iter()
        .filter(|r| r.status == ResultStatus::SyncFailed)
        .count();
    (state.phase, state.message) = if failed == 0 {
        (
            OperationPhase::Succeeded,
            "dry run: every object accepted by the server".to_owned(),
        )
    } else {
        (
            OperationPhase::Failed,
            format!("dry run: {failed} object(s) rejected by the server"),
        )
    };
    state.finished_at = Some(Time(cluster.now()));
    state
}

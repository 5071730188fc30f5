//! `--dry-run`: every task of the plan (except SyncFail hooks) is sent to the server as a
//! server-side dry-run apply (a dry-run replace with `Replace=true`), and prune candidates are
//! listed; nothing is written and nothing is waited for. Objects that depend on a Namespace or
//! CRD this sync would create (or carry `SkipDryRunOnMissingResource=true`) cannot be checked
//! yet; they are reported as such rather than as failures.

use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::operation::desired;
use super::settings::ExecuteSettings;
use crate::cluster::api::{ClusterApi, ClusterError};
use crate::sync::{
    OperationPhase, OperationState, PlannedKinds, PruneTask, ResourceResult, ResultStatus,
    SyncPhase, SyncPlan, SyncTask, WritePolicy, namespace_to_create,
};

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
    let auto_namespace = namespace_to_create(plan, application, destination);
    let mut created_namespaces: BTreeSet<&str> = plan
        .tasks
        .iter()
        .filter(|t| t.key.group.is_empty() && t.key.kind == "Namespace")
        .map(|t| t.key.name.as_str())
        .collect();
    if let Some(key) = &auto_namespace {
        created_namespaces.insert(key.name.as_str());
        let mut record =
            ResourceResult::for_object(key, SyncPhase::PreSync, 0, ResultStatus::Synced);
        record.message = "created when missing (CreateNamespace=true; dry run)".to_owned();
        state.resources.push(record);
    }
    let planned_kinds = PlannedKinds::of(plan);
    let tasks: Vec<&SyncTask> = plan
        .tasks
        .iter()
        .filter(|t| t.phase != SyncPhase::SyncFail)
        .collect();
    let results: Vec<_> = futures::stream::iter(tasks.into_iter().map(|task| async move {
        let object = desired(task);
        let result = if WritePolicy::for_task(task, application).replace {
            cluster.replace(&object, true).await
        } else {
            cluster.apply(&object, true).await
        };
        (task, result)
    }))
    .buffered(settings.concurrency.max(1))
    .collect()
    .await;
    for (task, result) in results {
        let mut record = ResourceResult::for_task(task, ResultStatus::Synced);
        record.hook_phase = None;
        match result {
            Ok(applied) => {
                record.action = Some(applied.action);
                record.message = "dry run".to_owned();
            }
            Err(ClusterError::UnknownKind { .. })
                if let Some(excuse) = planned_kinds.excuse(task, application) =>
            {
                record.message = format!("dry run skipped: {excuse}");
            }
            Err(error)
                if error.is_not_found()
                    && task
                        .key
                        .namespace
                        .as_deref()
                        .is_some_and(|ns| created_namespaces.contains(ns)) =>
            {
                record.message =
                    "dry run skipped: its Namespace is created by this sync".to_owned();
            }
            Err(error) => {
                record.status = ResultStatus::SyncFailed;
                record.message = error.to_string();
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
        record.message = "would be pruned (dry run)".to_owned();
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

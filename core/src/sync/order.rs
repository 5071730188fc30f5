//! Task ordering: phase, wave, kind order, name; then a Namespace moves ahead of the first object
//! in it and a CRD ahead of the first custom resource of its kind, and within a wave Namespaces
//! and CRDs form a batch of their own.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde_json::Value;

use super::kind_order::kind_rank;
use super::task::{Promotion, SyncTask};
use crate::api::sync_phase::SyncPhase;

/// Sorts tasks into execution order, promoting Namespaces and CRDs where needed.
pub fn order_tasks(tasks: &mut [SyncTask]) {
    sort(tasks);
    promote(tasks);
    sort(tasks);
}

/// Sorts by [`sort_key`], computing each key once, then permutes the tasks in place.
fn sort(tasks: &mut [SyncTask]) {
    let mut keyed: Vec<(SortKey<'_>, usize)> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (sort_key(t), i))
        .collect();
    keyed.sort_unstable();
    let mut order: Vec<usize> = keyed.into_iter().map(|(_, index)| index).collect();
    // Position j receives the task at order[j]; follow each cycle once, marking it done.
    for start in 0..tasks.len() {
        let mut position = start;
        while order[position] != usize::MAX {
            let source = order[position];
            order[position] = usize::MAX;
            if source == start {
                break;
            }
            tasks.swap(position, source);
            position = source;
        }
    }
}

type SortKey<'t> = (
    SyncPhase,
    i32,
    Reverse<bool>,
    usize,
    &'t str,
    Option<&'t str>,
    &'t str,
);

fn sort_key(task: &SyncTask) -> SortKey<'_> {
    (
        task.phase,
        task.wave,
        Reverse(task.is_prerequisite()),
        kind_rank(&task.key.kind),
        &task.key.name,
        task.key.namespace.as_deref(),
        &task.key.group,
    )
}

/// Moves each Namespace to the phase/wave of the first object in it, and each CRD to that of the
/// first custom resource of its kind, when those run earlier. SyncFail tasks never pull anything
/// forward (they may never run).
fn promote(tasks: &mut [SyncTask]) {
    let mut first_in_namespace: BTreeMap<&str, usize> = BTreeMap::new();
    let mut first_of_kind: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (index, task) in tasks.iter().enumerate() {
        if task.phase >= SyncPhase::SyncFail {
            continue;
        }
        if let Some(namespace) = task.key.namespace.as_deref() {
            first_in_namespace.entry(namespace).or_insert(index);
        }
        first_of_kind
            .entry((&task.key.group, &task.key.kind))
            .or_insert(index);
    }
    let mut moves = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        let target = match (task.key.group.as_str(), task.key.kind.as_str()) {
            ("", "Namespace") => first_in_namespace.get(task.key.name.as_str()),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                let spec = task.resource.body.get("spec");
                let text = |pointer: &str| {
                    spec.and_then(|s| s.pointer(pointer))
                        .and_then(Value::as_str)
                };
                text("/group")
                    .zip(text("/names/kind"))
                    .and_then(|(group, kind)| first_of_kind.get(&(group, kind)))
            }
            _ => None,
        };
        if let Some(&target) = target {
            let ahead = &tasks[target];
            if (ahead.phase, ahead.wave) < (task.phase, task.wave) {
                moves.push((index, ahead.key.clone(), ahead.phase, ahead.wave));
            }
        }
    }
    for (index, ahead_of, phase, wave) in moves {
        let task = &mut tasks[index];
        task.promotion = Some(Promotion {
            ahead_of,
            declared_phase: task.phase,
            declared_wave: task.wave,
        });
        task.phase = phase;
        task.wave = wave;
    }
}

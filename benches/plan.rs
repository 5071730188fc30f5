//! Planning benchmark: ordering 10,000 desired objects into a sync plan, and one `plan_step`
//! over that plan with every object applied and Healthy (the step that walks the whole plan).
//! Run with `cargo bench --bench plan`.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;

use criterion::{BatchSize, Criterion};
use flotilla_core::health::{Health, HealthStatus};
use flotilla_core::manifest::{Resource, Source};
use flotilla_core::sync::{
    LiveObject, ResultStatus, SyncPlan, SyncState, SyncStep, plan_step, task_record,
};
use serde_json::json;
use support::cpu_time::ThreadCpuTime;

const OBJECTS: usize = 10_000;

fn resources() -> Vec<Resource> {
    (0..OBJECTS)
        .map(|i| {
            let namespace = format!("ns-{}", i % 20);
            let (api_version, kind) = match i % 5 {
                0 => ("v1", "ConfigMap"),
                1 => ("v1", "Service"),
                2 => ("apps/v1", "Deployment"),
                3 => ("v1", "Secret"),
                _ => ("example.com/v1", "Widget"),
            };
            let mut annotations = json!({"argocd.argoproj.io/sync-wave": ((i % 7) as i32 - 3).to_string()});
            if i % 100 == 0 {
                annotations["argocd.argoproj.io/hook"] = json!("PreSync,PostSync");
                annotations["argocd.argoproj.io/hook-delete-policy"] = json!("HookSucceeded");
            }
            let (api_version, kind, namespace) = if i < 20 {
                ("v1", "Namespace", None)
            } else {
                (api_version, kind, Some(namespace))
            };
            let name = if i < 20 { format!("ns-{i}") } else { format!("object-{i}") };
            let body = json!({"apiVersion": api_version, "kind": kind,
                              "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
                              "data": {"key": "value"}});
            Resource::from_value(body, Source { file: "bench.yaml".into(), document: i }).expect("valid")
        })
        .collect()
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let resources = resources();
    c.bench_function("build plan of 10k objects", |b| {
        b.iter_batched(
            || resources.clone(),
            |resources| black_box(SyncPlan::build(resources, "op").expect("valid")),
            BatchSize::LargeInput,
        );
    });
    let plan = SyncPlan::build(resources.clone(), "op").expect("valid");
    let mut results = Vec::new();
    let mut live = HashMap::new();
    for task in &plan.tasks {
        let mut record = task_record(task, ResultStatus::Synced);
        if task.hook.is_some() {
            record.hook_phase = Some(flotilla_core::sync::HookPhase::Succeeded);
        }
        results.push(record);
        live.insert(
            task.key.clone(),
            LiveObject {
                key: task.key.clone(),
                generation: Some(1),
                observed_generation: Some(1),
                deleting: false,
                health: Health::new(HealthStatus::Healthy, ""),
                annotations: BTreeMap::new(),
            },
        );
    }
    let state = SyncState {
        plan: &plan,
        live: &live,
        results: &results,
        operation_id: "op-1",
        prune: &[],
        failure: None,
        timed_out: None,
        prune_confirmed: false,
        wave_delay: std::time::Duration::ZERO,
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    };
    assert!(matches!(plan_step(&state), SyncStep::Done(_)));
    c.bench_function("plan_step over 10k applied objects", |b| {
        b.iter(|| black_box(plan_step(black_box(&state))))
    });
}

support::cpu_time_main!(bench);

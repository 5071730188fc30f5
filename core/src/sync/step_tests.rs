//! Rule tests for `plan_step`, driven by a small in-memory executor that carries out each step.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::health::{Health, HealthStatus};
use crate::manifest::{ObjectKey, ScopeTable, assign_namespaces, parse_documents};
use crate::sync::task_record;

use super::*;

const SHOP: &str = include_str!("testdata/shop.yaml");
const SYNC_FAIL_HOOK: &str = "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: alert\n  namespace: shop\n  \
    annotations:\n    argocd.argoproj.io/hook: SyncFail\n";

fn plan(yaml: &str) -> SyncPlan {
    let (mut resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
    assert_eq!(errors, vec![]);
    assign_namespaces(&mut resources, &ScopeTable::default(), Some("shop"));
    SyncPlan::build(resources, "op-1").unwrap()
}

/// An owned copy of a step, so the simulated executor can mutate its world.
enum Action {
    Apply(Vec<SyncTask>),
    Adopt(Vec<SyncTask>),
    DeleteHooks(Vec<ObjectKey>),
    Finish(Vec<(SyncTask, bool, bool)>),
    Prune(Vec<PruneTask>),
    Wait,
    Delay(Duration),
    AwaitConfirmation,
    Fail(String),
    Done,
}

/// The world of a simulated executor: live objects get the health set for their name (Healthy
/// by default); deletions complete while waiting.
struct Sim {
    plan: SyncPlan,
    operation_id: String,
    live: HashMap<ObjectKey, LiveObject>,
    results: Vec<ResourceResult>,
    prune: Vec<PruneTask>,
    failure: Option<String>,
    timed_out: Option<Duration>,
    prune_confirmed: bool,
    health: BTreeMap<String, Health>,
    rejected: BTreeSet<String>,
    wave_delay: Duration,
    /// The simulated clock: applies are recorded at it, a delay advances it.
    now: Timestamp,
}

impl Sim {
    fn new(yaml: &str) -> Self {
        Self {
            plan: plan(yaml),
            operation_id: "op-1".to_owned(),
            live: HashMap::new(),
            results: Vec::new(),
            prune: Vec::new(),
            failure: None,
            timed_out: None,
            prune_confirmed: false,
            health: BTreeMap::new(),
            rejected: BTreeSet::new(),
            wave_delay: Duration::ZERO,
            now: Timestamp::UNIX_EPOCH,
        }
    }

    fn state(&self) -> SyncState<'_> {
        SyncState {
            plan: &self.plan,
            live: &self.live,
            results: &self.results,
            operation_id: &self.operation_id,
            prune: &self.prune,
            failure: self.failure.as_deref(),
            timed_out: self.timed_out,
            prune_confirmed: self.prune_confirmed,
            wave_delay: self.wave_delay,
            now: self.now,
        }
    }

    fn next(&self) -> (String, Action) {
        let step = plan_step(&self.state());
        let action = match &step {
            SyncStep::Apply { tasks, .. } => {
                Action::Apply(tasks.iter().map(|t| t.task.clone()).collect())
            }
            SyncStep::AdoptHooks { tasks, .. } => {
                Action::Adopt(tasks.iter().map(|t| t.task.clone()).collect())
            }
            SyncStep::DeleteHooks { tasks, .. } => {
                Action::DeleteHooks(tasks.iter().map(|t| t.key.clone()).collect())
            }
            SyncStep::FinishHooks { hooks, .. } => Action::Finish(
                hooks
                    .iter()
                    .map(|h| (h.task.clone(), h.succeeded, h.delete))
                    .collect(),
            ),
            SyncStep::Prune { objects, .. } => {
                Action::Prune(objects.iter().map(|o| (*o).clone()).collect())
            }
            SyncStep::Wait(_) => Action::Wait,
            SyncStep::Delay { left, .. } => Action::Delay(*left),
            SyncStep::AwaitPruneConfirmation { .. } => Action::AwaitConfirmation,
            SyncStep::RunSyncFail { reason } => Action::Fail(reason.clone()),
            SyncStep::Done(_) => Action::Done,
        };
        (step.to_string(), action)
    }

    fn live_object(&self, key: &ObjectKey) -> LiveObject {
        let health = self
            .health
            .get(&format!("{} {}", key.kind, key.name))
            .cloned()
            .unwrap_or(Health::new(HealthStatus::Healthy, ""));
        LiveObject {
            key: key.clone(),
            generation: Some(1),
            observed_generation: Some(1),
            deleting: false,
            health,
            annotations: BTreeMap::new(),
        }
    }

    /// Runs steps until Done or a wait that nothing resolves; returns the steps taken.
    fn run(&mut self) -> Vec<String> {
        let mut trace = Vec::new();
        for _ in 0..100 {
            let (text, action) = self.next();
            trace.push(text);
            match action {
                Action::Apply(tasks) => {
                    for task in tasks {
                        let rejected = self.rejected.contains(&task.key.name);
                        let status = if rejected {
                            ResultStatus::SyncFailed
                        } else {
                            ResultStatus::Synced
                        };
                        let mut record = task_record(&task, status);
                        record.generation = Some(1);
                        record.finished_at = Some(Time(self.now));
                        if rejected {
                            record.message = "admission webhook denied the request".into();
                        } else {
                            let mut live = self.live_object(&task.key);
                            if task.hook.is_some() {
                                live.annotations.insert(
                                    HOOK_OPERATION_ANNOTATION.to_owned(),
                                    self.operation_id.clone(),
                                );
                            }
                            self.live.insert(task.key.clone(), live);
                        }
                        self.results.push(record);
                    }
                }
                Action::Adopt(tasks) => {
                    for task in tasks {
                        let mut record = task_record(&task, ResultStatus::Synced);
                        record.generation = Some(1);
                        self.results.push(record);
                    }
                }
                Action::DeleteHooks(keys) => {
                    for key in keys {
                        self.live.get_mut(&key).unwrap().deleting = true;
                    }
                }
                Action::Finish(hooks) => {
                    for (task, succeeded, delete) in hooks {
                        let record = self
                            .results
                            .iter_mut()
                            .find(|r| r.sync_phase == task.phase && r.key() == task.key)
                            .unwrap();
                        record.hook_phase = Some(if succeeded {
                            HookPhase::Succeeded
                        } else {
                            HookPhase::Failed
                        });
                        record.message = self.live[&task.key].health.message.clone();
                        if delete {
                            self.live.remove(&task.key);
                        }
                    }
                }
                Action::Prune(objects) => {
                    for object in objects {
                        self.results.push(ResourceResult::for_object(
                            &object.key,
                            SyncPhase::Sync,
                            object.wave,
                            ResultStatus::Pruned,
                        ));
                        self.live.get_mut(&object.key).unwrap().deleting = true;
                    }
                }
                Action::Wait => {
                    let before = self.live.clone();
                    self.live.retain(|_, object| !object.deleting);
                    let refreshed: Vec<_> =
                        self.live.keys().map(|key| self.live_object(key)).collect();
                    for object in refreshed {
                        let generations = self.live[&object.key].generation;
                        let entry = self.live.get_mut(&object.key).unwrap();
                        entry.health = object.health;
                        entry.generation = generations;
                    }
                    if before == self.live {
                        return trace;
                    }
                }
                Action::Delay(left) => self.now += left,
                Action::Fail(reason) => self.failure = Some(reason),
                Action::Done | Action::AwaitConfirmation => return trace,
            }
        }
        panic!("no end: {trace:#?}");
    }

    fn key(&self, kind: &str, name: &str) -> ObjectKey {
        self.plan
            .tasks
            .iter()
            .find(|t| t.key.kind == kind && t.key.name == name)
            .unwrap()
            .key
            .clone()
    }
}

fn degraded(message: &str) -> Health {
    Health::new(HealthStatus::Degraded, message)
}

#[test]
fn the_wave_delay_passes_after_each_wave_but_the_last_counted_from_its_last_apply() {
    let mut sim = Sim::new(SHOP);
    sim.wave_delay = Duration::from_secs(2);
    assert_eq!(
        sim.run(),
        [
            "apply PreSync wave 0: Namespace shop",
            "apply PreSync wave 0: Job shop/db-migrate",
            "finish hooks PreSync wave 0: Job shop/db-migrate succeeded, deleted",
            "wave delay after PreSync wave 0: 2s left",
            "apply wave -1: ConfigMap shop/shop-config",
            "wave delay after wave -1: 2s left",
            "apply wave 0: Service shop/shop-api, Deployment shop/shop-api",
            "wave delay after wave 0: 2s left",
            "apply PostSync wave 0: Job shop/smoke-test",
            "finish hooks PostSync wave 0: Job shop/smoke-test succeeded",
            "successfully synced (all tasks run)",
        ]
    );
    assert_eq!(sim.now, Timestamp::UNIX_EPOCH + Duration::from_secs(6));

    // A wave whose objects took longer than the delay to become Healthy goes on at once; one
    // applied a second ago waits the rest (the clock is the executor's, the start recorded).
    let mut sim = Sim::new(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    \
         argocd.argoproj.io/sync-wave: \"1\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  \
         annotations:\n    argocd.argoproj.io/sync-wave: \"2\"\n",
    );
    sim.wave_delay = Duration::from_secs(2);
    let (applied, _) = sim.next();
    assert_eq!(applied, "apply wave 1: ConfigMap shop/a");
    let mut record = task_record(&sim.plan.tasks[0], ResultStatus::Synced);
    record.finished_at = Some(Time(sim.now));
    sim.results.push(record);
    let key = sim.plan.tasks[0].key.clone();
    sim.live.insert(key.clone(), sim.live_object(&key));
    sim.now += Duration::from_secs(1);
    assert_eq!(sim.next().0, "wave delay after wave 1: 1s left");
    sim.now += Duration::from_secs(5);
    assert_eq!(sim.next().0, "apply wave 2: ConfigMap shop/b");
}

#[test]
fn shop_example_runs_end_to_end() {
    let mut sim = Sim::new(SHOP);
    assert_eq!(
        sim.run(),
        [
            "apply PreSync wave 0: Namespace shop",
            "apply PreSync wave 0: Job shop/db-migrate",
            "finish hooks PreSync wave 0: Job shop/db-migrate succeeded, deleted",
            "apply wave -1: ConfigMap shop/shop-config",
            "apply wave 0: Service shop/shop-api, Deployment shop/shop-api",
            "apply PostSync wave 0: Job shop/smoke-test",
            "finish hooks PostSync wave 0: Job shop/smoke-test succeeded",
            "successfully synced (all tasks run)",
        ]
    );
    let mut names: Vec<String> = sim.live.keys().map(ToString::to_string).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ConfigMap shop/shop-config",
            "Deployment shop/shop-api",
            "Job shop/smoke-test",
            "Namespace shop",
            "Service shop/shop-api"
        ],
        "db-migrate is gone"
    );
}

#[test]
fn presync_failure_aborts_and_runs_sync_fail_hooks() {
    let mut sim = Sim::new(&format!("{SHOP}{SYNC_FAIL_HOOK}"));
    sim.health
        .insert("Job db-migrate".into(), degraded("BackoffLimitExceeded"));
    let reason = "PreSync wave 0: Job shop/db-migrate hook failed: BackoffLimitExceeded";
    assert_eq!(
        sim.run(),
        [
            "apply PreSync wave 0: Namespace shop".to_owned(),
            "apply PreSync wave 0: Job shop/db-migrate".to_owned(),
            "finish hooks PreSync wave 0: Job shop/db-migrate failed".to_owned(),
            format!("failed, running SyncFail hooks: {reason}"),
            "apply SyncFail wave 0: Job shop/alert".to_owned(),
            "finish hooks SyncFail wave 0: Job shop/alert succeeded".to_owned(),
            format!("failed: {reason}"),
        ]
    );
    assert!(
        !sim.live.contains_key(&sim.key("Deployment", "shop-api")),
        "nothing of Sync was applied"
    );
    assert!(
        sim.live.contains_key(&sim.key("Job", "db-migrate")),
        "HookSucceeded keeps a failed hook"
    );
}

#[test]
fn failure_without_sync_fail_hooks_ends_at_once() {
    let mut sim = Sim::new(SHOP);
    sim.rejected.insert("shop-config".into());
    let trace = sim.run();
    assert_eq!(
        trace.last().unwrap(),
        "failed: wave -1: ConfigMap shop/shop-config apply failed: admission webhook denied the request"
    );
    assert!(!trace.iter().any(|step| step.contains("Deployment")));
}

#[test]
fn sync_fail_hook_failure_is_reported_too() {
    let mut sim = Sim::new(&format!("{SHOP}{SYNC_FAIL_HOOK}"));
    sim.health.insert("Job db-migrate".into(), degraded("boom"));
    sim.health
        .insert("Job alert".into(), degraded("no webhook"));
    assert_eq!(
        sim.run().last().unwrap(),
        "failed: PreSync wave 0: Job shop/db-migrate hook failed: boom; SyncFail hooks: SyncFail wave 0: \
         Job shop/alert hook failed: no webhook"
    );
}

#[test]
fn post_sync_waits_for_every_sync_object_to_be_healthy() {
    let mut sim = Sim::new(SHOP);
    sim.health.insert(
        "Deployment shop-api".into(),
        Health::new(HealthStatus::Progressing, "0/3 available"),
    );
    let trace = sim.run();
    assert_eq!(
        trace.last().unwrap(),
        "wait wave 0: Deployment shop/shop-api Progressing: 0/3 available"
    );
    assert!(!trace.iter().any(|step| step.contains("smoke-test")));
    sim.health.remove("Deployment shop-api");
    let rest = sim.run();
    assert_eq!(
        rest[0],
        "wait wave 0: Deployment shop/shop-api Progressing: 0/3 available"
    );
    assert_eq!(rest[1], "apply PostSync wave 0: Job shop/smoke-test");
    assert_eq!(rest.last().unwrap(), SUCCESS_MESSAGE);
}

#[test]
fn degraded_object_fails_naming_wave_object_and_reason() {
    let mut sim = Sim::new(SHOP);
    sim.health.insert(
        "Deployment shop-api".into(),
        degraded("0/3 available, pod shop-api-7c9 ImagePullBackOff"),
    );
    assert_eq!(
        sim.run().last().unwrap(),
        "failed: wave 0: Deployment shop/shop-api Degraded: 0/3 available, pod shop-api-7c9 ImagePullBackOff"
    );
    assert!(!sim.live.contains_key(&sim.key("Job", "smoke-test")));
}

#[test]
fn timeout_names_what_it_waited_on() {
    let mut sim = Sim::new(SHOP);
    sim.health.insert(
        "Deployment shop-api".into(),
        Health::new(HealthStatus::Progressing, "0/3 available"),
    );
    sim.run();
    sim.timed_out = Some(Duration::from_secs(600));
    assert_eq!(
        sim.next().0,
        "failed: timed out after 10m0s: wave 0: Deployment shop/shop-api Progressing: 0/3 available"
    );
    let mut fresh = Sim::new(SHOP);
    fresh.timed_out = Some(Duration::from_secs(90));
    assert_eq!(
        fresh.next().0,
        "failed: timed out after 1m30s before: apply PreSync wave 0: Namespace shop"
    );
}

#[test]
fn waves_complete_only_on_the_current_generation() {
    let mut sim = Sim::new(SHOP);
    sim.run();
    let deployment = sim.key("Deployment", "shop-api");
    let record = |sim: &mut Sim| {
        sim.results
            .iter_mut()
            .find(|r| r.key() == deployment)
            .unwrap()
            .generation = Some(3);
    };
    // Back up to the Sync wave 0 state: PostSync not yet applied.
    sim.results.retain(|r| r.sync_phase != SyncPhase::PostSync);
    let smoke_test = sim.key("Job", "smoke-test");
    sim.live.remove(&smoke_test);
    record(&mut sim);
    let cases = [
        (
            (Some(2), Some(2)),
            "wait wave 0: Deployment shop/shop-api Progressing: waiting to observe generation 3",
        ),
        (
            (Some(3), Some(2)),
            "wait wave 0: Deployment shop/shop-api Progressing: observedGeneration 2 < generation 3",
        ),
        (
            (Some(3), Some(3)),
            "apply PostSync wave 0: Job shop/smoke-test",
        ),
    ];
    for ((generation, observed), expected) in cases {
        let live = sim.live.get_mut(&deployment).unwrap();
        live.generation = generation;
        live.observed_generation = observed;
        assert_eq!(sim.next().0, expected);
    }
}

#[test]
fn fixed_name_hook_is_deleted_before_it_is_recreated() {
    let mut sim = Sim::new(SHOP);
    sim.run();
    // A second operation: fresh results, the kept smoke-test Job of the first run still exists.
    sim.results.clear();
    sim.operation_id = "op-2".to_owned();
    let trace = sim.run();
    assert_eq!(
        trace[5],
        "delete previous hooks PostSync wave 0: Job shop/smoke-test"
    );
    assert_eq!(
        trace[6],
        "wait PostSync wave 0: Job shop/smoke-test Progressing: previous hook instance is being deleted"
    );
    assert_eq!(trace[7], "apply PostSync wave 0: Job shop/smoke-test");
    assert_eq!(trace.last().unwrap(), SUCCESS_MESSAGE);
}

#[test]
fn delete_policies_after_the_hook_finishes() {
    let hook = |name: &str, policy: &str| {
        format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    \
                 argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/hook-delete-policy: {policy}\n"
        )
    };
    let cases = [
        ("HookSucceeded", true, true),
        ("HookSucceeded", false, false),
        ("HookFailed", false, true),
        ("HookFailed", true, false),
        ("BeforeHookCreation", true, false),
        ("HookSucceeded,HookFailed", false, true),
    ];
    for (policy, succeeds, deleted) in cases {
        let mut sim = Sim::new(&hook("h", policy));
        if !succeeds {
            sim.health.insert("ConfigMap h".into(), degraded("x"));
        }
        let trace = sim.run();
        let outcome = if succeeds { "succeeded" } else { "failed" };
        let suffix = if deleted { ", deleted" } else { "" };
        assert_eq!(
            trace[1],
            format!("finish hooks PreSync wave 0: ConfigMap shop/h {outcome}{suffix}"),
            "{policy}"
        );
        assert_eq!(sim.live.is_empty(), deleted, "{policy}");
    }
}

#[test]
fn resume_does_not_rerun_finished_hooks() {
    let mut first = Sim::new(SHOP);
    first.health.insert(
        "ConfigMap shop-config".into(),
        Health::new(HealthStatus::Progressing, ""),
    );
    let trace = first.run();
    assert_eq!(
        trace.last().unwrap(),
        "wait wave -1: ConfigMap shop/shop-config Progressing"
    );
    // The process dies; a new one starts from the recorded results and the live objects.
    let mut resumed = Sim::new(SHOP);
    resumed.results = first.results.clone();
    resumed.live = first.live.clone();
    resumed.health.clear();
    let trace = resumed.run();
    assert!(
        !trace.iter().any(|step| step.contains("db-migrate")),
        "{trace:#?}"
    );
    assert_eq!(
        trace[0],
        "wait wave -1: ConfigMap shop/shop-config Progressing"
    );
    assert_eq!(
        trace[1],
        "apply wave 0: Service shop/shop-api, Deployment shop/shop-api"
    );
    assert_eq!(trace.last().unwrap(), SUCCESS_MESSAGE);
}

#[test]
fn resume_waits_for_a_running_hook_instead_of_recreating_it() {
    let mut sim = Sim::new(SHOP);
    sim.health.insert(
        "Job db-migrate".into(),
        Health::new(HealthStatus::Progressing, "job running, 1 active pods"),
    );
    let trace = sim.run();
    assert_eq!(
        trace.last().unwrap(),
        "wait PreSync wave 0: Job shop/db-migrate Progressing: job running, 1 active pods"
    );
    assert_eq!(sim.next().0, *trace.last().unwrap());
}

#[test]
fn a_hook_created_just_before_a_restart_is_adopted_not_run_again() {
    let mut first = Sim::new(SHOP);
    first.health.insert(
        "Job db-migrate".into(),
        Health::new(HealthStatus::Progressing, "job running, 1 active pods"),
    );
    first.run();
    // The process died after creating the hook and before recording it: the stored results
    // lack it, the live Job carries this operation's mark.
    let migrate = first.key("Job", "db-migrate");
    let mut resumed = Sim::new(SHOP);
    resumed.results = first.results.clone();
    resumed.results.retain(|record| record.key() != migrate);
    resumed.live = first.live.clone();
    let trace = resumed.run();
    assert_eq!(
        trace[0],
        "adopt hooks PreSync wave 0 created before a restart: Job shop/db-migrate"
    );
    assert!(
        !trace.iter().any(|step| step.starts_with("apply PreSync")
            || step.starts_with("delete previous hooks PreSync")),
        "the hook is neither deleted nor created again: {trace:#?}"
    );
    assert_eq!(trace.last().unwrap(), SUCCESS_MESSAGE);

    // The same live Job, marked by another operation, is a previous instance: it is replaced.
    let mut next = Sim::new(SHOP);
    next.operation_id = "op-2".to_owned();
    next.live = first.live.clone();
    let trace = next.run();
    assert!(
        trace
            .iter()
            .any(|step| step == "delete previous hooks PreSync wave 0: Job shop/db-migrate"),
        "{trace:#?}"
    );
}

#[test]
fn prunes_in_reverse_wave_order_and_prune_last_after_sync() {
    let mut sim = Sim::new(SHOP);
    let extra = |name: &str, wave: i32, last: bool| extra_object(&sim, name, wave, last, false);
    let tasks = [
        extra("old-0", 0, false),
        extra("old-2", 2, false),
        extra("old-1", 1, false),
        extra("old-2b", 2, false),
        extra("last-5", 5, true),
        extra("last-9", 9, true),
    ];
    for (key, task) in tasks {
        let object = sim.live_object(&key);
        sim.live.insert(key, object);
        sim.prune.push(task);
    }
    assert_eq!(
        sim.run(),
        [
            "apply PreSync wave 0: Namespace shop",
            "apply PreSync wave 0: Job shop/db-migrate",
            "finish hooks PreSync wave 0: Job shop/db-migrate succeeded, deleted",
            "prune wave 2: ConfigMap shop/old-2, ConfigMap shop/old-2b",
            "wait prune wave 2: ConfigMap shop/old-2 Progressing: being deleted; ConfigMap shop/old-2b Progressing: being deleted",
            "prune wave 1: ConfigMap shop/old-1",
            "wait prune wave 1: ConfigMap shop/old-1 Progressing: being deleted",
            "prune wave 0: ConfigMap shop/old-0",
            "wait prune wave 0: ConfigMap shop/old-0 Progressing: being deleted",
            "apply wave -1: ConfigMap shop/shop-config",
            "apply wave 0: Service shop/shop-api, Deployment shop/shop-api",
            "prune wave 9 (PruneLast): ConfigMap shop/last-9",
            "wait prune wave 9: ConfigMap shop/last-9 Progressing: being deleted",
            "prune wave 5 (PruneLast): ConfigMap shop/last-5",
            "wait prune wave 5: ConfigMap shop/last-5 Progressing: being deleted",
            "apply PostSync wave 0: Job shop/smoke-test",
            "finish hooks PostSync wave 0: Job shop/smoke-test succeeded",
            SUCCESS_MESSAGE,
        ]
    );
}

/// A live ConfigMap `name` of the shop and its prune task.
fn extra_object(
    sim: &Sim,
    name: &str,
    wave: i32,
    last: bool,
    confirm: bool,
) -> (ObjectKey, PruneTask) {
    let key = ObjectKey {
        name: name.into(),
        ..sim.key("ConfigMap", "shop-config")
    };
    (
        key.clone(),
        PruneTask {
            key,
            wave,
            last,
            confirm,
        },
    )
}

#[test]
fn a_prune_confirm_object_holds_its_wave_until_confirmed() {
    let mut sim = Sim::new(SHOP);
    for (key, task) in [
        extra_object(&sim, "critical", 1, false, true),
        extra_object(&sim, "plain", 1, false, false),
        extra_object(&sim, "lower", 0, false, false),
    ] {
        let object = sim.live_object(&key);
        sim.live.insert(key, object);
        sim.prune.push(task);
    }
    let waiting =
        "prune wave 1: waiting for pruning confirmation of ConfigMap shop/critical (Prune=confirm)";
    assert_eq!(
        sim.run(),
        [
            "apply PreSync wave 0: Namespace shop",
            "apply PreSync wave 0: Job shop/db-migrate",
            "finish hooks PreSync wave 0: Job shop/db-migrate succeeded, deleted",
            waiting,
        ]
    );
    assert_eq!(
        sim.next().0,
        waiting,
        "still waiting: nothing of the wave is deleted"
    );
    sim.timed_out = Some(Duration::from_secs(600));
    assert_eq!(
        sim.next().0,
        format!("failed: timed out after 10m0s before: {waiting}")
    );
    sim.timed_out = None;
    sim.prune_confirmed = true;
    assert_eq!(
        sim.run()[..2],
        [
            "prune wave 1: ConfigMap shop/critical, ConfigMap shop/plain",
            "wait prune wave 1: ConfigMap shop/critical Progressing: being deleted; ConfigMap shop/plain Progressing: being deleted",
        ]
    );
}

#[test]
fn crd_is_established_before_its_custom_resources() {
    let yaml = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
                name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget}\n---\n\
                apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n";
    let mut sim = Sim::new(yaml);
    sim.health.insert(
        "CustomResourceDefinition widgets.example.com".into(),
        Health::new(
            HealthStatus::Progressing,
            "waiting for the CRD to be Established",
        ),
    );
    assert_eq!(
        sim.run(),
        [
            "apply wave 0: CustomResourceDefinition widgets.example.com",
            "wait wave 0: CustomResourceDefinition widgets.example.com Progressing: waiting for the CRD to be Established",
        ]
    );
    sim.health.clear();
    assert_eq!(
        sim.run(),
        [
            "wait wave 0: CustomResourceDefinition widgets.example.com Progressing: waiting for the CRD to be Established",
            "apply wave 0: Widget shop/w",
            SUCCESS_MESSAGE,
        ]
    );
}

#[test]
fn deletion_hooks_run_alone_with_their_delete_policies() {
    for phase in [SyncPhase::PreDelete, SyncPhase::PostDelete] {
        let hook = |name: &str, wave: i32, policy: &str| {
            let policy = if policy.is_empty() {
                String::new()
            } else {
                format!("\n    argocd.argoproj.io/hook-delete-policy: {policy}")
            };
            format!(
                "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    \
                 argocd.argoproj.io/hook: {phase}\n    argocd.argoproj.io/sync-wave: \"{wave}\"{policy}\n"
            )
        };
        let yaml = [
            SHOP.to_owned(),
            hook("cleanup", 0, ""),
            hook("notify", 1, "HookFailed"),
        ]
        .concat();
        let cases = [
            (
                None,
                vec![
                    format!("apply {phase} wave 0: Job shop/cleanup"),
                    format!("finish hooks {phase} wave 0: Job shop/cleanup succeeded, deleted"),
                    format!("apply {phase} wave 1: Job shop/notify"),
                    format!("finish hooks {phase} wave 1: Job shop/notify succeeded"),
                    SUCCESS_MESSAGE.to_owned(),
                ],
            ),
            (
                Some("Job cleanup"),
                vec![
                    format!("apply {phase} wave 0: Job shop/cleanup"),
                    format!("finish hooks {phase} wave 0: Job shop/cleanup failed"),
                    format!(
                        "failed: {phase} wave 0: Job shop/cleanup hook failed: BackoffLimitExceeded"
                    ),
                ],
            ),
        ];
        for (failing, expected) in cases {
            let mut sim = Sim::new(&yaml);
            sim.plan = plan(&yaml).deletion_hook_plan(phase);
            if let Some(failing) = failing {
                sim.health
                    .insert(failing.into(), degraded("BackoffLimitExceeded"));
            }
            assert_eq!(sim.run(), expected, "{phase} {failing:?}");
        }
        // A sync's plan never has them.
        let synced = plan(&yaml);
        assert!(
            synced
                .tasks
                .iter()
                .all(|t| !["cleanup", "notify"].contains(&t.key.name.as_str())),
            "{phase}"
        );
    }
}

/// A stack without hooks: a ConfigMap at wave -1, then a LoadBalancer Service and a Deployment.
const STACK: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations:\n    \
    argocd.argoproj.io/sync-wave: \"-1\"\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n\
    spec:\n  type: LoadBalancer\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n";

/// A Sync hook of wave 0.
const SYNC_HOOK: &str = "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: seed\n  annotations:\n    \
    argocd.argoproj.io/hook: Sync\n";

fn progressing(message: &str) -> Health {
    Health::new(HealthStatus::Progressing, message)
}

#[test]
fn the_final_wave_succeeds_once_applied_whatever_its_health() {
    for health in [
        progressing("waiting for a load balancer address"),
        degraded("CrashLoopBackOff"),
    ] {
        let mut sim = Sim::new(STACK);
        sim.health.insert("Service web".into(), health.clone());
        sim.health
            .insert("Deployment web".into(), progressing("0/1 available"));
        assert_eq!(
            sim.run(),
            [
                "apply wave -1: ConfigMap shop/settings",
                "apply wave 0: Service shop/web, Deployment shop/web",
                SUCCESS_MESSAGE,
            ],
            "{health}"
        );
    }
}

#[test]
fn earlier_waves_still_wait_for_health() {
    let mut sim = Sim::new(STACK);
    sim.health
        .insert("ConfigMap settings".into(), progressing("not ready"));
    assert_eq!(
        sim.run(),
        [
            "apply wave -1: ConfigMap shop/settings",
            "wait wave -1: ConfigMap shop/settings Progressing: not ready",
        ]
    );
}

#[test]
fn a_final_wave_with_hooks_waits_for_them_and_for_health_when_there_are_several_steps() {
    let mut several = Sim::new(&format!("{STACK}{SYNC_HOOK}"));
    several
        .health
        .insert("Deployment web".into(), progressing("0/1 available"));
    assert_eq!(
        several.run(),
        [
            "apply wave -1: ConfigMap shop/settings",
            "apply wave 0: Service shop/web, Deployment shop/web, Job shop/seed",
            "finish hooks wave 0: Job shop/seed succeeded",
            "wait wave 0: Deployment shop/web Progressing: 0/1 available",
        ]
    );
    let deployment = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n";
    let mut single = Sim::new(&format!("{deployment}{SYNC_HOOK}"));
    single
        .health
        .insert("Deployment web".into(), progressing("0/1 available"));
    assert_eq!(
        single.run(),
        [
            "apply wave 0: Deployment shop/web, Job shop/seed",
            "finish hooks wave 0: Job shop/seed succeeded",
            SUCCESS_MESSAGE,
        ],
        "one step: only the hook is waited for"
    );
    let mut failing = Sim::new(&format!("{deployment}{SYNC_HOOK}"));
    failing
        .health
        .insert("Deployment web".into(), degraded("CrashLoopBackOff"));
    assert_eq!(
        failing.run().last().unwrap(),
        "failed: wave 0: Deployment shop/web Degraded: CrashLoopBackOff"
    );
}

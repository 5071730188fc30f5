//! Benchmark: a whole RollingSync of 20,000 Applications (10 steps, `maxUpdate: 25%`, names
//! and revisions as long as real ones) driven to completion by the step function, each pass's
//! status stored as the controller stores it ([`rollout_layout`]): the entries on the
//! Applications past the default `--rollout-status-limit`, read back from them before the next
//! pass. Each promoted Application is seen synced and Healthy one pass (10 s) later. Printed:
//! the ApplicationSet's status size and the bytes each pass writes (the ApplicationSet's merge
//! patch, and the Applications' patches) in both layouts — everything in
//! `status.applicationStatus` as Argo CD keeps it, and the per-Application layout — the passes
//! to completion, and the CPU time (and wall time) of the whole run. Target: the stored status
//! under etcd's 1.5 MiB request limit at every pass.
//!
//! `nice cargo bench --bench rollout_size`

#[path = "support/cpu_time.rs"]
#[allow(
    dead_code,
    reason = "the run's CPU time is read once; the criterion measurement is not used"
)]
mod cpu_time;
#[path = "support/wave_steps.rs"]
mod wave_steps;
use std::collections::BTreeMap;
use std::time::Instant;

use flotilla_core::api::application::ApplicationStatus;
use flotilla_core::api::application_set::{RollingSync, RolloutStrategy, StrategyType};
use flotilla_core::api::application_set_status::{
    ApplicationSetStatus, RolloutApplicationState, SyncStatusCode,
};
use flotilla_core::api::operation_state::OperationPhase;
use flotilla_core::api::{Application, ApplicationSpec};
use flotilla_core::controller::appset::rollout_layout::{
    DEFAULT_ROLLOUT_STATUS_LIMIT, hydrate, json_len, split,
};
use flotilla_core::controller::appset::rollout_status::{RolloutOutcome, with_rollout};
use flotilla_core::controller::appset::status::status_patch;
use flotilla_core::health::HealthStatus;
use flotilla_core::rollout::{
    ApplicationState, ObservedStatus, OperationState, RolloutInput, advance,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

const APPS: usize = 20_000;
const STEPS: usize = 10;
const OLD: &str = "0123456789abcdef0123456789abcdef01234567";
const NEW: &str = "fedcba9876543210fedcba9876543210fedcba98";
/// The resourceVersion every status write carries (a typical length).
const RESOURCE_VERSION: &str = "48213907";
/// etcd's default request limit.
const ETCD_LIMIT: usize = 1536 * 1024;

fn strategy() -> RolloutStrategy {
    let steps = wave_steps::wave_steps(STEPS);
    RolloutStrategy {
        type_: StrategyType::RollingSync,
        rolling_sync: Some(RollingSync {
            steps,
            ..RollingSync::default()
        }),
        paused: false,
        deletion_order: None,
        removal_order: None,
    }
}

/// Application `i`, OutOfSync on the old revision, targeting the new one.
fn application(i: usize) -> ApplicationState {
    ApplicationState {
        name: format!("checkout-{i:05}-eu-west-1-production"),
        labels: BTreeMap::from([("wave".to_owned(), (i % STEPS).to_string())]),
        exists: true,
        spec_changed: false,
        target_revisions: vec![NEW.into()],
        status: ObservedStatus {
            health: HealthStatus::Healthy,
            sync: SyncStatusCode::OutOfSync,
            revisions: vec![OLD.into()],
            ..ObservedStatus::default()
        },
        sync_blocked_by: None,
        previous_revisions: Vec::new(),
        destination: Default::default(),
    }
}

/// The most and the sum of a series.
#[derive(Default)]
struct Series {
    most: usize,
    total: usize,
}

impl Series {
    fn add(&mut self, value: usize) {
        self.most = self.most.max(value);
        self.total += value;
    }
}

fn main() {
    let started = (Instant::now(), cpu_time::thread_cpu_time());
    let strategy = strategy();
    let mut states: Vec<ApplicationState> = (0..APPS).map(application).collect();
    let mut objects: Vec<Application> = states
        .iter()
        .map(|app| Application::new(&app.name, ApplicationSpec::default()))
        .collect();
    let index: BTreeMap<String, usize> = states
        .iter()
        .enumerate()
        .map(|(i, app)| (app.name.clone(), i))
        .collect();
    let mut now: Timestamp = "2026-12-05T09:00:00Z".parse().expect("a time");
    let (mut stored, mut inline) = (
        ApplicationSetStatus::default(),
        ApplicationSetStatus::default(),
    );
    let (mut inline_size, mut stored_size) = (Series::default(), Series::default());
    let (mut inline_write, mut appset_write, mut apps_write, mut app_writes) = (
        Series::default(),
        Series::default(),
        Series::default(),
        Series::default(),
    );
    let mut passes = 0;
    loop {
        passes += 1;
        let mut prior = stored.clone();
        hydrate(&mut prior, &objects);
        let input = RolloutInput {
            now,
            strategy: strategy.clone(),
            applications: states.clone(),
            prior_application_status: prior.application_status.clone(),
            prior_step_status: prior.rollout_steps.clone(),
            promote: None,
            prior_rollback: None,
            application_set: "checkout".into(),
            analysis: Vec::new(),
            namespace: String::new(),
            external: Vec::new(),
        };
        let decision = advance(&input);
        let full = with_rollout(prior, RolloutOutcome::Decided(&decision), &Time(now));
        // As Argo CD keeps it: every entry in the ApplicationSet, the list patched whole.
        let next_inline = ApplicationSetStatus {
            application_status_summary: Vec::new(),
            ..full.clone()
        };
        inline_size.add(json_len(&next_inline));
        if next_inline != inline {
            inline_write.add(json_len(&status_patch(
                Some(&inline),
                &next_inline,
                Some(RESOURCE_VERSION),
            )));
        }
        inline = next_inline;
        // Per Application past the limit.
        let layout = split(full, &objects, DEFAULT_ROLLOUT_STATUS_LIMIT);
        stored_size.add(json_len(&layout.stored));
        assert!(json_len(&layout.stored) < ETCD_LIMIT);
        if layout.stored != stored {
            appset_write.add(json_len(&status_patch(
                Some(&stored),
                &layout.stored,
                Some(RESOURCE_VERSION),
            )));
        }
        let mut bytes = 0;
        for entry in &layout.application_writes {
            bytes += json_len(&serde_json::json!({"status": {"rollout": entry}}));
            let object = &mut objects[index[&entry.application]];
            object
                .status
                .get_or_insert_with(ApplicationStatus::default)
                .rollout = Some(entry.clone());
        }
        apps_write.add(bytes);
        app_writes.add(layout.application_writes.len());
        stored = layout.stored;
        if decision
            .application_status
            .iter()
            .all(|e| e.status == RolloutApplicationState::Healthy)
        {
            break;
        }
        assert!(passes < 1_000, "the rollout completes");
        // The promoted Applications sync; the next pass sees them done.
        let synced_at = now
            .checked_add(SignedDuration::from_secs(1))
            .expect("a time");
        for name in &decision.sync_triggered {
            let app = &mut states[index[name]];
            app.status.sync = SyncStatusCode::Synced;
            app.status.revisions = vec![NEW.into()];
            app.status.operation_state = Some(OperationState {
                phase: OperationPhase::Succeeded,
                started_at: synced_at,
                message: String::new(),
                revisions: vec![NEW.into()],
            });
            app.status.reconciled_at = Some(
                now.checked_add(SignedDuration::from_secs(5))
                    .expect("a time"),
            );
        }
        now = now
            .checked_add(SignedDuration::from_secs(10))
            .expect("a time");
    }
    let (took, cpu) = (
        started.0.elapsed(),
        cpu_time::thread_cpu_time().saturating_sub(started.1),
    );
    let kib = |bytes: usize| format!("{:.1} KiB", bytes as f64 / 1024.0);
    println!("rollout_size: {APPS} Applications, {STEPS} steps, maxUpdate 25%");
    println!(
        "  passes to completion: {passes} (simulated {}s)",
        (passes - 1) * 10
    );
    println!(
        "  whole run (step function, layout, read-back): CPU {cpu:.2?} (one thread), {took:.2?} elapsed"
    );
    println!(
        "  inline (applicationStatus):  status {} at most; ApplicationSet writes {} at most, {} in all",
        kib(inline_size.most),
        kib(inline_write.most),
        kib(inline_write.total)
    );
    println!(
        "  per Application:             status {} at most; ApplicationSet writes {} at most, {} in all",
        kib(stored_size.most),
        kib(appset_write.most),
        kib(appset_write.total)
    );
    println!(
        "                               Application writes {} at most per pass ({}), {} in all ({})",
        app_writes.most,
        kib(apps_write.most),
        app_writes.total,
        kib(apps_write.total)
    );
    println!("  etcd's request limit: {}", kib(ETCD_LIMIT));
}

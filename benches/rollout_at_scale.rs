//! A RollingSync of `APPS` (default 20,000) Applications in one ApplicationSet on a running test
//! control plane (`tests/controlplane/start.sh`), rolled out by `flotilla controller`
//! (`target/release/flotilla`, or `FLOTILLA_BIN`): the benchmarks' fleet (`support/fleet.rs`, a
//! ConfigMap each from a directory of its own) in `STEPS` (default 10) steps of `maxUpdate:
//! 25%`. Past the controller's `--rollout-status-limit` (512 KiB of JSON, about 2,000
//! Applications) each Application keeps its own rollout state and the ApplicationSet counts
//! them per step (`ROLLOUT_STATUS_LIMIT` sets that limit, e.g. to 1 to see the layout with a
//! few Applications).
//!
//! One watch of the ApplicationSet reads every status the controller writes. The benchmark
//! fails unless: every ApplicationSet written (metadata, spec and status) stays within etcd's
//! request limit; no step has an
//! Application past Waiting in a status where a step before it is not all Healthy; the rollout
//! completes (every Application Synced and Healthy, the summary counting every one Healthy);
//! and `flotilla rollout explain -o json` lists exactly the entries the Applications hold. It
//! prints the time the rollout took, the controller's CPU and peak memory, the largest status
//! and object written and the API server's writes, per Application.
//!
//! `cargo build --release --bin flotilla && cargo bench --bench rollout_at_scale` (`APPS`,
//! `STEPS`, `ROLLOUT_STATUS_LIMIT`, `FLOTILLA_CONTROLPLANE_DIR`). Not part of the test command. The controller's
//! client-side rate limit (50 requests a second by default) bounds how fast 20,000 Applications
//! can be created: `ARGOCD_K8S_CLIENT_QPS` and `ARGOCD_K8S_CLIENT_BURST` in the environment are
//! passed on to it.

#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/git.rs"]
mod git;
#[path = "support/controller.rs"]
mod harness;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flotilla_core::api::application_set_status::{
    ApplicationSetApplicationStatus, ApplicationSetStatus, RolloutApplicationState,
};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_layout;
use futures::StreamExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use harness::env_or;

/// etcd's default request limit (`--max-request-bytes`), which a status write must stay within.
const ETCD_REQUEST_LIMIT: usize = 1536 * 1024;

/// The fleet of `apps` Applications in `steps` steps (Application `i` in step `i % steps + 1`),
/// each step a quarter at a time.
fn rolling_fleet(namespace: &str, repo: &std::path::Path, apps: u64, steps: u64) -> ApplicationSet {
    let mut appset = fleet::application_set(namespace, repo, apps, fleet::Source::Directory);
    let spec = &mut appset["spec"];
    for (i, element) in spec["generators"][0]["list"]["elements"]
        .as_array_mut()
        .expect("a list of elements")
        .iter_mut()
        .enumerate()
    {
        element["step"] = json!((i as u64 % steps + 1).to_string());
    }
    let steps: Vec<serde_json::Value> = (1..=steps)
        .map(|n| {
            json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [n.to_string()]}],
                   "maxUpdate": "25%"})
        })
        .collect();
    spec["strategy"] = json!({"type": "RollingSync", "rollingSync": {"steps": steps}});
    spec["template"]["metadata"]["labels"] = json!({"step": "{{step}}"});
    serde_json::from_value(appset).expect("an ApplicationSet")
}

/// What the watch of the ApplicationSet saw: each distinct status, its JSON size and the whole
/// object's, and the statuses where a step had started before the steps before it were all
/// Healthy.
#[derive(Default)]
struct Statuses {
    written: u64,
    largest: usize,
    largest_object: usize,
    early: Vec<String>,
    last: ApplicationSetStatus,
}

/// Where `status` has a step with an Application past Waiting while a step before it has one
/// not Healthy (the counts per step, or the listed entries below the limit), `steps` steps.
fn opened_early(status: &ApplicationSetStatus, steps: u64) -> Option<String> {
    let mut counts: BTreeMap<u64, (u64, u64)> = BTreeMap::new(); // step → (started, not Healthy)
    for summary in &status.application_status_summary {
        let step = summary.step.parse().unwrap_or(0);
        let entry = counts.entry(step).or_default();
        entry.0 += u64::from(summary.pending + summary.progressing + summary.healthy);
        entry.1 += u64::from(summary.waiting + summary.pending + summary.progressing);
    }
    for listed in &status.application_status {
        let entry = counts.entry(listed.step.parse().unwrap_or(0)).or_default();
        entry.0 += u64::from(listed.status != RolloutApplicationState::Waiting);
        entry.1 += u64::from(listed.status != RolloutApplicationState::Healthy);
    }
    (2..=steps).find_map(|step| {
        let started = counts.get(&step).map_or(0, |c| c.0);
        let unfinished = (1..step).find(|before| counts.get(before).is_some_and(|c| c.1 > 0));
        (started > 0).then_some(unfinished).flatten().map(|before| {
            format!("step {step} started while step {before} was not all Healthy: {counts:?}")
        })
    })
}

/// The length of `value` in JSON.
fn json_len(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| json.len())
}

/// Follows the ApplicationSet `fleet`'s statuses into `seen` until aborted.
fn follow_statuses(
    api: Api<ApplicationSet>,
    steps: u64,
    seen: Arc<Mutex<Statuses>>,
) -> tokio::task::JoinHandle<()> {
    let events = kube::runtime::watcher(
        api,
        kube::runtime::watcher::Config::default().fields("metadata.name=fleet"),
    );
    tokio::spawn(events.for_each(move |event| {
        if let Ok(
            kube::runtime::watcher::Event::Apply(appset)
            | kube::runtime::watcher::Event::InitApply(appset),
        ) = event
        {
            let status = appset.status.clone().unwrap_or_default();
            let mut seen = seen.lock().expect("not poisoned");
            if status != seen.last {
                let object = json_len(&appset);
                let size = json_len(&status);
                seen.written += 1;
                seen.largest = seen.largest.max(size);
                seen.largest_object = seen.largest_object.max(object);
                if let Some(early) = opened_early(&status, steps) {
                    seen.early.push(early);
                }
                seen.last = status;
            }
        }
        async {}
    }))
}

/// What `flotilla rollout explain fleet -o json` lists as the rollout's entries.
fn explained(
    namespace: &str,
    kubeconfig: &std::path::Path,
) -> Vec<ApplicationSetApplicationStatus> {
    let output = std::process::Command::new(harness::flotilla_binary())
        .args([
            "rollout",
            "explain",
            "fleet",
            "-o",
            "json",
            "-n",
            namespace,
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .output()
        .expect("runs flotilla rollout explain");
    assert!(output.status.success(), "rollout explain: {output:?}");
    let document: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("explain prints JSON");
    serde_json::from_value(document["applicationStatus"].clone()).expect("entries")
}

fn main() {
    let apps = env_or("APPS", 20_000);
    let steps = env_or("STEPS", 10);
    let kubeconfig = harness::kubeconfig();
    let work = tempfile::tempdir().expect("temporary directory");
    fleet::repository(work.path(), apps, fleet::Source::Directory);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = harness::client(&kubeconfig).await;
        let namespace = format!("bench-rollout-{}", std::process::id());
        harness::namespace_with_crds(&client, &namespace).await;
        let log = work.path().join("controller.log");
        let endpoint = harness::free_address();
        let limit = env_or("ROLLOUT_STATUS_LIMIT", 512 * 1024).to_string();
        let mut controller = harness::start_controller_with(
            &kubeconfig,
            &namespace,
            endpoint,
            &log,
            &["--rollout-status-limit", &limit],
        );
        let pid = controller.id();
        let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), &namespace);
        let applications: Api<Application> = Api::namespaced(client.clone(), &namespace);
        let seen = Arc::new(Mutex::new(Statuses::default()));
        let following = follow_statuses(appsets.clone(), steps, Arc::clone(&seen));
        let writes_before = harness::api_writes(&client).await;
        let started = Instant::now();
        appsets
            .patch(
                "fleet",
                &PatchParams::apply("bench"),
                &Patch::Apply(&rolling_fleet(&namespace, work.path(), apps, steps)),
            )
            .await
            .expect("creating the ApplicationSet");
        let synced = harness::converge(&applications, apps).await;
        assert!(
            controller.try_wait().expect("controller state").is_none(),
            "the controller exited; see {}",
            log.display()
        );
        // The summary's last write follows the Applications' own.
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let healthy: u64 = {
                let seen = seen.lock().expect("not poisoned");
                let summary = &seen.last.application_status_summary;
                summary.iter().map(|s| u64::from(s.healthy)).sum::<u64>()
                    + seen
                        .last
                        .application_status
                        .iter()
                        .filter(|e| e.status == RolloutApplicationState::Healthy)
                        .count() as u64
            };
            if healthy == apps {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the ApplicationSet's status counts {healthy} of {apps} Healthy 5 minutes after they all synced"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let completed = started.elapsed();
        let (_, peak_kib, ticks) = harness::process_usage(pid);
        let writes = harness::writes_between(&writes_before, &harness::api_writes(&client).await);
        following.abort();

        // The entries as the controller reads them back: listed in the status, or held by the
        // Applications past the limit.
        let mut held = seen.lock().expect("not poisoned").last.clone();
        let listed_apps = applications
            .list(&ListParams::default())
            .await
            .expect("lists the Applications");
        rollout_layout::hydrate(&mut held, &listed_apps.items);
        let held = held.application_status;
        let listed = explained(&namespace, &kubeconfig);
        drop(controller);
        let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
            .delete(&namespace, &Default::default())
            .await;

        let seen = seen.lock().expect("not poisoned");
        assert!(seen.early.is_empty(), "a step opened early: {:#?}", seen.early);
        assert!(
            seen.largest_object < ETCD_REQUEST_LIMIT,
            "an ApplicationSet of {} bytes was written",
            seen.largest_object
        );
        assert_eq!(held.len() as u64, apps, "an entry for every Application");
        assert!(held.iter().all(|e| e.status == RolloutApplicationState::Healthy));
        assert!(listed == held, "rollout explain lists exactly what the Applications hold");

        // SAFETY: sysconf has no preconditions.
        #[allow(unsafe_code, reason = "the clock tick rate is only known through sysconf(3)")]
        let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let cpu = ticks as f64 / ticks_per_second;
        println!(
            "rollout: {apps} Applications in {steps} steps of maxUpdate 25%: all Synced and Healthy after {:.1} s, the status counting them all Healthy after {:.1} s",
            synced.as_secs_f64(),
            completed.as_secs_f64()
        );
        println!(
            "controller: CPU {cpu:.1} s = {:.1} ms per Application; peak RSS {:.1} MiB",
            1000.0 * cpu / apps as f64,
            peak_kib as f64 / 1024.0
        );
        println!(
            "ApplicationSet statuses written: {}, the largest {:.1} KiB, the largest object {:.1} KiB (etcd's limit 1,536 KiB); no step opened early",
            seen.written,
            seen.largest as f64 / 1024.0,
            seen.largest_object as f64 / 1024.0
        );
        println!("rollout explain: {} entries, exactly those the Applications hold", listed.len());
        let total: u64 = writes.values().sum();
        println!(
            "API writes (apiserver_request_total, all clients): {total} = {:.2} per Application",
            total as f64 / apps as f64
        );
        for (key, n) in &writes {
            println!("  {key:<50} {n:>8} = {:.2} per Application", *n as f64 / apps as f64);
        }
    });
}

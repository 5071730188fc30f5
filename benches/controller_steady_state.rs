//! Controller benchmark against a running test control plane (`tests/controlplane/start.sh`):
//! one ApplicationSet with a list generator of 2,000 elements, each Application syncing one
//! ConfigMap from its own directory of a local git repository with automated sync — or, with
//! `SOURCE=chart`, every Application rendering the repository's one Helm chart with a value of
//! its own (a `helm.parameters` entry), so each has its own generated manifests. Once every
//! Application is Synced and Healthy and `SETTLE_SECS` (default 0) have passed, the `flotilla
//! controller` process is watched for `WINDOW_SECS` (default 240: longer than the 3-minute
//! resync, so every Application is compared again, or skipped as unchanged, inside the window):
//! its resident memory (VmRSS, peak VmHWM), the CPU it uses (utime + stime), the Application
//! reconciles and the helm/kustomize runs it counted meanwhile (from its `/metrics`), how
//! many Applications were written, and what the ApplicationSet's status lists and counts.
//!
//!
//! Then, with `LATENCY_SAMPLES` (default 0), the latency from a change of a managed object to
//! the Application's status showing it: one Application at a time (spread over all of them,
//! a second apart), its ConfigMap's `data.key` is changed by another field manager, and the
//! time until a watch of the Applications sees it OutOfSync, and until self-heal has reverted
//! the ConfigMap, is recorded; p50, p95 and the maximum of both are printed.
//!
//! The convergence itself is reported too (followed with a watch, not by listing): its time, the
//! controller's CPU until then (utime + stime since it started, per Application), the CPU of
//! the control plane's kube-apiserver and etcd meanwhile, and the API server's writes, per
//! Application and by verb and resource (its `apiserver_request_total`, every client: the
//! controller's, the benchmark's one ApplicationSet and the kube-controller-manager's). Because
//! other clients may share the API server, the writes in the benchmark's own namespace are also
//! counted from watches: every new `resourceVersion` of an Application (its creation, each spec or
//! status write) and of a ConfigMap (each apply that changed it) until convergence.
//!
//! With `REPLICAS` (default 1), that many `flotilla controller` processes share the
//! Applications (`--shards auto`, the default): CPU is their sum, RSS is reported per replica.
//!
//! `cargo bench --bench controller_steady_state` (`FLOTILLA_CONTROLPLANE_DIR`, `APPS`, `REPLICAS`,
//! `SOURCE` = `directory` or `chart`, `SETTLE_SECS`, `WINDOW_SECS`, `LATENCY_SAMPLES`; the chart
//! needs helm: on `PATH` or `FLOTILLA_HELM`). Builds nothing itself: run
//! `cargo build --release --bin flotilla` first.

#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/git.rs"]
mod git;
#[path = "support/controller.rs"]
mod harness;

use std::time::{Duration, Instant};

use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::health::HealthStatus;
use kube::api::{Api, ListParams, Patch, PatchParams};

use fleet::{Source, application_set, repository};
use harness::env_or;

/// The CPU ticks (utime + stime) of the control plane's etcd and API servers.
fn control_plane_ticks() -> u64 {
    // This control plane's processes, by their pid files: another control plane on the machine
    // (a test run's) is not counted.
    let pids = ["etcd", "apiserver1", "apiserver2"].map(|name| {
        std::fs::read_to_string(harness::plane_dir().join(format!("pids/{name}.pid")))
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok())
    });
    pids.into_iter()
        .flatten()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .map(|stat| {
            let after_name = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let tick = |i: usize| {
                fields
                    .get(i)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            tick(11) + tick(12)
        })
        .sum()
}

/// Each Application's `resourceVersion`.
async fn versions(api: &Api<Application>) -> std::collections::HashMap<String, String> {
    let list = api.list(&ListParams::default()).await.expect("listing");
    list.items
        .into_iter()
        .map(|app| {
            (
                app.metadata.name.unwrap_or_default(),
                app.metadata.resource_version.unwrap_or_default(),
            )
        })
        .collect()
}

/// Changes the ConfigMap of `samples` Applications, one at a time, as another field manager,
/// and measures how long until the watched Application is OutOfSync and until self-heal has
/// reverted the change.
async fn change_latencies(
    client: &kube::Client,
    namespace: &str,
    apps: u64,
    samples: u64,
) -> (Vec<Duration>, Vec<Duration>) {
    use futures::StreamExt;
    use kube::runtime::watcher;
    let applications: Api<Application> = Api::namespaced(client.clone(), namespace);
    let (tx, mut out_of_sync) = tokio::sync::mpsc::unbounded_channel::<(Instant, String)>();
    let watching = tokio::spawn(async move {
        let events = watcher::watcher(applications, watcher::Config::default());
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            if let Ok(watcher::Event::Apply(app)) = event {
                let drifted = app
                    .status
                    .as_ref()
                    .and_then(|s| s.sync.as_ref())
                    .is_some_and(|s| s.status == SyncStatusCode::OutOfSync);
                if drifted {
                    let _ = tx.send((Instant::now(), app.metadata.name.unwrap_or_default()));
                }
            }
        }
    });
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), namespace);
    let (mut seen, mut healed) = (Vec::new(), Vec::new());
    for sample in 0..samples {
        let index = (sample * 7919) % apps;
        let name = format!("app-{index}");
        while out_of_sync.try_recv().is_ok() {}
        let changed = Instant::now();
        let drift = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": name}, "data": {"key": "drifted"}});
        config_maps
            .patch(
                &name,
                &PatchParams::apply("bench-drift").force(),
                &Patch::Apply(drift),
            )
            .await
            .expect("changing a ConfigMap");
        let deadline = changed + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, out_of_sync.recv()).await {
                Ok(Some((at, app))) if app == name => {
                    seen.push(at - changed);
                    break;
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => panic!("{name} not seen OutOfSync within 60 s"),
            }
        }
        loop {
            let live = config_maps.get(&name).await.expect("reading the ConfigMap");
            let value = live.data.and_then(|d| d.get("key").cloned());
            if value.as_deref() == Some(format!("value-{index}").as_str()) {
                healed.push(changed.elapsed());
                break;
            }
            assert!(Instant::now() < deadline, "{name} not reverted within 60 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    watching.abort();
    (seen, healed)
}

/// Prints the figures of the convergence: its time, the controller's CPU in it (since it
/// started) and the API server's writes in it, per Application.
fn report_convergence(
    apps: u64,
    converged: Duration,
    cpu_seconds: f64,
    writes: &std::collections::BTreeMap<String, u64>,
) {
    let per_app = |n: f64| n / apps as f64;
    println!(
        "convergence: {apps} Applications in {:.1} s ({:.1} a second); controller CPU {cpu_seconds:.1} s = {:.1} ms per Application",
        converged.as_secs_f64(),
        apps as f64 / converged.as_secs_f64(),
        1000.0 * per_app(cpu_seconds)
    );
    let total: u64 = writes.values().sum();
    println!(
        "API writes meanwhile (apiserver_request_total, all clients): {total} = {:.2} per Application",
        per_app(total as f64)
    );
    for (key, n) in writes {
        println!(
            "  {key:<50} {n:>8} = {:.2} per Application",
            per_app(*n as f64)
        );
    }
}

/// Counts the versions a watch of `api` sees of each object (creation and every write that
/// changed it) into `counts`, by name, until the task is aborted.
fn count_versions<K>(
    api: Api<K>,
    counts: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, (String, u64)>>>,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    use futures::StreamExt;
    use kube::runtime::watcher::Event;
    tokio::spawn(
        kube::runtime::watcher(api, Default::default()).for_each(move |event| {
            if let Ok(Event::Apply(object) | Event::InitApply(object)) = event {
                let name = object.meta().name.clone().unwrap_or_default();
                let version = object.meta().resource_version.clone().unwrap_or_default();
                let mut counts = counts.lock().expect("counts");
                let entry = counts.entry(name).or_default();
                if entry.0 != version {
                    *entry = (version, entry.1 + 1);
                }
            }
            async {}
        }),
    )
}

/// Prints the versions counted by [`count_versions`] per Application.
fn report_versions(
    apps: u64,
    kind: &str,
    counts: &std::sync::Mutex<std::collections::HashMap<String, (String, u64)>>,
) {
    let counts = counts.lock().expect("counts");
    let total: u64 = counts.values().map(|(_, n)| n).sum();
    println!(
        "  {kind} versions seen by a watch of the namespace: {total} = {:.2} per Application ({} objects)",
        total as f64 / apps as f64,
        counts.len()
    );
}

const RECONCILES: &str = "flotilla_application_reconciles_total";
const TOOL_RUNS: &str = "flotilla_source_tool_runs_total";

fn main() {
    let apps = env_or("APPS", 2000);
    let source = match std::env::var("SOURCE").as_deref() {
        Ok("chart") => Source::Chart,
        Ok("directory") | Err(_) => Source::Directory,
        Ok(other) => panic!("SOURCE={other:?}: expected directory or chart"),
    };
    let window = Duration::from_secs(env_or("WINDOW_SECS", 240));
    let settle = Duration::from_secs(env_or("SETTLE_SECS", 0));
    let kubeconfig = harness::kubeconfig();
    let work = tempfile::tempdir().expect("temporary directory");
    repository(work.path(), apps, source);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = harness::client(&kubeconfig).await;
        let namespace = format!("bench-controller-{}", std::process::id());
        harness::namespace_with_crds(&client, &namespace).await;
        let replicas = env_or("REPLICAS", 1);
        let mut controllers: Vec<_> = (0..replicas)
            .map(|i| {
                let log = work.path().join(format!("controller-{i}.log"));
                let endpoint = harness::free_address();
                let child = harness::start_controller(&kubeconfig, &namespace, endpoint, &log);
                (child, endpoint, log)
            })
            .collect();
        let pids: Vec<u32> = controllers.iter().map(|(child, ..)| child.id()).collect();
        let endpoints: Vec<_> = controllers.iter().map(|(_, endpoint, _)| *endpoint).collect();
        // RSS, peak RSS (KiB) of each replica, and the CPU ticks of them all.
        let usage = || {
            let each: Vec<_> = pids.iter().map(|&pid| harness::process_usage(pid)).collect();
            let ticks = each.iter().map(|(_, _, ticks)| ticks).sum::<u64>();
            (each, ticks)
        };
        let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
        let rss_of = |each: &[(u64, u64, u64)]| {
            each.iter().map(|(rss, _, _)| mib(*rss)).collect::<Vec<_>>().join(", ")
        };
        let counted = |metric: &str| endpoints.iter().map(|&e| harness::counter(e, metric)).sum::<u64>();
        let writes_before = harness::api_writes(&client).await;
        let plane_ticks_before = control_plane_ticks();
        let appset: ApplicationSet =
            serde_json::from_value(application_set(&namespace, work.path(), apps, source))
                .unwrap();
        Api::<ApplicationSet>::namespaced(client.clone(), &namespace)
            .patch("fleet", &PatchParams::apply("bench"), &Patch::Apply(&appset))
            .await
            .expect("creating the ApplicationSet");

        let started = Instant::now();
        let applications: Api<Application> = Api::namespaced(client.clone(), &namespace);
        let application_versions = std::sync::Arc::default();
        let configmap_versions = std::sync::Arc::default();
        let counting = [
            count_versions(applications.clone(), std::sync::Arc::clone(&application_versions)),
            count_versions(
                Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), &namespace),
                std::sync::Arc::clone(&configmap_versions),
            ),
        ];
        // Followed with a watch: listing 10,000 Applications every few seconds would load the
        // API server whose rate the convergence measures.
        let (seen, writer) = kube::runtime::reflector::store();
        let following = {
            use futures::StreamExt;
            let events = kube::runtime::reflector(
                writer,
                kube::runtime::watcher(applications.clone(), Default::default()),
            );
            tokio::spawn(events.for_each(|_| async {}))
        };
        loop {
            let listed = seen.state();
            let ready = listed
                .iter()
                .filter(|app| {
                    app.status.as_ref().is_some_and(|s| {
                        s.sync.as_ref().is_some_and(|s| s.status == SyncStatusCode::Synced)
                            && s.health.as_ref().is_some_and(|h| h.status == HealthStatus::Healthy)
                    })
                })
                .count();
            if ready as u64 == apps {
                break;
            }
            if started.elapsed().as_secs().is_multiple_of(10) {
                eprintln!(
                    "{:>5.0} s: {ready}/{} Applications seen Synced and Healthy of {apps}; controller RSS {}",
                    started.elapsed().as_secs_f64(),
                    listed.len(),
                    rss_of(&usage().0)
                );
            }
            for (child, _, log) in &mut controllers {
                assert!(
                    child.try_wait().expect("controller state").is_none(),
                    "a controller exited; see {}",
                    log.display()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(1800),
                "only {ready} of {apps} Applications Synced and Healthy after 30 min"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let converged = started.elapsed();
        following.abort();
        // The last status writes may still be on their way to the watches.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for task in &counting {
            task.abort();
        }
        let (converged_each, converged_ticks) = usage();
        let mut requests = std::collections::BTreeMap::new();
        for &endpoint in &endpoints {
            let counted = harness::counters_by(
                endpoint,
                "argocd_app_k8s_request_total",
                &["verb", "resource_kind"],
            );
            for (key, count) in counted {
                *requests.entry(key).or_insert(0) += count;
            }
        }
        let plane_ticks = control_plane_ticks() - plane_ticks_before;
        let writes = harness::writes_between(&writes_before, &harness::api_writes(&client).await);
        eprintln!(
            "converged after {:.0} s (controller pids {pids:?}); measuring in {} s for {} s",
            converged.as_secs_f64(),
            settle.as_secs(),
            window.as_secs()
        );
        // SAFETY: sysconf has no preconditions.
        #[allow(unsafe_code, reason = "the clock tick rate is only known through sysconf(3)")]
        let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        report_convergence(apps, converged, converged_ticks as f64 / ticks_per_second, &writes);
        let mut by_count: Vec<_> = requests.into_iter().collect();
        by_count.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        println!(
            "the controller's API requests until convergence (argocd_app_k8s_request_total), per Application: {}",
            by_count
                .iter()
                .map(|(key, count)| format!("{} {:.2}", key.join(" "), *count as f64 / apps as f64))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!("writes in the benchmark's namespace until convergence:");
        report_versions(apps, "Application", &application_versions);
        report_versions(apps, "ConfigMap", &configmap_versions);
        println!(
            "the control plane's CPU meanwhile (kube-apiserver and etcd): {:.1} s = {:.1} ms per Application",
            plane_ticks as f64 / ticks_per_second,
            1000.0 * plane_ticks as f64 / ticks_per_second / apps as f64
        );
        println!(
            "controller RSS at convergence, per replica: {} (peak {})",
            rss_of(&converged_each),
            converged_each.iter().map(|(_, hwm, _)| mib(*hwm)).collect::<Vec<_>>().join(", ")
        );
        tokio::time::sleep(settle).await;
        let (_, ticks_before) = usage();
        let reconciles_before = counted(RECONCILES);
        let tool_runs_before = counted(TOOL_RUNS);
        let versions_before = versions(&applications).await;
        let mut peak_rss = vec![0; pids.len()];
        let measure_start = Instant::now();
        while measure_start.elapsed() < window {
            tokio::time::sleep(Duration::from_secs(1)).await;
            for (peak, (rss, _, _)) in peak_rss.iter_mut().zip(usage().0) {
                *peak = (*peak).max(rss);
            }
        }
        let (each_after, ticks_after) = usage();
        let reconciles = counted(RECONCILES) - reconciles_before;
        let tool_runs = counted(TOOL_RUNS) - tool_runs_before;
        let versions_after = versions(&applications).await;
        let written = versions_after
            .iter()
            .filter(|(name, version)| versions_before.get(*name) != Some(version))
            .count();
        let cpu = (ticks_after - ticks_before) as f64 / ticks_per_second;
        let elapsed = measure_start.elapsed().as_secs_f64();
        println!(
            "applications: {apps} ({})",
            match source {
                Source::Directory => "a directory each",
                Source::Chart => "one chart, a value each",
            }
        );
        println!("converged (all Synced and Healthy) after {:.0} s", converged.as_secs_f64());
        println!("settled for {} s", settle.as_secs());
        println!(
            "steady state over {elapsed:.0} s: RSS per replica {} (max {}, peak since start {}), CPU {cpu:.2} s = {:.1}% of one core",
            rss_of(&each_after),
            peak_rss.iter().map(|&kib| mib(kib)).collect::<Vec<_>>().join(", "),
            each_after.iter().map(|(_, hwm, _)| mib(*hwm)).collect::<Vec<_>>().join(", "),
            100.0 * cpu / elapsed
        );
        println!(
            "Application reconciles in the window: {reconciles} ({:.1} a second); Applications written: {written}",
            reconciles as f64 / elapsed
        );
        println!(
            "helm/kustomize runs in the window: {tool_runs} ({:.1} a minute)",
            60.0 * tool_runs as f64 / elapsed
        );
        let status = Api::<ApplicationSet>::namespaced(client.clone(), &namespace)
            .get_status("fleet")
            .await
            .expect("reads the ApplicationSet")
            .status
            .unwrap_or_default();
        println!(
            "ApplicationSet status: lists {} Applications, resourcesCount {:?}",
            status.resources.len(),
            status.resources_count
        );
        let samples = env_or("LATENCY_SAMPLES", 0);
        if samples > 0 && source == Source::Directory {
            let (seen, healed) = change_latencies(&client, &namespace, apps, samples).await;
            println!(
                "change -> status OutOfSync over {samples} changes: {}; -> reverted by self-heal: {}",
                harness::percentiles(seen),
                harness::percentiles(healed)
            );
        }
        drop(controllers);
        let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
            .delete(&namespace, &Default::default())
            .await;
    });
}

//! The soak: an hour of ordinary life for one `flotilla controller` and a fleet of `APPS`
//! (default 2,000) Applications, on a control plane of its own (one etcd, one kube-apiserver;
//! `tests/support/private_plane.rs`). One ApplicationSet with a RollingSync of three steps by
//! label (`step` 1: every 20th Application; 2: a quarter, `maxUpdate: 50%`; 3: the rest,
//! `maxUpdate: 25%`) generates the Applications from a list, each syncing one ConfigMap from a
//! directory of its own in a git repository served by `git daemon` (automated sync, prune,
//! selfHeal, the resources finalizer). Once they are all Synced and Healthy, for `DURATION_SECS`
//! (default 3,600):
//!
//! - every `COMMIT_EVERY_SECS` (60) a commit changes every Application's manifest (a full
//!   RollingSync each time) and is announced as a GitLab push webhook, as a git host would;
//! - at random times, on average every `DRIFT_EVERY_SECS` (10), a live ConfigMap is changed
//!   (`soak/drift.rs` says when a drift counts as noticed, and missed);
//! - every `KILL_EVERY_SECS` (600) the controller is killed (SIGKILL) and started again;
//! - every `CHURN_EVERY_SECS` (120) one Application in a hundred is removed from the list and
//!   as many are added.
//!
//! Sampled meanwhile: the controller's VmRSS every 10 s; the API server's
//! `apiserver_request_total` by verb every minute (every client: the benchmark's watches, drifts
//! and list changes too) and the controller's own `argocd_app_k8s_request_total`, carried over
//! its restarts (read just before each kill). Every promotion the controller writes in the
//! ApplicationSet's status is checked against the gate (`soak/gate.rs`, whose own tests are
//! `tests/soak_gate.rs`). After the last minute the soak waits (up to `DRAIN_SECS`, 900) until
//! every drift is noticed and the last commit is Healthy everywhere, then prints its figures and
//! fails if a drift was missed or a step opened early. `SEED` fixes the random choices; the
//! controller's logs (warnings, or what `SOAK_CONTROLLER_LOG` asks for as a `RUST_LOG` filter)
//! are copied to `SOAK_LOG_DIR` (default: a directory under the system's temporary directory).
//! The controller inherits the environment: `ARGOCD_K8S_CLIENT_QPS` and `ARGOCD_K8S_CLIENT_BURST` set its
//! client-side rate limit (default 50 a second, burst 100).
//!
//! `cargo bench --bench soak` (release), or, for a debug build,
//! `APPS=200 DURATION_SECS=600 COMMIT_EVERY_SECS=60 KILL_EVERY_SECS=180 cargo test --bench soak`.
//! Not part of the test command.

#[path = "support/fleet.rs"]
#[allow(
    dead_code,
    reason = "the soak uses the fleet's ApplicationSet, not its repository"
)]
mod fleet;
#[path = "../tests/support/git_remote.rs"]
#[allow(dead_code, reason = "the soak uses a part of the tests' git servers")]
mod git_remote;
#[path = "support/controller.rs"]
mod harness;
#[path = "../tests/support/loopback_http.rs"]
#[allow(dead_code, reason = "git_remote's HTTP server, unused here")]
mod loopback_http;
#[path = "../tests/support/private_plane.rs"]
#[allow(
    dead_code,
    reason = "the benchmark uses a part of the tests' private control plane"
)]
mod private_plane;
#[path = "../tests/support/server_process.rs"]
#[allow(dead_code, reason = "the soak uses a part of the server process guard")]
mod server_process;
#[path = "soak/drift.rs"]
mod soak_drift;
#[path = "soak/gate.rs"]
mod soak_gate;
#[path = "soak/samples.rs"]
mod soak_samples;
#[path = "../tests/support/webhook_payload.rs"]
#[allow(dead_code, reason = "the soak sends one provider's payload")]
mod webhook_payload;

/// `fleet.rs` builds its repository with the benchmarks' git helper.
#[path = "support/git.rs"]
#[allow(dead_code, reason = "fleet's repository, unused here")]
mod git;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flotilla_core::api::{Application, ApplicationSet};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use git_remote::{GitDaemon, Remote};
use harness::env_or;
use private_plane::{ControlPlane, Replica};
use soak_drift::{DriftLedger, Notice};
use soak_gate::GateLedger;
use soak_samples::{Memory, Requests};

const NAMESPACE: &str = "soak";
const IDENTITY: &str = "soak";
const WEBHOOK_TOKEN: &str = "soak-webhook-token";
/// How long a drift may go unnoticed before it counts as missed.
const DRIFT_BOUND: Duration = Duration::from_secs(300);
/// How often the controller's memory (and its request count) is read.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The width of the memory report's windows.
const MEMORY_WINDOW: Duration = Duration::from_secs(300);
/// The start of each process life left out of the memory slope.
const WARM_UP: Duration = Duration::from_secs(120);

/// The `RUST_LOG` of the controller `private_plane::Replica` starts: `SOAK_CONTROLLER_LOG`,
/// else `warn`.
fn controller_log_filter() -> String {
    std::env::var("SOAK_CONTROLLER_LOG").unwrap_or_else(|_| "warn".to_owned())
}

/// The knobs, from the environment.
struct Knobs {
    apps: u64,
    duration: Duration,
    commit_every: Duration,
    kill_every: Duration,
    drift_every: Duration,
    churn_every: Duration,
    drain: Duration,
    seed: u64,
}

impl Knobs {
    fn from_env() -> Self {
        let secs = |name, default| Duration::from_secs(env_or(name, default));
        Self {
            apps: env_or("APPS", 2000),
            duration: secs("DURATION_SECS", 3600),
            commit_every: secs("COMMIT_EVERY_SECS", 60),
            kill_every: secs("KILL_EVERY_SECS", 600),
            drift_every: secs("DRIFT_EVERY_SECS", 10),
            churn_every: secs("CHURN_EVERY_SECS", 120),
            drain: secs("DRAIN_SECS", 900),
            seed: env_or(
                "SEED",
                Timestamp::now().as_nanosecond().unsigned_abs() as u64 | 1,
            ),
        }
    }
}

/// xorshift64*: the soak's random choices, repeatable from `SEED`.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// An index below `n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// An exponentially distributed wait of mean `mean` (the gaps of random events).
    fn wait(&mut self, mean: Duration) -> Duration {
        let uniform = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        mean.mul_f64(-(1.0 - uniform).ln())
    }
}

/// The step (1-based) of element `i`: every 20th in the first, a quarter in the second, the
/// rest in the third.
fn step_of(i: u64) -> usize {
    if i.is_multiple_of(20) {
        1
    } else if i % 4 == 1 {
        2
    } else {
        3
    }
}

fn app_name(i: u64) -> String {
    format!("app-{i}")
}

/// The ApplicationSet over the elements `listed`: the benchmarks' fleet (`support/fleet.rs`)
/// with step labels, the RollingSync, the resources finalizer and the repository `repo_url`.
fn application_set(repo_url: &str, listed: &BTreeSet<u64>) -> ApplicationSet {
    let mut appset = fleet::application_set(
        NAMESPACE,
        std::path::Path::new("/"),
        0,
        fleet::Source::Directory,
    );
    let step =
        |n: &str| json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [n]}]});
    let spec = &mut appset["spec"];
    spec["generators"][0]["list"]["elements"] = listed
        .iter()
        .map(|&i| json!({"name": app_name(i), "step": step_of(i).to_string()}))
        .collect();
    spec["strategy"] = json!({"type": "RollingSync", "rollingSync": {"steps": [
        step("1"),
        with_max_update(step("2"), "50%"),
        with_max_update(step("3"), "25%"),
    ]}});
    let template = &mut spec["template"];
    template["metadata"]["labels"] = json!({"step": "{{step}}"});
    template["metadata"]["finalizers"] = json!(["resources-finalizer.argocd.argoproj.io"]);
    template["spec"]["source"]["repoURL"] = json!(repo_url);
    serde_json::from_value(appset).expect("an ApplicationSet")
}

/// `step` with `maxUpdate: max`.
fn with_max_update(mut step: serde_json::Value, max: &str) -> serde_json::Value {
    step["maxUpdate"] = json!(max);
    step
}

/// Writes every directory of the pool's `pool` Applications at `version` into `remote`'s clone
/// and pushes it; the commit.
fn commit(remote: &Remote, pool: u64, version: u64) -> String {
    for i in 0..pool {
        remote.write(
            &format!("apps/{}/configmap.yaml", app_name(i)),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\ndata:\n  {}: \"no\"\n  version: \"{version}\"\n",
                app_name(i),
                soak_drift::FIELD
            ),
        );
    }
    remote.push(&format!("version {version}"))
}

/// POSTs GitLab's push webhook for `before`..`after` of the repository at `http_url` to the
/// controller's listener; its status and body.
fn announce(
    webhook: std::net::SocketAddr,
    http_url: &str,
    before: &str,
    after: &str,
) -> std::io::Result<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let body = webhook_payload::payload("gitlab.json", http_url, before, after);
    let mut stream = std::net::TcpStream::connect(webhook)?;
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    write!(
        stream,
        "POST /api/webhook HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\
         x-gitlab-event: Push Hook\r\nx-gitlab-token: {WEBHOOK_TOKEN}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Ok((status, response))
}

/// A commit pushed and announced: its revision, whether the webhook was accepted (tried for
/// up to two minutes: the controller may be restarting), and when that was.
struct Pushed {
    revision: String,
    announced: bool,
    at: Instant,
}

/// Pushes version `version` and announces it, in the background.
fn push_and_announce(
    remote: &Arc<Remote>,
    pool: u64,
    version: u64,
    before: String,
    webhook: std::net::SocketAddr,
    http_url: String,
) -> tokio::task::JoinHandle<Pushed> {
    let remote = Arc::clone(remote);
    tokio::task::spawn_blocking(move || {
        let revision = commit(&remote, pool, version);
        let tried = Instant::now();
        let announced = loop {
            match announce(webhook, &http_url, &before, &revision) {
                Ok((200, _)) => break true,
                Ok((status, response)) => {
                    eprintln!("webhook for version {version}: {status}: {response}");
                }
                Err(error) => eprintln!("webhook for version {version}: {error}"),
            }
            if tried.elapsed() > Duration::from_secs(120) {
                break false;
            }
            std::thread::sleep(Duration::from_secs(2));
        };
        Pushed {
            revision,
            announced,
            at: Instant::now(),
        }
    })
}

/// What the watches saw.
#[derive(Default)]
struct Watched {
    gate: GateLedger,
    drift: DriftLedger,
}

/// Follows the Applications (into `store` and the ledgers) and the ConfigMaps of the namespace.
fn follow(
    client: &kube::Client,
    watched: &Arc<Mutex<Watched>>,
    writer: kube::runtime::reflector::store::Writer<Application>,
) -> [tokio::task::JoinHandle<()>; 3] {
    let applications: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let seen = Arc::clone(watched);
    let apps = tokio::spawn(
        kube::runtime::reflector(writer, watcher(applications, watcher::Config::default()))
            .for_each(move |event| {
                if let Ok(watcher::Event::Apply(app) | watcher::Event::InitApply(app)) = event {
                    let mut seen = seen.lock().expect("the ledgers");
                    seen.gate.observe(&app);
                    seen.drift.observe_application(&app, Instant::now());
                }
                async {}
            }),
    );
    let seen = Arc::clone(watched);
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), NAMESPACE);
    let appset = tokio::spawn(watcher(appsets, watcher::Config::default()).for_each(
        move |event| {
            if let Ok(watcher::Event::Apply(appset) | watcher::Event::InitApply(appset)) = event {
                seen.lock()
                    .expect("the ledgers")
                    .gate
                    .observe_application_set(&appset);
            }
            async {}
        },
    ));
    let seen = Arc::clone(watched);
    let maps = tokio::spawn(watcher(config_maps, watcher::Config::default()).for_each(
        move |event| {
            if let Ok(watcher::Event::Apply(map) | watcher::Event::InitApply(map)) = event {
                seen.lock()
                    .expect("the ledgers")
                    .drift
                    .observe_config_map(&map, Instant::now());
            }
            async {}
        },
    ));
    [apps, appset, maps]
}

/// Everything the soak changes and counts.
struct Soak {
    knobs: Knobs,
    random: Random,
    client: kube::Client,
    plane: ControlPlane,
    controller: Option<Replica>,
    lives: usize,
    metrics: std::net::SocketAddr,
    webhook: std::net::SocketAddr,
    log_dir: PathBuf,
    repo_url: String,
    http_url: String,
    remote: Arc<Remote>,
    pool: u64,
    listed: BTreeSet<u64>,
    watched: Arc<Mutex<Watched>>,
    store: kube::runtime::reflector::Store<Application>,
    memory: Memory,
    requests: Requests,
    started: Instant,
    /// The last commit announced, and the version number of the next.
    revision: String,
    /// Every commit pushed, in order.
    revisions: Vec<String>,
    version: u64,
    pushing: Option<tokio::task::JoinHandle<Pushed>>,
    commits: u64,
    commits_skipped: u64,
    webhooks_failed: u64,
    kills: u64,
    added: u64,
    removed: u64,
}

impl Soak {
    /// Starts the controller (webhooks and metrics on their fixed addresses).
    fn start_controller(&mut self) {
        let (metrics, webhook) = (self.metrics.to_string(), self.webhook.to_string());
        self.controller = Some(Replica::start(
            &self.plane,
            NAMESPACE,
            IDENTITY,
            &[
                "--shards",
                "1",
                "--metrics-addr",
                &metrics,
                "--webhook-addr",
                &webhook,
            ],
        ));
        self.memory.started(self.started.elapsed());
        self.requests.controller_restarted();
        self.lives += 1;
    }

    /// Keeps the current controller's log as life N's.
    fn keep_log(&self) {
        let _ = std::fs::copy(
            self.plane.path(&format!("logs/{IDENTITY}.log")),
            self.log_dir.join(format!("controller-{}.log", self.lives)),
        );
    }

    /// SIGKILLs the controller and starts another.
    fn kill_and_restart(&mut self) {
        self.sample();
        self.keep_log();
        drop(self.controller.take());
        self.kills += 1;
        self.start_controller();
        eprintln!(
            "{:>5.0} s: controller killed and started again",
            self.started.elapsed().as_secs_f64()
        );
    }

    /// Reads the controller's memory and request count.
    fn sample(&mut self) {
        let Some(controller) = &self.controller else {
            return;
        };
        let pid = u32::try_from(controller.pid()).expect("a pid");
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let (rss, _, _) = harness::process_usage(pid);
            self.memory.record(self.started.elapsed(), rss);
        }
        if std::net::TcpStream::connect(self.metrics).is_ok() {
            self.requests.controller(harness::counter(
                self.metrics,
                "argocd_app_k8s_request_total",
            ));
        }
    }

    /// Patches the ApplicationSet to list `self.listed`.
    async fn apply_list(&self) {
        let appset = application_set(&self.repo_url, &self.listed);
        Api::<ApplicationSet>::namespaced(self.client.clone(), NAMESPACE)
            .patch(
                "fleet",
                &PatchParams::apply("soak").force(),
                &Patch::Apply(&appset),
            )
            .await
            .expect("applying the ApplicationSet");
    }

    /// Removes one listed element in a hundred (none with a drift in flight) and lists as many
    /// unlisted ones whose Application is gone.
    async fn churn(&mut self) {
        let count = (self.knobs.apps / 100).max(1);
        let mut removed = Vec::new();
        let mut added = Vec::new();
        {
            let mut watched = self.watched.lock().expect("the ledgers");
            for _ in 0..count * 10 {
                if removed.len() as u64 == count {
                    break;
                }
                let candidates: Vec<u64> = self.listed.iter().copied().collect();
                let i = candidates[self.random.below(candidates.len())];
                if !watched.drift.open(&app_name(i)) && !removed.contains(&i) {
                    removed.push(i);
                }
            }
            let absent: Vec<u64> = (0..self.pool)
                .filter(|i| !self.listed.contains(i) && !removed.contains(i))
                .filter(|&i| {
                    self.store
                        .get(
                            &kube::runtime::reflector::ObjectRef::new(&app_name(i))
                                .within(NAMESPACE),
                        )
                        .is_none()
                })
                .collect();
            for _ in 0..count * 10 {
                if added.len() as u64 == count || absent.is_empty() {
                    break;
                }
                let i = absent[self.random.below(absent.len())];
                if !added.contains(&i) {
                    added.push(i);
                }
            }
            for &i in &removed {
                self.listed.remove(&i);
            }
            for &i in &added {
                self.listed.insert(i);
                watched.gate.step(&app_name(i), step_of(i));
            }
        }
        self.removed += removed.len() as u64;
        self.added += added.len() as u64;
        self.apply_list().await;
    }

    /// Changes `data.drifted` of the ConfigMap of a random listed Application that may drift.
    async fn drift(&mut self, number: u64) {
        let listed: Vec<u64> = self.listed.iter().copied().collect();
        let now = Instant::now();
        let chosen = (0..20)
            .map(|_| listed[self.random.below(listed.len())])
            .find(|&i| {
                let name = app_name(i);
                let exists = self
                    .store
                    .get(&kube::runtime::reflector::ObjectRef::new(&name).within(NAMESPACE))
                    .is_some_and(|app| app.metadata.deletion_timestamp.is_none());
                exists
                    && self
                        .watched
                        .lock()
                        .expect("the ledgers")
                        .drift
                        .may_drift(&name, now)
            });
        let Some(i) = chosen else {
            return;
        };
        let name = app_name(i);
        let value = format!("drift-{number}");
        self.watched.lock().expect("the ledgers").drift.drifted(
            &name,
            value.clone(),
            Instant::now(),
        );
        let patch = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                           "data": {soak_drift::FIELD: value}});
        let result = Api::<ConfigMap>::namespaced(self.client.clone(), NAMESPACE)
            .patch(
                &name,
                &PatchParams::apply("soak-drift").force(),
                &Patch::Apply(patch),
            )
            .await;
        if let Err(error) = result {
            eprintln!("drift of {name} not made: {error}");
            self.watched
                .lock()
                .expect("the ledgers")
                .drift
                .withdraw(&name);
        }
    }

    /// Starts the next commit unless the last one is still being pushed or announced.
    async fn next_commit(&mut self) {
        if self.pushing.as_ref().is_some_and(|p| !p.is_finished()) {
            self.commits_skipped += 1;
            return;
        }
        self.collect_commit().await;
        self.version += 1;
        self.commits += 1;
        self.pushing = Some(push_and_announce(
            &self.remote,
            self.pool,
            self.version,
            self.revision.clone(),
            self.webhook,
            self.http_url.clone(),
        ));
    }

    /// Waits for the commit being pushed, if any, and takes its revision.
    async fn collect_commit(&mut self) {
        if let Some(pushing) = self.pushing.take() {
            let pushed = pushing.await.expect("the commit task");
            if !pushed.announced {
                self.webhooks_failed += 1;
            }
            eprintln!(
                "{:>5.0} s: version {} is {} ({})",
                pushed.at.duration_since(self.started).as_secs_f64(),
                self.version,
                pushed.revision,
                if pushed.announced {
                    "announced"
                } else {
                    "webhook refused"
                }
            );
            self.revisions.push(pushed.revision.clone());
            self.revision = pushed.revision;
        }
    }

    /// How many listed Applications reported themselves Healthy on the last commit.
    fn healthy_on_last(&self) -> usize {
        let watched = self.watched.lock().expect("the ledgers");
        self.listed
            .iter()
            .filter(|&&i| watched.gate.healthy_on(&app_name(i), &self.revision))
            .count()
    }

    /// One line of progress.
    async fn progress(&mut self) {
        let totals = harness::api_requests(&self.client).await;
        self.requests.server_minute(&totals);
        let healthy = self.healthy_on_last();
        let watched = self.watched.lock().expect("the ledgers");
        let drifts = watched.drift.report(Instant::now(), DRIFT_BOUND);
        eprintln!(
            "{:>5.0} s: {} listed, {healthy} Healthy on the last commit; {} drifts, {} noticed, {} missed; RSS {:.1} MiB",
            self.started.elapsed().as_secs_f64(),
            self.listed.len(),
            drifts.made,
            drifts.noticed.len(),
            drifts.missed.len(),
            self.memory
                .last_of_each_life()
                .last()
                .map_or(0.0, |(_, rss)| *rss)
        );
    }
}

fn main() {
    let knobs = Knobs::from_env();
    let pool = knobs.apps + (knobs.apps / 10).max(1);
    let log_dir = std::env::var_os("SOAK_LOG_DIR").map_or_else(
        || std::env::temp_dir().join(format!("flotilla-soak-{}", std::process::id())),
        PathBuf::from,
    );
    std::fs::create_dir_all(&log_dir).expect("the log directory");
    let remote = Arc::new(Remote::new("platform"));
    let first = commit(&remote, pool, 0);
    let daemon = GitDaemon::start(remote.exported());
    let repo_url = daemon.url("platform.git");
    let http_url = repo_url
        .replace("git://", "http://")
        .trim_end_matches(".git")
        .to_owned();
    let plane = ControlPlane::start(&[IDENTITY]);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = plane.client().await;
        harness::namespace_with_crds(&client, NAMESPACE).await;
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "argocd-secret"},
            "stringData": {"webhook.gitlab.secret": WEBHOOK_TOKEN}
        }))
        .expect("a Secret");
        Api::<Secret>::namespaced(client.clone(), NAMESPACE)
            .create(&PostParams::default(), &secret)
            .await
            .expect("creating argocd-secret");
        let watched = Arc::new(Mutex::new(Watched::default()));
        let (store, writer) = kube::runtime::reflector::store();
        let following = follow(&client, &watched, writer);
        let mut soak = Soak {
            random: Random(knobs.seed),
            knobs,
            client: client.clone(),
            plane,
            controller: None,
            lives: 0,
            metrics: harness::free_address(),
            webhook: harness::free_address(),
            log_dir,
            repo_url,
            http_url,
            remote,
            pool,
            listed: BTreeSet::new(),
            watched: Arc::clone(&watched),
            store,
            memory: Memory::default(),
            requests: Requests::default(),
            started: Instant::now(),
            revisions: vec![first.clone()],
            revision: first,
            version: 0,
            pushing: None,
            commits: 0,
            commits_skipped: 0,
            webhooks_failed: 0,
            kills: 0,
            added: 0,
            removed: 0,
        };
        eprintln!(
            "soak: {} Applications for {} s (seed {}), logs in {}",
            soak.knobs.apps,
            soak.knobs.duration.as_secs(),
            soak.knobs.seed,
            soak.log_dir.display()
        );
        soak.start_controller();
        soak.listed = (0..soak.knobs.apps).collect();
        {
            let mut watched = watched.lock().expect("the ledgers");
            for &i in &soak.listed {
                watched.gate.step(&app_name(i), step_of(i));
            }
        }
        soak.apply_list().await;
        let applications: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
        let converged = harness::converge(&applications, soak.knobs.apps).await;
        eprintln!(
            "{} Applications Synced and Healthy after {:.0} s; the soak begins",
            soak.knobs.apps,
            converged.as_secs_f64()
        );
        run(&mut soak).await;
        let drained = drain(&mut soak).await;
        report(&soak, converged, drained);
        explain_missed(&soak).await;
        soak.keep_log();
        for task in following {
            task.abort();
        }
        let (judged, unknown, violations) = watched.lock().expect("the ledgers").gate.violations();
        let drifts = watched
            .lock()
            .expect("the ledgers")
            .drift
            .report(Instant::now(), DRIFT_BOUND);
        drop(soak.controller.take());
        drop(daemon);
        assert!(
            drifts.missed.is_empty() && violations.is_empty(),
            "{} drifts missed, {} gate violations (of {judged} promotions judged, {unknown} without a revision)",
            drifts.missed.len(),
            violations.len()
        );
    });
}

/// Prints, for each missed drift, what its Application and ConfigMap show at the end: the
/// figures say that a drift was missed, this says where the controller stopped.
async fn explain_missed(soak: &Soak) {
    let missed = soak
        .watched
        .lock()
        .expect("the ledgers")
        .drift
        .report(Instant::now(), DRIFT_BOUND)
        .missed;
    let applications: Api<Application> = Api::namespaced(soak.client.clone(), NAMESPACE);
    let config_maps: Api<ConfigMap> = Api::namespaced(soak.client.clone(), NAMESPACE);
    for (name, age) in missed.iter().take(10) {
        let made = Timestamp::now() - jiff_seconds(age.as_secs());
        let app = applications.get_opt(name).await.ok().flatten();
        let status = app.as_ref().and_then(|app| app.status.as_ref());
        let shown = status.map(|status| {
            json!({
                "sync": status.sync.as_ref().map(|s| (format!("{:?}", s.status), s.revision.clone())),
                "health": status.health.as_ref().map(|h| format!("{:?}", h.status)),
                "reconciledAt": status.reconciled_at.as_ref().map(|t| t.0.to_string()),
                "resources": status.resources.iter().map(|r| (r.kind.clone(), r.name.clone(), format!("{:?}", r.status), r.first_difference.clone())).collect::<Vec<_>>(),
                "operation": status.operation_state.as_ref().map(|o| (format!("{:?}", o.phase), o.started_at.as_ref().map(|t| t.0.to_string()), o.finished_at.as_ref().map(|t| t.0.to_string()))),
                "conditions": status.conditions.iter().map(|c| (format!("{:?}", c.type_), c.message.clone())).collect::<Vec<_>>(),
                "rollout": status.rollout.as_ref().map(|r| (format!("{:?}", r.status), r.message.clone())),
            })
        });
        let live = config_maps.get_opt(name).await.ok().flatten();
        let live = live.map(|cm| {
            json!({
                "drifted": cm.data.as_ref().and_then(|d| d.get(soak_drift::FIELD).cloned()),
                "resourceVersion": cm.metadata.resource_version,
                "managers": cm.metadata.managed_fields.unwrap_or_default().iter().map(|m| (m.manager.clone(), m.time.as_ref().map(|t| t.0.to_string()))).collect::<Vec<_>>(),
            })
        });
        println!(
            "    missed {name}, made at {made} ({} s ago): application {} deleting {}; status {}; ConfigMap {}",
            age.as_secs(),
            if app.is_some() { "present" } else { "gone" },
            app.as_ref()
                .is_some_and(|a| a.metadata.deletion_timestamp.is_some()),
            shown.unwrap_or_default(),
            live.unwrap_or_default()
        );
    }
}

/// `seconds` as a span to subtract from a timestamp.
fn jiff_seconds(seconds: u64) -> k8s_openapi::jiff::Span {
    k8s_openapi::jiff::Span::new().seconds(i64::try_from(seconds).unwrap_or(i64::MAX))
}

/// The soak's hour: commits, drifts, kills and churn on their schedules, samples meanwhile.
async fn run(soak: &mut Soak) {
    soak.started = Instant::now();
    soak.memory = Memory::default();
    soak.memory.started(Duration::ZERO);
    let start = soak.started;
    let mut next_sample = start;
    let mut next_minute = start;
    let mut next_commit = start + soak.knobs.commit_every;
    let mut next_kill = start + soak.knobs.kill_every;
    let mut next_churn = start + soak.knobs.churn_every;
    let mut next_drift = start + soak.random.wait(soak.knobs.drift_every);
    let mut drifts = 0;
    while start.elapsed() < soak.knobs.duration {
        let now = Instant::now();
        if soak.pushing.as_ref().is_some_and(|p| p.is_finished()) {
            soak.collect_commit().await;
        }
        if now >= next_sample {
            soak.sample();
            next_sample += SAMPLE_EVERY;
        }
        if now >= next_minute {
            soak.progress().await;
            next_minute += Duration::from_secs(60);
        }
        if now >= next_commit {
            soak.next_commit().await;
            next_commit += soak.knobs.commit_every;
        }
        if now >= next_drift {
            drifts += 1;
            soak.drift(drifts).await;
            next_drift = Instant::now() + soak.random.wait(soak.knobs.drift_every);
        }
        if now >= next_kill {
            soak.kill_and_restart();
            next_kill += soak.knobs.kill_every;
        }
        if now >= next_churn {
            soak.churn().await;
            next_churn += soak.knobs.churn_every;
        }
        let next = [
            next_sample,
            next_minute,
            next_commit,
            next_drift,
            next_kill,
            next_churn,
        ]
        .into_iter()
        .min()
        .expect("a next event");
        tokio::time::sleep(next.saturating_duration_since(Instant::now())).await;
    }
}

/// After the last minute: waits (up to `DRAIN_SECS`) until every drift is noticed (or past its
/// bound) and every listed Application is Healthy on the last commit; how long that took, if it
/// happened.
async fn drain(soak: &mut Soak) -> Option<Duration> {
    soak.collect_commit().await;
    let from = Instant::now();
    loop {
        let all_noticed = soak
            .watched
            .lock()
            .expect("the ledgers")
            .drift
            .all_noticed();
        let healthy = soak.healthy_on_last();
        if all_noticed && healthy == soak.listed.len() {
            return Some(from.elapsed());
        }
        if from.elapsed() > soak.knobs.drain {
            eprintln!(
                "drain: after {} s, {healthy} of {} Healthy on the last commit, every drift noticed: {all_noticed}",
                soak.knobs.drain.as_secs(),
                soak.listed.len()
            );
            return None;
        }
        if from.elapsed().as_secs().is_multiple_of(30) {
            soak.sample();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// How many of `listed` each step holds.
fn steps_listed(listed: &BTreeSet<u64>) -> String {
    let mut steps = std::collections::BTreeMap::new();
    for &i in listed {
        *steps.entry(step_of(i)).or_insert(0) += 1;
    }
    format!("{steps:?}")
}

/// Prints the soak's figures.
fn report(soak: &Soak, converged: Duration, drained: Option<Duration>) {
    let knobs = &soak.knobs;
    // Before the ledgers are held: it takes them itself.
    let healthy_on_last = soak.healthy_on_last();
    let watched = soak.watched.lock().expect("the ledgers");
    println!(
        "soak of {} Applications (pool {}), {} s, seed {}: initial convergence {:.0} s",
        knobs.apps,
        soak.pool,
        knobs.duration.as_secs(),
        knobs.seed,
        converged.as_secs_f64()
    );
    println!(
        "  commits: {} pushed (every {} s; {} skipped while the previous was being announced), {} webhooks not accepted within 2 min",
        soak.commits,
        knobs.commit_every.as_secs(),
        soak.commits_skipped,
        soak.webhooks_failed
    );
    println!(
        "  controller kills: {} (every {} s); churn: {} Applications removed, {} added (every {} s)",
        soak.kills,
        knobs.kill_every.as_secs(),
        soak.removed,
        soak.added,
        knobs.churn_every.as_secs()
    );
    match drained {
        Some(after) => println!(
            "  after the last minute: every drift noticed and the last commit Healthy on all {} listed Applications within {:.0} s",
            soak.listed.len(),
            after.as_secs_f64()
        ),
        None => println!(
            "  after the last minute: NOT drained within {} s ({} of {} listed Healthy on the last commit)",
            knobs.drain.as_secs(),
            healthy_on_last,
            soak.listed.len()
        ),
    }
    println!(
        "  how far each commit's rollout got (Applications that reported themselves Healthy on it, by step; the steps hold {}):",
        steps_listed(&soak.listed)
    );
    for (version, revision) in soak.revisions.iter().enumerate() {
        println!(
            "    version {version:>3} ({}): {:?}",
            &revision[..8],
            watched.gate.reached(revision)
        );
    }
    println!(
        "  controller RSS by {} s window (min / max / last, MiB):",
        MEMORY_WINDOW.as_secs()
    );
    for window in soak.memory.windows(MEMORY_WINDOW) {
        println!(
            "    {:>5} s: {:.1} / {:.1} / {:.1}",
            window.from.as_secs(),
            window.min,
            window.max,
            window.last
        );
    }
    let (slope, points) = soak.memory.slope(WARM_UP);
    println!(
        "  RSS slope over the samples at least {} s into each process life: {slope:+.1} MiB an hour ({points} samples)",
        WARM_UP.as_secs()
    );
    println!(
        "  RSS at the end of each process life (s: MiB): {}",
        soak.memory
            .last_of_each_life()
            .iter()
            .map(|(at, rss)| format!("{}: {rss:.1}", at.as_secs()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let drifts = watched.drift.report(Instant::now(), DRIFT_BOUND);
    let by = |how: Notice| drifts.noticed.iter().filter(|(_, n)| *n == how).count();
    println!(
        "  drifts: {} made, {} noticed ({} by the Application's status naming /data/{}, {} healed before any status named it)",
        drifts.made,
        drifts.noticed.len(),
        by(Notice::Status),
        soak_drift::FIELD,
        by(Notice::Healed)
    );
    println!(
        "    drift -> noticed: {}",
        harness::percentiles(drifts.noticed.iter().map(|(after, _)| *after).collect())
    );
    println!(
        "    drift -> healed (the rollout syncs it in its step): {}; {} noticed but not healed by the end",
        harness::percentiles(drifts.healed.clone()),
        drifts.unhealed
    );
    println!(
        "    MISSED (not noticed within {} s): {} {:?}",
        DRIFT_BOUND.as_secs(),
        drifts.missed.len(),
        drifts.missed.iter().take(10).collect::<Vec<_>>()
    );
    let (judged, unknown, violations) = watched.gate.violations();
    println!(
        "  gate: {judged} promotions of step 2 and 3 Applications judged ({unknown} without a revision not judged); VIOLATIONS: {}",
        violations.len()
    );
    for v in violations.iter().take(10) {
        println!(
            "    {} promoted to {} at {} before {} of the step before was Healthy on it ({})",
            v.application,
            v.revision,
            v.promoted,
            v.waited_for,
            v.healthy
                .map_or_else(|| "never".to_owned(), |at| format!("at {at}"))
        );
    }
    println!(
        "  API requests a minute (the API server's apiserver_request_total, every client; mean / largest minute):"
    );
    for (verb, (mean, max)) in soak.requests.server_per_minute() {
        println!("    {verb:<8} {mean:>8.0} / {max}");
    }
    println!("  the kinds of request answered most over the run (every client):");
    for (kind, n) in soak.requests.server_busiest(12) {
        println!("    {kind:<40} {n}");
    }
    let (mean, max) = soak.requests.controller_per_minute();
    println!(
        "  the controller's own requests a minute (argocd_app_k8s_request_total over its restarts): {mean:.0} mean, {max} largest"
    );
    let audit = std::fs::metadata(soak.plane.path("logs/audit1.log")).map_or(0, |m| m.len());
    println!(
        "  (the API server's audit log of the controller's writes and lists: {:.0} MiB)",
        audit as f64 / 1048576.0
    );
}

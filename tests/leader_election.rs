//! Leader election on a real control plane of its own (one etcd and one kube-apiserver started
//! by `tests/controlplane/start.sh` on free ports, in a temporary directory, with an audit log):
//! two `flotilla controller` processes, each authenticated as its own user, sync Applications
//! while the API server process is paused (SIGSTOP, SIGCONT) for twice the Lease duration, and
//! while the leading replica itself is paused until the other takes over. The audit log must then
//! show that successful writes never came from two identities in overlapping intervals. The
//! shared test control plane is never touched; everything started here is stopped even when the
//! test fails.

mod controller_support;
mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flotilla::api::{Application, ApplicationSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::{Value, json};

use controller_support::{appset, commit_apps, repository};
use support::{apply, eventually_within, install_flotilla_crds, object};

const NAMESPACE: &str = "leader";
const REPLICAS: [&str; 2] = ["replica-a", "replica-b"];
const LEASE_DURATION: Duration = Duration::from_secs(4);
/// Longer than the Lease: every holder's renew deadline passes while the server is stopped.
const PAUSE: Duration = LEASE_DURATION.saturating_mul(2);
const WAIT: Duration = Duration::from_secs(40);

/// Logs the writes of the replicas' users; nothing else.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: [replica-a, replica-b]
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
";

fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) only sends a signal; the pids are processes this test started.
    unsafe { libc::kill(pid, signal) };
}

/// A control plane of this test's own, stopped (and resumed first, if paused) when dropped.
struct ControlPlane {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
    apiserver: i32,
}

impl ControlPlane {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("a state directory");
        // Bind three ports at once so they differ, then let them go for the control plane.
        let listeners: Vec<TcpListener> = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
            .collect();
        let port = |i: usize| listeners[i].local_addr().unwrap().port().to_string();
        let policy = dir.path().join("audit-policy.yaml");
        std::fs::write(&policy, AUDIT_POLICY).expect("writing the audit policy");
        let tokens: String = ["admin"]
            .iter()
            .chain(REPLICAS.iter())
            .map(|user| format!("token-{user},{user},{user},\"system:masters\"\n"))
            .collect();
        std::fs::write(dir.path().join("tokens.csv"), tokens).expect("writing tokens.csv");
        let env = vec![
            (
                "FLOTILLA_CONTROLPLANE_DIR",
                dir.path().display().to_string(),
            ),
            ("FLOTILLA_ETCD_PORT", port(0)),
            ("FLOTILLA_ETCD_PEER_PORT", port(1)),
            ("FLOTILLA_APISERVER1_PORT", port(2)),
            ("FLOTILLA_CLUSTERS", "1".into()),
            ("FLOTILLA_CONTROLLER_MANAGERS", "0".into()),
            ("FLOTILLA_AUDIT_POLICY", policy.display().to_string()),
        ];
        drop(listeners);
        let mut plane = Self {
            dir,
            env,
            apiserver: 0,
        };
        assert!(plane.script("start.sh"), "start.sh failed");
        plane.apiserver = std::fs::read_to_string(plane.path("pids/apiserver1.pid"))
            .expect("the API server's pid file")
            .trim()
            .parse()
            .expect("a pid");
        plane
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Runs a script of tests/controlplane/ on this control plane; true when it succeeded.
    fn script(&self, name: &str) -> bool {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/controlplane")
            .join(name);
        Command::new("bash")
            .arg(script)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }

    /// A kubeconfig for cluster 1 authenticating as `user`.
    fn kubeconfig(&self, user: &str) -> PathBuf {
        let admin = std::fs::read_to_string(self.path("cluster1.kubeconfig")).expect("kubeconfig");
        let path = self.path(&format!("{user}.kubeconfig"));
        std::fs::write(
            &path,
            admin.replace("token-admin", &format!("token-{user}")),
        )
        .expect("writing a kubeconfig");
        path
    }

    async fn client(&self) -> Client {
        let kubeconfig = Kubeconfig::read_from(self.path("cluster1.kubeconfig")).expect("read");
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("a usable kubeconfig");
        Client::try_from(config).expect("a client")
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if self.apiserver > 0 {
            signal(self.apiserver, libc::SIGCONT);
        }
        if !self.script("stop.sh") {
            eprintln!("stop.sh failed; see {}", self.path("logs").display());
        }
    }
}

/// A `flotilla controller` process, killed when dropped.
struct Replica {
    identity: &'static str,
    child: Child,
    log: PathBuf,
}

impl Replica {
    fn start(plane: &ControlPlane, identity: &'static str) -> Self {
        let log = plane.path(&format!("logs/{identity}.log"));
        let out = std::fs::File::create(&log).expect("a log file");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args([
                "controller",
                "--namespace",
                NAMESPACE,
                "--identity",
                identity,
                // One decider: the leader reconciles every Application (tests/sharding.rs
                // covers replicas sharing them).
                "--shards",
                "1",
            ])
            .arg("--kubeconfig")
            .arg(plane.kubeconfig(identity))
            .arg("--repo-cache")
            .arg(plane.path(&format!("repos-{identity}")))
            .arg("--lease-duration")
            .arg(format!("{}s", LEASE_DURATION.as_secs()))
            .args(["--renew-deadline", "3s"])
            .args([
                "--retry-period",
                "500ms",
                "--app-resync",
                "1s",
                "--repo-refresh",
                "0s",
            ])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(out.try_clone().expect("a log file"))
            .stderr(out)
            .spawn()
            .expect("flotilla controller starts");
        Self {
            identity,
            child,
            log,
        }
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("a pid")
    }

    /// How many times it logged that it stopped acting.
    fn stops(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("stopped acting")
            .count()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt("flotilla-controller")
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec?.holder_identity)
}

async fn wait_for_holder(leases: &Api<Lease>, wanted: &str) {
    eventually_within(
        WAIT,
        &format!("{wanted} holding the Lease"),
        async || match holder(leases).await {
            Some(h) if h == wanted => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
}

/// Waits until every Application is Synced at `revision`.
async fn synced(applications: &Api<Application>, names: &[&str], revision: &str) {
    eventually_within(
        WAIT,
        &format!("{names:?} Synced at {revision}"),
        async || {
            for name in names {
                let app = applications.get(name).await.map_err(|e| e.to_string())?;
                let sync = app.status.and_then(|s| s.sync).unwrap_or_default();
                if (sync.status.as_str(), sync.revision.as_str()) != ("Synced", revision) {
                    return Err(format!(
                        "{name}: {} at {}",
                        sync.status.as_str(),
                        sync.revision
                    ));
                }
            }
            Ok(())
        },
    )
    .await;
}

/// Commits a ConfigMap `<name>` with `version` for each of `names`.
fn commit_version(repo: &Path, names: &[&str], version: &str) -> String {
    commit_apps(repo, names, version, |name, version| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  version: \"{version}\"\n"
        )
    })
}

/// One successful write from the audit log.
#[derive(Debug)]
struct Write {
    user: String,
    received: Timestamp,
    completed: Timestamp,
    what: String,
}

fn audited_writes(log: &Path) -> Vec<Write> {
    let text = std::fs::read_to_string(log).expect("the audit log");
    let mut writes: Vec<Write> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("an audit event"))
        .filter(|event| {
            event["responseStatus"]["code"]
                .as_u64()
                .is_some_and(|c| c < 300)
        })
        .map(|event| {
            let time = |field: &str| -> Timestamp {
                event[field]
                    .as_str()
                    .and_then(|t| t.parse().ok())
                    .expect("a timestamp")
            };
            let object = &event["objectRef"];
            Write {
                user: event["user"]["username"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                received: time("requestReceivedTimestamp"),
                completed: time("stageTimestamp"),
                what: format!(
                    "{} {}/{}",
                    event["verb"].as_str().unwrap_or_default(),
                    object["resource"].as_str().unwrap_or_default(),
                    object["name"].as_str().unwrap_or_default()
                ),
            }
        })
        .collect();
    writes.sort_by_key(|w| w.received);
    writes
}

/// Consecutive writes of one identity.
struct Run {
    user: String,
    from: Timestamp,
    to: Timestamp,
    count: usize,
    first: String,
}

fn runs(writes: &[Write]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for write in writes {
        match runs.last_mut() {
            Some(run) if run.user == write.user => {
                run.to = run.to.max(write.completed);
                run.count += 1;
            }
            _ => runs.push(Run {
                user: write.user.clone(),
                from: write.received,
                to: write.completed,
                count: 1,
                first: write.what.clone(),
            }),
        }
    }
    runs
}

#[tokio::test]
async fn writes_never_come_from_two_replicas_at_once_across_a_paused_api_server_and_a_paused_leader()
 {
    let plane = ControlPlane::start();
    let client = plane.client().await;
    install_flotilla_crds(&client).await;
    let namespace: Namespace = object(json!({"metadata": {"name": NAMESPACE}}));
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("creating the namespace");
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let applications: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
    let names = ["a", "b", "c"];
    let repo = repository();
    let mut revision = commit_version(repo.path(), &names, "1");
    let url = format!("file://{}", repo.path().display());

    let replicas = [
        Replica::start(&plane, REPLICAS[0]),
        Replica::start(&plane, REPLICAS[1]),
    ];
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), NAMESPACE);
    apply(&appsets, &appset(NAMESPACE, &url, &names, json!({}))).await;
    synced(&applications, &names, &revision).await;
    let first = holder(&leases).await.expect("a leader");
    println!("{first} leads; Applications synced at {revision}");

    // 1. The API server stops answering for longer than the Lease, while a new commit is due.
    revision = commit_version(repo.path(), &names, "2");
    let stops_before: usize = replicas.iter().map(Replica::stops).sum();
    signal(plane.apiserver, libc::SIGSTOP);
    let (paused, paused_at) = (Instant::now(), Timestamp::now());
    tokio::time::sleep(PAUSE).await;
    signal(plane.apiserver, libc::SIGCONT);
    println!(
        "API server paused {paused_at} .. {} ({:?})",
        Timestamp::now(),
        paused.elapsed()
    );
    synced(&applications, &names, &revision).await;
    let stops_after: usize = replicas.iter().map(Replica::stops).sum();
    assert!(
        stops_after > stops_before,
        "the leader stopped acting when it could not renew within its deadline"
    );
    let second = holder(&leases).await.expect("a leader");
    println!("after the pause {second} leads; Applications synced at {revision}");

    // 2. The leader itself is paused until the other replica takes over, then resumed.
    let leader = replicas
        .iter()
        .find(|r| r.identity == second)
        .expect("a replica");
    let standby = replicas
        .iter()
        .find(|r| r.identity != second)
        .expect("a replica");
    signal(leader.pid(), libc::SIGSTOP);
    let (stopped, stopped_at) = (Instant::now(), Timestamp::now());
    wait_for_holder(&leases, standby.identity).await;
    println!(
        "{} paused at {stopped_at}; {} holds the Lease {:?} later",
        leader.identity,
        standby.identity,
        stopped.elapsed(),
    );
    revision = commit_version(repo.path(), &names, "3");
    synced(&applications, &names, &revision).await;
    let stops_before = leader.stops();
    signal(leader.pid(), libc::SIGCONT);
    println!("{} resumed at {}", leader.identity, Timestamp::now());
    eventually_within(
        WAIT,
        "the resumed replica noticing it lost the Lease",
        async || {
            if leader.stops() > stops_before {
                Ok(())
            } else {
                Err(format!("{} stops logged", leader.stops()))
            }
        },
    )
    .await;
    revision = commit_version(repo.path(), &names, "4");
    synced(&applications, &names, &revision).await;
    drop(replicas);
    for replica in &REPLICAS {
        let log =
            std::fs::read_to_string(plane.path(&format!("logs/{replica}.log"))).unwrap_or_default();
        for line in log
            .lines()
            .filter(|l| l.contains("leading") || l.contains("stopped acting"))
        {
            println!("  {line}");
        }
    }

    let writes = audited_writes(&plane.path("logs/audit1.log"));
    println!("who wrote when (from the audit log):");
    for run in runs(&writes) {
        let (user, from, to, count, first) = (run.user, run.from, run.to, run.count, run.first);
        println!("  {user}: {from} .. {to}, {count} writes, the first {first}");
    }
    let users: std::collections::BTreeSet<&str> = writes.iter().map(|w| w.user.as_str()).collect();
    assert_eq!(users.len(), 2, "both replicas led at some point: {users:?}");
    for (i, a) in writes.iter().enumerate() {
        for b in &writes[i + 1..] {
            assert!(
                a.user == b.user || a.completed < b.received || b.completed < a.received,
                "writes from two identities overlap: {a:?} and {b:?}"
            );
        }
    }
    for pair in runs(&writes).windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            before.to < after.from,
            "{} wrote until {} but {} started at {}",
            before.user,
            before.to,
            after.user,
            after.from
        );
    }
}

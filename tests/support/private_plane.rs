//! A control plane of a test's own (one etcd and one kube-apiserver started by
//! `tests/controlplane/start.sh` on free ports, in a temporary directory), with users
//! authenticated by token and an audit log of their writes and lists, stopped when dropped; its
//! faults (the API server killed and started again, etcd compacted); and the reading of that
//! audit log.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;

/// The verbs of writes.
const WRITES: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// An audit policy logging the writes and lists of `users`; nothing else.
fn audit_policy(users: &[&str]) -> String {
    format!(
        "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: [{}]
    verbs: [{}, list]
  - level: None
",
        users.join(", "),
        WRITES.join(", ")
    )
}

/// Sends `signal` to process `pid`.
pub fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) only sends a signal; the pids are processes this test started.
    #[allow(unsafe_code, reason = "a signal is only sent through kill(2)")]
    unsafe {
        libc::kill(pid, signal)
    };
}

/// A control plane of this test's own, stopped (and resumed first, if paused) when dropped.
pub struct ControlPlane {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
    pub apiserver: i32,
}

impl ControlPlane {
    /// Starts it, with a token for `admin` and each of `users` (all of them cluster admins) and
    /// an audit log of their writes (`logs/audit1.log`).
    pub fn start(users: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a state directory");
        // Bind three ports at once so they differ, then let them go for the control plane.
        let listeners: Vec<TcpListener> = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
            .collect();
        let port = |i: usize| listeners[i].local_addr().unwrap().port().to_string();
        let policy = dir.path().join("audit-policy.yaml");
        std::fs::write(&policy, audit_policy(users)).expect("writing the audit policy");
        let tokens: String = ["admin"]
            .iter()
            .chain(users.iter())
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
        plane.apiserver = plane.pid("apiserver1");
        plane
    }

    /// Kills the API server (SIGKILL) and starts it again on the same etcd, waiting until it is
    /// ready.
    pub fn restart_apiserver(&mut self) {
        signal(self.apiserver, libc::SIGKILL);
        let gone = Path::new("/proc").join(self.apiserver.to_string());
        while gone.exists() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.apiserver = 0;
        assert!(
            self.script("start.sh"),
            "start.sh failed to start the API server again"
        );
        self.apiserver = self.pid("apiserver1");
    }

    /// Compacts etcd at its current revision (through etcd's HTTP gateway, as `etcdctl compact`
    /// does), so every watch resumed from an older resourceVersion is refused; the revision.
    pub fn compact_etcd(&self) -> i64 {
        let header = self.etcd("/v3/kv/range", &serde_json::json!({"key": "AA=="}));
        let revision: i64 = header["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("etcd's revision in {header}"));
        self.etcd(
            "/v3/kv/compaction",
            &serde_json::json!({"revision": revision.to_string(), "physical": true}),
        );
        revision
    }

    /// POSTs `body` to etcd's gateway at `path`; its JSON answer.
    fn etcd(&self, path: &str, body: &Value) -> Value {
        use std::io::{Read as _, Write as _};
        let port = self
            .env
            .iter()
            .find(|(name, _)| *name == "FLOTILLA_ETCD_PORT")
            .map(|(_, port)| port.clone())
            .expect("etcd's port");
        let body = body.to_string();
        let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).expect("etcd");
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("writing to etcd");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("etcd's answer");
        let (head, json) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.1 200"), "etcd {path}: {answer}");
        serde_json::from_str(json).unwrap_or_else(|e| panic!("etcd {path}: {e}: {json}"))
    }

    /// The pid of component `name` from its pid file.
    fn pid(&self, name: &str) -> i32 {
        std::fs::read_to_string(self.path(&format!("pids/{name}.pid")))
            .expect("a pid file")
            .trim()
            .parse()
            .expect("a pid")
    }

    /// A path in its state directory.
    pub fn path(&self, relative: &str) -> PathBuf {
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
    pub fn kubeconfig(&self, user: &str) -> PathBuf {
        let admin = std::fs::read_to_string(self.path("cluster1.kubeconfig")).expect("kubeconfig");
        let path = self.path(&format!("{user}.kubeconfig"));
        std::fs::write(
            &path,
            admin.replace("token-admin", &format!("token-{user}")),
        )
        .expect("writing a kubeconfig");
        path
    }

    /// An admin client of cluster 1.
    pub async fn client(&self) -> Client {
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
        if std::thread::panicking() {
            // The logs of a failed test are kept (under the system's temporary directory).
            self.dir.disable_cleanup(true);
            eprintln!("logs kept in {}", self.path("logs").display());
        }
    }
}

/// One successful request (a write or a list) from the audit log.
#[derive(Debug)]
pub struct Write {
    pub user: String,
    pub received: Timestamp,
    pub completed: Timestamp,
    /// `verb resource[/subresource]/name`.
    pub what: String,
    /// The request's path and query.
    pub uri: String,
    /// The response's HTTP status (201: created).
    pub code: u64,
}

impl Write {
    /// Whether it was a dry run (which writes nothing).
    pub fn dry_run(&self) -> bool {
        self.uri.contains("dryRun=")
    }

    /// Whether it renewed, took or created the Lease `lease`.
    pub fn holds(&self, lease: &str) -> bool {
        self.what == format!("update leases/{lease}")
            || self.what == format!("create leases/{lease}")
    }
}

/// The successful writes of the audit log `log`, by the time they were received.
pub fn audited_writes(log: &Path) -> Vec<Write> {
    audited(log, |verb| WRITES.contains(&verb))
}

/// The successful lists of the audit log `log`, by the time they were received.
pub fn audited_lists(log: &Path) -> Vec<Write> {
    audited(log, |verb| verb == "list")
}

/// The successful requests of the audit log `log` whose verb `wanted` accepts, by the time they
/// were received.
fn audited(log: &Path, wanted: impl Fn(&str) -> bool) -> Vec<Write> {
    let text = std::fs::read_to_string(log).expect("the audit log");
    let mut requests: Vec<Write> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("an audit event"))
        .filter(|event| {
            event["responseStatus"]["code"]
                .as_u64()
                .is_some_and(|c| c < 300)
                && wanted(event["verb"].as_str().unwrap_or_default())
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
                    "{} {}{}/{}",
                    event["verb"].as_str().unwrap_or_default(),
                    object["resource"].as_str().unwrap_or_default(),
                    object["subresource"]
                        .as_str()
                        .map(|sub| format!("/{sub}"))
                        .unwrap_or_default(),
                    object["name"].as_str().unwrap_or_default()
                ),
                uri: event["requestURI"].as_str().unwrap_or_default().to_string(),
                code: event["responseStatus"]["code"].as_u64().unwrap_or_default(),
            }
        })
        .collect();
    requests.sort_by_key(|w| w.received);
    requests
}

/// The writes of `replicas` received when the replica had not written the Lease `lease`
/// (created, taken or renewed it) within `renew_deadline` before: writes of a replica that
/// did not hold the Lease. `writes` as [`audited_writes`] gives them. The API server was stopped
/// during each of `pauses` (from, to): a write it received within 5 s after one ended may have
/// been sent at any time during it, so it passes if the replica held the Lease when the pause
/// began.
pub fn writes_without_lease<'w>(
    writes: &'w [Write],
    replicas: &[&str],
    lease: &str,
    renew_deadline: std::time::Duration,
    pauses: &[(Timestamp, Timestamp)],
) -> Vec<&'w Write> {
    let deadline = SignedDuration::try_from(renew_deadline).expect("a deadline");
    let slack = SignedDuration::from_secs(5);
    // Whether `user` had written the Lease less than the renew deadline before `at`.
    let held_at = |user: &str, at: Timestamp| {
        writes
            .iter()
            .rev()
            .find(|held| held.user == user && held.holds(lease) && held.received <= at)
            .is_some_and(|held| at <= held.received + deadline)
    };
    writes
        .iter()
        .filter(|w| replicas.contains(&w.user.as_str()) && !w.holds(lease))
        .filter(|w| {
            let queued_in = pauses
                .iter()
                .find(|(_, to)| *to <= w.received && w.received <= *to + slack);
            !held_at(&w.user, w.received)
                && !queued_in.is_some_and(|(from, _)| held_at(&w.user, *from))
        })
        .collect()
}

/// A `flotilla controller` process on a [`ControlPlane`], authenticated as its identity,
/// logging to `logs/<identity>.log`; killed (SIGKILL) when dropped.
pub struct Replica {
    pub identity: &'static str,
    child: std::process::Child,
    log: PathBuf,
}

impl Replica {
    /// `flotilla controller --namespace NAMESPACE --identity IDENTITY` with `args`.
    pub fn start(
        plane: &ControlPlane,
        namespace: &str,
        identity: &'static str,
        args: &[&str],
    ) -> Self {
        let log = plane.path(&format!("logs/{identity}.log"));
        let out = std::fs::File::create(&log).expect("a log file");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args([
                "controller",
                "--namespace",
                namespace,
                "--identity",
                identity,
            ])
            .arg("--kubeconfig")
            .arg(plane.kubeconfig(identity))
            .arg("--repo-cache")
            .arg(plane.path(&format!("repos-{identity}")))
            .args(args)
            .env("RUST_LOG", super::controller_log_filter())
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

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("a pid")
    }

    /// How many times its log says `text`.
    pub fn logged(&self, text: &str) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches(text)
            .count()
    }

    /// How many times it logged that it stopped acting.
    pub fn stops(&self) -> usize {
        self.logged("stopped acting")
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! A Prometheus server on loopback: Debian's `prometheus` (2.42, installed by
//! tests/tools/install-servers.sh) started on a free port with a temporary configuration and
//! storage, behind HTTP basic auth (its `--web.config.file`, the password hashed with
//! `htpasswd -B`), scraping every second an [`Exporter`] the test serves: one gauge in the plain
//! text exposition format whose value the test sets. Both stop when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::git_remote::{free_port, wait_for_port};
use super::loopback_http::LoopbackServer;
use super::server_process::ServerProcess;

/// The gauge the exporter serves.
pub const GAUGE: &str = "flotilla_test_error_rate";

/// A loopback exporter of [`GAUGE`], its value set by the test.
pub struct Exporter {
    server: LoopbackServer,
    value: Arc<AtomicU64>,
}

impl Exporter {
    /// Serves [`GAUGE`] at `value` on every path.
    pub fn start(value: f64) -> Self {
        let shared = Arc::new(AtomicU64::new(value.to_bits()));
        let served = Arc::clone(&shared);
        let server = LoopbackServer::start(move |stream| {
            let value = f64::from_bits(served.load(Ordering::SeqCst));
            let _ = answer(stream, &format!("# TYPE {GAUGE} gauge\n{GAUGE} {value}\n"));
        });
        Self {
            server,
            value: shared,
        }
    }

    /// Serves `value` from now on.
    pub fn set(&self, value: f64) {
        self.value.store(value.to_bits(), Ordering::SeqCst);
    }

    /// `127.0.0.1:PORT`, as a scrape target.
    fn target(&self) -> String {
        self.server
            .base_url()
            .trim_start_matches("http://")
            .to_owned()
    }
}

/// Reads a request's head and answers `body` as the text exposition format.
fn answer(mut stream: TcpStream, body: &str) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())
}

/// A running Prometheus scraping one exporter, asking `username`/`password`.
pub struct Prometheus {
    port: u16,
    authorization: String,
    _child: ServerProcess,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts it scraping `exporter` every second as the job `job`.
    pub fn start(exporter: &Exporter, job: &str, username: &str, password: &str) -> Self {
        use base64::Engine as _;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let htpasswd = Command::new("htpasswd")
            .args(["-Bbn", username, password])
            .output()
            .expect("htpasswd runs (apache2-utils, tests/tools/install-servers.sh)");
        assert!(htpasswd.status.success(), "htpasswd: {htpasswd:?}");
        let line = String::from_utf8(htpasswd.stdout).expect("htpasswd prints text");
        let hash = line
            .trim()
            .split_once(':')
            .map(|(_, hash)| hash.to_owned())
            .expect("user:hash");
        let web = dir.path().join("web.yml");
        std::fs::write(&web, format!("basic_auth_users:\n  {username}: '{hash}'\n"))
            .expect("writes the web configuration");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
                 scrape_configs:\n\
                 - job_name: {job}\n  static_configs: [{{targets: ['{}']}}]\n",
                exporter.target()
            ),
        )
        .expect("writes the Prometheus configuration");
        let port = free_port();
        let child = ServerProcess::spawn(
            Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--web.config.file={}", web.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .expect("prometheus runs (tests/tools/install-servers.sh installs it)");
        wait_for_port(port, "Prometheus");
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        Self {
            port,
            authorization: format!("Basic {token}"),
            _child: child,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The first sample value of the instant query `query`, if there is one (as the test's
    /// own check that a value was scraped).
    pub fn first_value(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        let request = format!(
            "GET /api/v1/query?query={encoded} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Authorization: {}\r\nConnection: close\r\n\r\n",
            self.authorization
        );
        stream.write_all(request.as_bytes()).ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let (_, body) = answer.split_once("\r\n\r\n")?;
        let json: serde_json::Value = serde_json::from_str(body).ok()?;
        json.pointer("/data/result/0/value/1")?
            .as_str()?
            .parse()
            .ok()
    }
}

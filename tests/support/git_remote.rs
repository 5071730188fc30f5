//! Git repositories the way teams have them: a bare repository (what a remote is) that commits
//! are pushed to from a clone, served on loopback by `git daemon` (`git://`) and by
//! `git http-backend` behind a small HTTP/1.1 server (`http://`), as a git host would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::loopback_http::LoopbackServer;
use super::server_process::ServerProcess;

/// Runs `git` in `dir` with a fixed identity; fails the test when it fails. Returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A bare repository `<name>.git` under a temporary directory (the directory servers export),
/// and a clone of it that tests write, commit and push from.
pub struct Remote {
    base: tempfile::TempDir,
    name: String,
    work: tempfile::TempDir,
}

impl Remote {
    /// An empty bare repository `name.git` (default branch `main`) and its clone.
    pub fn new(name: &str) -> Self {
        let base = tempfile::tempdir().expect("a temporary directory");
        let bare = base.path().join(format!("{name}.git"));
        std::fs::create_dir_all(&bare).expect("creates the bare repository's directory");
        git(&bare, &["init", "-q", "--bare", "-b", "main"]);
        let work = tempfile::tempdir().expect("a temporary directory");
        git(work.path(), &["init", "-q", "-b", "main"]);
        git(
            work.path(),
            &["remote", "add", "origin", &bare.display().to_string()],
        );
        Self {
            base,
            name: name.to_owned(),
            work,
        }
    }

    /// The bare repository's directory.
    pub fn bare(&self) -> PathBuf {
        self.base.path().join(format!("{}.git", self.name))
    }

    /// The directory a server exports (holding `<name>.git`).
    pub fn exported(&self) -> &Path {
        self.base.path()
    }

    /// The repository's name on a server: `<name>.git`.
    pub fn served_name(&self) -> String {
        format!("{}.git", self.name)
    }

    /// `file:///…/<name>.git`.
    pub fn file_url(&self) -> String {
        format!("file://{}", self.bare().display())
    }

    /// The clone's directory, where files are written before [`Remote::push`].
    pub fn work(&self) -> &Path {
        self.work.path()
    }

    /// Writes `content` to `path` (relative to the repository root) in the clone.
    pub fn write(&self, path: &str, content: &str) {
        let target = self.work.path().join(path);
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("creates directories");
        std::fs::write(target, content).expect("writes a file");
    }

    /// Commits everything in the clone, pushes `main` to the bare repository, and returns the
    /// commit.
    pub fn push(&self, message: &str) -> String {
        git(self.work(), &["add", "-A"]);
        git(
            self.work(),
            &["commit", "-q", "--allow-empty", "-m", message],
        );
        git(self.work(), &["push", "-q", "origin", "main"]);
        git(self.work(), &["rev-parse", "HEAD"])
    }
}

/// A free loopback port (free a moment ago; the server binds it right away).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until something accepts connections on `port`, up to 10 s.
pub fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} never listened on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `git daemon` exporting one directory on a loopback port; stopped when dropped.
pub struct GitDaemon {
    _process: ServerProcess,
    port: u16,
}

impl GitDaemon {
    /// Serves every repository under `exported` (read-only).
    pub fn start(exported: &Path) -> Self {
        let port = free_port();
        let process = ServerProcess::spawn(
            Command::new("git")
                .arg("daemon")
                .args(["--reuseaddr", "--export-all"])
                .arg("--listen=127.0.0.1")
                .arg(format!("--port={port}"))
                .arg(format!("--base-path={}", exported.display()))
                .arg(exported)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .expect("starts git daemon");
        wait_for_port(port, "git daemon");
        Self {
            _process: process,
            port,
        }
    }

    /// `git://127.0.0.1:PORT/<name>`.
    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

/// `git http-backend` (smart HTTP, read-only) behind a one-request-per-connection HTTP/1.1
/// server on a loopback port; stopped when dropped.
pub struct GitHttp {
    server: LoopbackServer,
}

impl GitHttp {
    /// Serves every repository under `exported`.
    pub fn start(exported: &Path) -> Self {
        Self::serving(exported, None, true)
    }

    /// Serves every repository under `exported` to requests with HTTP basic auth as `username`
    /// and `password`; others are answered 401 with a challenge, as a git host does.
    pub fn start_with_password(exported: &Path, username: &str, password: &str) -> Self {
        Self::serving(exported, Some(basic(username, password)), true)
    }

    /// As [`GitHttp::start_with_password`], but requests without the password are answered 404
    /// without a challenge, as hosts hiding private repositories do: a client must send the
    /// password up front.
    pub fn start_unchallenged(exported: &Path, username: &str, password: &str) -> Self {
        Self::serving(exported, Some(basic(username, password)), false)
    }

    fn serving(exported: &Path, authorization: Option<String>, challenge: bool) -> Self {
        let root = exported.to_owned();
        Self {
            server: LoopbackServer::start(move |stream| {
                let _ = serve(stream, &root, authorization.as_deref(), challenge);
            }),
        }
    }

    /// `http://127.0.0.1:PORT/<name>`.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.server.base_url())
    }
}

/// The `Authorization` header of HTTP basic auth.
fn basic(username: &str, password: &str) -> String {
    use base64::Engine as _;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    format!("Basic {token}")
}

/// Answers one request by running `git http-backend` as a CGI program, or with 401 (404 without
/// `challenge`) when `authorization` is required and the request does not carry it.
fn serve(
    stream: TcpStream,
    root: &Path,
    authorization: Option<&str>,
    challenge: bool,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let body = if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        read_chunked(&mut reader)?
    } else {
        let length = header("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    if authorization.is_some_and(|wanted| header("authorization").as_deref() != Some(wanted)) {
        let mut stream = stream;
        let (status, body) = if challenge {
            (
                "401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"",
                "authentication required\n",
            )
        } else {
            ("404 Not Found", "repository not found\n")
        };
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        return stream.flush();
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (variable, name) in [
        ("CONTENT_TYPE", "content-type"),
        ("GIT_PROTOCOL", "git-protocol"),
        ("HTTP_CONTENT_ENCODING", "content-encoding"),
    ] {
        if let Some(value) = header(name) {
            command.env(variable, value);
        }
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    child.stdin.take().expect("piped stdin").write_all(&body)?;
    let out = child.wait_with_output()?;
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| (at, 2))
        })
        .unwrap_or((out.stdout.len(), 0));
    let cgi_headers = String::from_utf8_lossy(&out.stdout[..split.0]).into_owned();
    let content = &out.stdout[split.0 + split.1..];
    let mut status = "200 OK".to_owned();
    let mut response = Vec::new();
    for line in cgi_headers.lines().filter(|l| !l.trim().is_empty()) {
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("status") => {
                status = value.trim().to_owned();
            }
            _ => response.extend_from_slice(format!("{line}\r\n").as_bytes()),
        }
    }
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        content.len()
    )?;
    stream.write_all(&response)?;
    stream.write_all(b"\r\n")?;
    stream.write_all(content)?;
    stream.flush()
}

/// A chunked request body, decoded.
fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk)?;
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

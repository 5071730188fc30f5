//! Small HTTP/1.1 servers on a loopback port for tests, one request per connection, each
//! answered on a thread of its own; stopped when dropped. [`LoopbackServer`] runs any handler;
//! [`StaticFiles`] serves a directory as a chart repository host would.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A loopback server answering each connection with a handler.
pub struct LoopbackServer {
    port: u16,
    stopping: Arc<AtomicBool>,
    server: Option<std::thread::JoinHandle<()>>,
}

impl LoopbackServer {
    /// Listens on a free loopback port and answers every connection with `handler`.
    pub fn start(handler: impl Fn(TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopping);
        let handler = Arc::new(handler);
        let server = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let handler = Arc::clone(&handler);
                std::thread::spawn(move || handler(stream));
            }
        });
        Self {
            port,
            stopping,
            server: Some(server),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// The files of one directory over HTTP GET (404 for anything else).
pub struct StaticFiles {
    server: LoopbackServer,
}

impl StaticFiles {
    /// Serves the files under `root`.
    pub fn start(root: &Path) -> Self {
        Self::serving(root, None)
    }

    /// Serves the files under `root` to requests with HTTP basic auth as `username` and
    /// `password`; others are answered 401.
    pub fn start_with_password(root: &Path, username: &str, password: &str) -> Self {
        use base64::Engine as _;
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        Self::serving(root, Some(format!("Basic {token}")))
    }

    fn serving(root: &Path, authorization: Option<String>) -> Self {
        let root = root.to_owned();
        Self {
            server: LoopbackServer::start(move |stream| {
                let _ = serve_file(stream, &root, authorization.as_deref());
            }),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server.base_url()
    }
}

fn serve_file(
    mut stream: TcpStream,
    root: &Path,
    authorization: Option<&str>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut authorized = authorization.is_none();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let (Some(wanted), Some((name, value))) = (authorization, line.split_once(':')) {
            authorized |= name.eq_ignore_ascii_case("authorization") && value.trim() == wanted;
        }
    }
    if !authorized {
        let body = "authentication required\n";
        let head = format!(
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"charts\"\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        return stream.write_all(body.as_bytes());
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let relative = Path::new(
        target
            .split('?')
            .next()
            .unwrap_or_default()
            .trim_start_matches('/'),
    );
    let inside = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    let (status, body) = match std::fs::read(root.join(relative)) {
        Ok(body) if inside => ("200 OK", body),
        _ => ("404 Not Found", b"not found\n".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&body)
}

//! Headless Chromium (Debian's `chromium`) driven through `chromedriver`'s WebDriver HTTP API by
//! a small client over hyper: open a page, run a script in it, take a screenshot. `tests/run-all.sh`
//! installs both packages; a missing `chromedriver` fails the calling test with that advice.

use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::support::eventually;
use crate::support::server_process::ServerProcess;

/// Chromium's flags for this machine: headless, no sandbox (tests run as root), and none of
/// the background connections a closed network refuses.
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1800",
];

/// One WebDriver session in a chromedriver process of its own.
pub struct Browser {
    _driver: ServerProcess,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and opens a session with a new, empty profile.
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let driver = ServerProcess::spawn(
            Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .expect("starts chromedriver (tests/run-all.sh installs chromium and chromium-driver)");
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut browser = Self {
            _driver: driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        eventually("chromedriver to be ready", async || {
            let status = browser.call(Method::GET, "/status", None).await?;
            match status["ready"].as_bool() {
                Some(true) => Ok(()),
                _ => Err(status.to_string()),
            }
        })
        .await;
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(ToString::to_string).collect();
        args.push(format!(
            "--user-data-dir={}",
            browser._profile.path().display()
        ));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
        }}});
        let session = browser
            .call(Method::POST, "/session", Some(capabilities))
            .await
            .expect("opens a WebDriver session");
        browser.session = session["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.session_call(Method::POST, "url", json!({"url": url}))
            .await;
    }

    /// The value `script` (a function body) returns in the page.
    pub async fn script(&self, script: &str) -> Value {
        self.session_call(
            Method::POST,
            "execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Writes a PNG screenshot of the window to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self
            .session_call(Method::GET, "screenshot", Value::Null)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("a base64 screenshot"))
            .expect("valid base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("creates the screenshot directory");
        }
        std::fs::write(path, png).expect("writes the screenshot");
    }

    /// Closes the session (and its Chromium), then chromedriver (dropping its guard).
    pub async fn quit(self) {
        let path = format!("/session/{}", self.session);
        let _ = self.call(Method::DELETE, &path, None).await;
    }

    /// `command` of this session; fails the test when WebDriver reports an error.
    async fn session_call(&self, method: Method, command: &str, body: Value) -> Value {
        let path = format!("/session/{}/{command}", self.session);
        let body = (!body.is_null()).then_some(body);
        self.call(method, &path, body)
            .await
            .unwrap_or_else(|error| panic!("WebDriver {command}: {error}"))
    }

    /// One WebDriver request; its `value`, or the error it reports.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let body = body.map_or_else(String::new, |b| b.to_string());
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let ok = response.status().is_success();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let mut answer: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        let value = answer["value"].take();
        if ok {
            Ok(value)
        } else {
            Err(value.to_string())
        }
    }
}

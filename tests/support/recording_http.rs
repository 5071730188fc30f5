//! A loopback HTTP service that records every request it gets (method, path, headers, body)
//! and answers each as the service it stands for documents (a status and a body chosen per
//! request), for the notification tests' receivers: a generic webhook, Slack's Web API, a
//! Teams connector.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

use super::loopback_http::LoopbackServer;

/// One request a service got.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Recorded {
    /// The body as JSON (`null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_default()
    }
}

/// A recording service on loopback.
pub struct RecordingServer {
    server: LoopbackServer,
    received: Arc<Mutex<Vec<Recorded>>>,
}

impl RecordingServer {
    /// Answers the `n`th request (from 1) with `answer(n)`: its status and body.
    pub fn start(answer: impl Fn(usize) -> (u16, String) + Send + Sync + 'static) -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let recording = Arc::clone(&received);
        let server = LoopbackServer::start(move |mut stream| {
            let Some(request) = read(&mut stream) else {
                return;
            };
            let n = {
                let mut all = recording.lock().expect("not poisoned");
                all.push(request);
                all.len()
            };
            let (status, body) = answer(n);
            let reply = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                if status < 300 { "OK" } else { "Error" },
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        });
        Self { server, received }
    }

    /// `http://127.0.0.1:PORT<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    /// The requests so far.
    pub fn received(&self) -> Vec<Recorded> {
        self.received.lock().expect("not poisoned").clone()
    }
}

/// One HTTP/1.1 request.
fn read(stream: &mut std::net::TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split(' ');
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

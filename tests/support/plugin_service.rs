//! A generator plugin service on loopback for tests, answering HTTP/1.1 by hand over plain TCP or
//! TLS: with status 200 it checks the bearer token and answers one parameter set per entry of the
//! input parameter `apps`; with any other status it answers that status and `plugin exploded`.
//! A gated one ([`start_gated`]) holds its answers while the test keeps its [`PluginGate`]
//! closed, so a test can hold an ApplicationSet reconcile in the middle of its generators.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// Where a gated plugin's requests wait: each request takes the next ticket on arrival and is
/// answered once the gate lets its ticket through (all of them while it is open).
#[derive(Clone)]
pub struct PluginGate {
    tickets: Arc<AtomicUsize>,
    /// Tickets below this are let through.
    through_below: Arc<watch::Sender<usize>>,
    arrived: watch::Receiver<usize>,
    arrivals: Arc<watch::Sender<usize>>,
}

impl PluginGate {
    fn new() -> Self {
        let (arrivals, arrived) = watch::channel(0);
        Self {
            tickets: Arc::default(),
            through_below: Arc::new(watch::channel(usize::MAX).0),
            arrived,
            arrivals: Arc::new(arrivals),
        }
    }

    /// Holds every request arriving from now on; returns the ticket the next one takes.
    pub fn close(&self) -> usize {
        let next = self.tickets.load(Ordering::SeqCst);
        self.through_below.send_replace(next);
        next
    }

    /// Lets the requests with tickets below `ticket` through; later ones wait.
    pub fn let_through_below(&self, ticket: usize) {
        self.through_below.send_replace(ticket);
    }

    /// Lets every request through, now and later.
    pub fn open(&self) {
        self.through_below.send_replace(usize::MAX);
    }

    /// Waits until the request with ticket `ticket` has arrived.
    pub async fn arrival(&self, ticket: usize) {
        let mut arrived = self.arrived.clone();
        arrived
            .wait_for(|&count| count > ticket)
            .await
            .expect("the plugin service runs");
    }

    /// Takes a ticket and waits until the gate lets it through.
    async fn pass(&self) {
        let ticket = self.tickets.fetch_add(1, Ordering::SeqCst);
        self.arrivals.send_modify(|count| *count += 1);
        let mut through = self.through_below.subscribe();
        let _ = through.wait_for(|&below| ticket < below).await;
    }
}

/// Starts a plugin over plain HTTP; returns its base URL.
pub async fn start(token: &'static str, status: u16) -> String {
    serve(token, status, None, None).await
}

/// Starts a plugin over plain HTTP whose answers wait at a gate, open at first; returns its base
/// URL and the gate.
pub async fn start_gated(token: &'static str) -> (String, PluginGate) {
    let gate = PluginGate::new();
    (serve(token, 200, None, Some(gate.clone())).await, gate)
}

/// Starts a plugin over HTTPS with `acceptor`'s certificate; returns its base URL, naming the
/// host `localhost`.
pub async fn start_tls(token: &'static str, acceptor: TlsAcceptor) -> String {
    serve(token, 200, Some(acceptor), None).await
}

async fn serve(
    token: &'static str,
    status: u16,
    tls: Option<TlsAcceptor>,
    gate: Option<PluginGate>,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds a loopback port");
    let port = listener.local_addr().expect("has an address").port();
    let url = match tls {
        Some(_) => format!("https://localhost:{port}"),
        None => format!("http://127.0.0.1:{port}"),
    };
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (tls, gate) = (tls.clone(), gate.clone());
            tokio::spawn(async move { connection(stream, tls, token, status, gate).await });
        }
    });
    url
}

async fn connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    token: &str,
    status: u16,
    gate: Option<PluginGate>,
) {
    match tls {
        // A client that refuses the certificate ends the handshake: nothing to answer.
        Some(acceptor) => {
            if let Ok(stream) = acceptor.accept(stream).await {
                answer(stream, token, status, gate).await;
            }
        }
        None => answer(stream, token, status, gate).await,
    }
}

/// Reads one request from `stream` and answers it (once `gate` lets it through).
async fn answer(
    stream: impl AsyncRead + AsyncWrite + Unpin,
    token: &str,
    status: u16,
    gate: Option<PluginGate>,
) {
    let mut reader = BufReader::new(stream);
    let (mut length, mut authorization, mut line) = (0, String::new(), String::new());
    while reader.read_line(&mut line).await.is_ok_and(|n| n > 0) && line != "\r\n" {
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization:") {
            authorization = line["authorization:".len()..].trim().to_string();
        }
        line.clear();
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(gate) = gate {
        gate.pass().await;
    }
    let (code, answer) = if status != 200 {
        (status, "plugin exploded".to_string())
    } else if authorization != format!("Bearer {token}") {
        (403, format!("bad token {authorization:?}"))
    } else {
        let apps = request["input"]["parameters"]["apps"].as_array().cloned();
        let sets: Vec<Value> = apps
            .unwrap_or_default()
            .iter()
            .map(|app| json!({"app": app, "appset": request["applicationSetName"]}))
            .collect();
        (200, json!({"output": {"parameters": sets}}).to_string())
    };
    let response = format!(
        "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let stream = reader.get_mut();
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

//! A generator plugin service on loopback for tests, answering HTTP/1.1 by hand over plain TCP or
//! TLS: with status 200 it checks the bearer token and answers one parameter set per entry of the
//! input parameter `apps`; with any other status it answers that status and `plugin exploded`.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// Starts a plugin over plain HTTP; returns its base URL.
pub async fn start(token: &'static str, status: u16) -> String {
    serve(token, status, None).await
}

/// Starts a plugin over HTTPS with `acceptor`'s certificate; returns its base URL, naming the
/// host `localhost`.
pub async fn start_tls(token: &'static str, acceptor: TlsAcceptor) -> String {
    serve(token, 200, Some(acceptor)).await
}

async fn serve(token: &'static str, status: u16, tls: Option<TlsAcceptor>) -> String {
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
            let tls = tls.clone();
            tokio::spawn(async move { connection(stream, tls, token, status).await });
        }
    });
    url
}

async fn connection(stream: TcpStream, tls: Option<TlsAcceptor>, token: &str, status: u16) {
    match tls {
        // A client that refuses the certificate ends the handshake: nothing to answer.
        Some(acceptor) => {
            if let Ok(stream) = acceptor.accept(stream).await {
                answer(stream, token, status).await;
            }
        }
        None => answer(stream, token, status).await,
    }
}

/// Reads one request from `stream` and answers it.
async fn answer(stream: impl AsyncRead + AsyncWrite + Unpin, token: &str, status: u16) {
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

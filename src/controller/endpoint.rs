//! The controller's HTTP endpoint, served with tokio's `TcpListener` (no web framework; one
//! request per connection, then close): `/metrics` (the [`Metrics`] in the OpenMetrics text
//! format), `/healthz` (the process answers), `/readyz` (the replica has read its Lease; see
//! [`Readiness`]). Other paths get 404.

use std::sync::Arc;

use futures::Future;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::metrics::Metrics;
use super::readiness::Readiness;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// Answers every request on `listener` until `stop` completes.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    readiness: Readiness,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else {
            continue;
        };
        let metrics = Arc::clone(&metrics);
        let readiness = readiness.clone();
        tokio::spawn(async move {
            let mut request = [0u8; 1024];
            let read = stream.read(&mut request).await.unwrap_or(0);
            let (status, content_type, body) = answer(path(&request[..read]), &metrics, &readiness);
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// The path of an HTTP request line (`GET /metrics HTTP/1.1`), without its query.
fn path(request: &[u8]) -> &str {
    let line = request.split(|b| *b == b'\n').next().unwrap_or_default();
    let target = std::str::from_utf8(line)
        .unwrap_or_default()
        .split_whitespace()
        .nth(1)
        .unwrap_or_default();
    target.split('?').next().unwrap_or_default()
}

/// The status line, content type and body for `path`.
fn answer(
    path: &str,
    metrics: &Metrics,
    readiness: &Readiness,
) -> (&'static str, &'static str, String) {
    match path {
        "/metrics" => ("200 OK", OPENMETRICS, metrics.render()),
        "/healthz" => ("200 OK", TEXT, "ok\n".to_owned()),
        "/readyz" if readiness.is_ready() => ("200 OK", TEXT, "ok\n".to_owned()),
        "/readyz" => (
            "503 Service Unavailable",
            TEXT,
            "not ready: the Lease has not been read yet\n".to_owned(),
        ),
        _ => (
            "404 Not Found",
            TEXT,
            "not found; try /metrics, /healthz or /readyz\n".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(address: std::net::SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    #[tokio::test]
    async fn serves_metrics_liveness_and_readiness() {
        let metrics = Arc::new(Metrics::default());
        metrics.reconciled(None);
        let readiness = Readiness::default();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, metrics, readiness.clone(), async {
            let _ = stopped.await;
        }));

        let scraped = get(address, "/metrics").await;
        assert!(scraped.starts_with("HTTP/1.1 200 OK"), "{scraped}");
        assert!(scraped.contains("content-type: application/openmetrics-text"));
        assert!(scraped.contains("flotilla_appset_reconciles_total{result=\"ok\"} 1\n"));
        assert!(
            get(address, "/healthz")
                .await
                .starts_with("HTTP/1.1 200 OK")
        );
        let unready = get(address, "/readyz").await;
        assert!(unready.starts_with("HTTP/1.1 503"), "{unready}");
        readiness.mark_ready();
        assert!(
            get(address, "/readyz?verbose")
                .await
                .starts_with("HTTP/1.1 200 OK")
        );
        assert!(get(address, "/other").await.starts_with("HTTP/1.1 404"));

        stop.send(()).unwrap();
        server.await.unwrap();
    }
}

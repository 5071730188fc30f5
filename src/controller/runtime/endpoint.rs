//! The controller's operations endpoint, a [`Handler`] for the [`crate::httpd`] stack:
//! `/metrics` (the [`Metrics`] in the OpenMetrics text format), `/healthz` (the process
//! answers), `/readyz` (the replica has read its Lease; see [`Readiness`]). Other paths get 404.

use std::sync::Arc;

use futures::future::BoxFuture;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::metrics::Metrics;
use crate::controller::leases::readiness::Readiness;
use crate::httpd::response::{Body, full, text};
use crate::httpd::server::Handler;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metrics and health answers.
pub struct Endpoint {
    pub metrics: Arc<Metrics>,
    pub readiness: Readiness,
}

impl Handler for Endpoint {
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
        let response = self.answer(request.uri().path());
        Box::pin(async move { response })
    }
}

impl Endpoint {
    /// The response for `path`.
    fn answer(&self, path: &str) -> Response<Body> {
        match path {
            "/metrics" => full(StatusCode::OK, OPENMETRICS, self.metrics.render()),
            "/healthz" => text(StatusCode::OK, "ok\n"),
            "/readyz" => match self.readiness.not_ready() {
                None => text(StatusCode::OK, "ok\n"),
                Some(why) => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not ready: {why}\n"),
                ),
            },
            _ => text(
                StatusCode::NOT_FOUND,
                "not found; try /metrics, /healthz or /readyz\n",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::httpd::server::{Limits, serve};

    async fn get(address: std::net::SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
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
        let endpoint = Arc::new(Endpoint {
            metrics,
            readiness: readiness.clone(),
        });
        let counters = endpoint.metrics.listener("metrics");
        let server = tokio::spawn(serve(
            listener,
            Limits::default(),
            endpoint,
            counters,
            async {
                let _ = stopped.await;
            },
        ));

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
        readiness.mark_unanswered(Timestamp::now(), "no answer within 5s");
        let unanswered = get(address, "/readyz").await;
        assert!(unanswered.starts_with("HTTP/1.1 503"), "{unanswered}");
        assert!(
            unanswered.contains("not ready: the API server has not answered a Lease read since "),
            "{unanswered}"
        );
        assert!(
            unanswered.ends_with(": no answer within 5s\n"),
            "{unanswered}"
        );
        assert!(get(address, "/other").await.starts_with("HTTP/1.1 404"));

        stop.send(()).unwrap();
        server.await.unwrap();
    }
}

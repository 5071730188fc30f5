//! The simulated kubelet's HTTPS endpoint: `GET /containerLogs/{namespace}/{pod}/{container}`
//! with the kubelet's query ([`super::container_log::LogRequest`]), answered from the
//! [`LogBook`] — what the API server's `pods/log` subresource (`kubectl logs`) reaches on the
//! port the Node registers in `status.daemonEndpoints.kubeletEndpoint`. `follow` keeps the answer
//! open and sends each line as the simulator records it, until the pod leaves the node or the
//! client goes. TLS with a self-signed certificate for `127.0.0.1` made at start (the test
//! control plane's API servers do not verify the kubelet's certificate). A test tool: it serves
//! any client on loopback.

use std::convert::Infallible;
use std::sync::Arc;

use futures::StreamExt as _;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::jiff::Timestamp;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::container_log::LogRequest;
use super::error::NodeSimError;
use super::log_book::{ContainerId, LogBook, LogLookupError};
use flotilla::httpd::response::{Body, text};
use flotilla::httpd::server::Handler;
use flotilla::web::routes::percent_decode;

/// A TLS acceptor with a new self-signed certificate for `127.0.0.1` and `localhost`.
///
/// # Errors
/// [`NodeSimError::Tls`] when the certificate or the TLS configuration cannot be made.
pub fn self_signed_acceptor() -> Result<TlsAcceptor, NodeSimError> {
    let tls = |error: &dyn std::fmt::Display| NodeSimError::Tls(error.to_string());
    let key = rcgen::KeyPair::generate().map_err(|e| tls(&e))?;
    let certificate =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .and_then(|params| params.self_signed(&key))
            .map_err(|e| tls(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_no_client_auth()
        .with_single_cert(
            vec![certificate.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| tls(&e))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Answers the kubelet's log requests from a [`LogBook`].
pub struct LogServer {
    book: Arc<LogBook>,
}

impl LogServer {
    /// The server of `book`.
    #[must_use]
    pub fn new(book: Arc<LogBook>) -> Self {
        Self { book }
    }

    /// Serves TLS connections on `listener` with `acceptor` until `stop` completes.
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        acceptor: TlsAcceptor,
        stop: impl Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        loop {
            let accepted = tokio::select! {
                () = &mut stop => return,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "accepting a log connection");
                    continue;
                }
            };
            let (acceptor, server) = (acceptor.clone(), Arc::clone(&self));
            tokio::spawn(async move {
                let stream = match acceptor.accept(stream).await {
                    Ok(stream) => stream,
                    Err(error) => {
                        tracing::debug!(%error, "TLS handshake of a log connection");
                        return;
                    }
                };
                let service = service_fn(move |request: Request<Incoming>| {
                    let answer = server.handle(request);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                if let Err(error) = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(%error, "log connection");
                }
            });
        }
    }

    /// The answer to `GET /containerLogs/…` for `id` and `query`.
    fn container_logs(&self, id: ContainerId, query: &str) -> Response<Body> {
        let request = match LogRequest::parse(query) {
            Ok(request) => request,
            Err(error) => return text(StatusCode::BAD_REQUEST, format!("{error}\n")),
        };
        let lines = match self.book.lines(&id, request.previous) {
            Ok(lines) => lines,
            Err(error) => {
                let status = match error {
                    LogLookupError::NoPrevious { .. } => StatusCode::BAD_REQUEST,
                    _ => StatusCode::NOT_FOUND,
                };
                return text(status, format!("{error}\n"));
            }
        };
        let first = request.select(&lines, Timestamp::now());
        if !request.follow || request.previous {
            return text(StatusCode::OK, first);
        }
        let follow = Follow {
            book: Arc::clone(&self.book),
            changes: self.book.subscribe(),
            id,
            request,
            sent: lines.len(),
            first: Some(first),
        };
        let chunks = futures::stream::unfold(follow, Follow::next)
            .map(|chunk| Ok::<_, Infallible>(Frame::data(chunk)));
        let mut response = Response::new(StreamBody::new(chunks).boxed_unsync());
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(flotilla::httpd::response::TEXT),
        );
        response
    }
}

/// Where one followed log stands.
struct Follow {
    book: Arc<LogBook>,
    changes: watch::Receiver<()>,
    id: ContainerId,
    request: LogRequest,
    /// How many of the container's lines were sent (or skipped by the first answer).
    sent: usize,
    /// The first answer, not sent yet.
    first: Option<String>,
}

impl Follow {
    /// The next chunk: the first answer, then the lines printed since; `None` once the pod has
    /// left the node.
    async fn next(mut self) -> Option<(Bytes, Self)> {
        if let Some(first) = self.first.take() {
            return Some((Bytes::from(first), self));
        }
        loop {
            let lines = self.book.lines(&self.id, false).ok()?;
            if lines.len() > self.sent {
                let chunk = self.request.format(&lines[self.sent..]);
                self.sent = lines.len();
                return Some((Bytes::from(chunk), self));
            }
            self.changes.changed().await.ok()?;
        }
    }
}

impl Handler for LogServer {
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
        let query = request.uri().query().unwrap_or_default().to_owned();
        let parts: Vec<String> = request
            .uri()
            .path()
            .split('/')
            .map(percent_decode)
            .collect();
        let response = match parts.as_slice() {
            [empty, logs, namespace, pod, container]
                if empty.is_empty() && logs == "containerLogs" =>
            {
                let id = ContainerId {
                    namespace: namespace.clone(),
                    pod: pod.clone(),
                    container: container.clone(),
                };
                self.container_logs(id, &query)
            }
            _ => text(StatusCode::NOT_FOUND, "not found\n"),
        };
        Box::pin(async move { response })
    }
}

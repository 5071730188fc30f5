//! Serving one listener with hyper: at most [`Limits::max_connections`] connections at once
//! (the next is accepted when one closes; the kernel's backlog holds the rest), each with a
//! header-read timeout and an idle timeout ([`super::idle`]); methods the handler does not take
//! ([`Handler::methods`], GET and HEAD unless it says otherwise) get 405 before it sees them.

use std::sync::Arc;
use std::time::Duration;

use futures::Future;
use futures::future::BoxFuture;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::idle::IdleTimeout;
use super::response::{Body, method_not_allowed};

/// How long accepting pauses after it failed.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The bounds every connection is served within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// How long a client has to send a request's headers (and, on a kept-alive connection,
    /// to start the next request).
    pub header_read_timeout: Duration,
    /// How long a connection may move no bytes either way (a stream of events sends a comment
    /// more often than this).
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// What answers the requests of a listener (hyper leaves out the body of HEAD answers).
pub trait Handler: Send + Sync + 'static {
    /// The response to `request`, whose method is one of [`Handler::methods`].
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'static, Response<Body>>;

    /// The methods it answers: GET and HEAD (read-only endpoints), unless it says otherwise.
    fn methods(&self) -> &'static [Method] {
        &[Method::GET, Method::HEAD]
    }
}

/// Answers every connection on `listener` with `handler` within `limits` until `stop`
/// completes; connections already open finish on their own.
pub async fn serve(
    listener: TcpListener,
    limits: Limits,
    handler: Arc<dyn Handler>,
    stop: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = accept(&listener, &slots) => accepted,
        };
        let Some((stream, slot)) = accepted else {
            continue;
        };
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            let io = TokioIo::new(IdleTimeout::new(stream, limits.idle_timeout));
            let service = service_fn(move |request: Request<Incoming>| {
                let handler = Arc::clone(&handler);
                async move {
                    Ok::<_, std::convert::Infallible>(
                        if handler.methods().contains(request.method()) {
                            handler.handle(request).await
                        } else {
                            method_not_allowed(handler.methods())
                        },
                    )
                }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .serve_connection(io, service)
                .await;
            if let Err(error) = served {
                tracing::debug!("HTTP connection: {error}");
            }
            drop(slot);
        });
    }
}

/// The next connection, once a slot is free; `None` when accepting failed.
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> Option<(tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let slot = Arc::clone(slots).acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, _)) => Some((stream, slot)),
        Err(error) => {
            // Out of file descriptors, say: pause rather than spin on the error.
            tracing::warn!("accepting an HTTP connection: {error}");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;
    use crate::httpd::response::text;

    /// Answers with the path, and records the paths it answered.
    #[derive(Default)]
    struct Echo(Mutex<Vec<String>>);

    impl Handler for Echo {
        fn handle(&self, request: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
            let path = request.uri().path().to_owned();
            self.0.lock().unwrap().push(path.clone());
            Box::pin(async move { text(hyper::StatusCode::OK, path) })
        }
    }

    async fn start(limits: Limits) -> (std::net::SocketAddr, Arc<Echo>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let echo = Arc::new(Echo::default());
        let handler: Arc<dyn Handler> = echo.clone();
        tokio::spawn(serve(listener, limits, handler, futures::future::pending()));
        (address, echo)
    }

    /// Sends `request` on `stream` and reads one response (headers and `content-length` bytes).
    async fn exchange(stream: &mut TcpStream, request: &str) -> String {
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        let mut chunk = [0u8; 1024];
        loop {
            let read = stream.read(&mut chunk).await.unwrap();
            response.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&response).into_owned();
            let complete = text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
                head.lines()
                    .find_map(|line| line.strip_prefix("content-length: "))
                    .and_then(|length| length.parse::<usize>().ok())
                    .is_some_and(|length| body.len() >= length)
            });
            if read == 0 || complete {
                return text;
            }
        }
    }

    #[tokio::test]
    async fn only_get_and_head_reach_the_handler() {
        let (address, echo) = start(Limits::default()).await;
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"POST /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 405"), "{response}");
        assert!(response.contains("allow: GET, HEAD"), "{response}");
        let mut stream = TcpStream::connect(address).await.unwrap();
        let response = exchange(&mut stream, "GET /a HTTP/1.1\r\nhost: x\r\n\r\n").await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert_eq!(*echo.0.lock().unwrap(), ["/a"]);
    }

    #[tokio::test]
    async fn a_client_that_never_finishes_its_headers_is_dropped() {
        let limits = Limits {
            header_read_timeout: Duration::from_millis(200),
            ..Limits::default()
        };
        let (address, echo) = start(limits).await;
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET /slow HTTP/1.1\r\nhost:")
            .await
            .unwrap();
        let mut response = Vec::new();
        // Ends when the server closes the connection (an error or end of stream).
        let _ = stream.read_to_end(&mut response).await;
        let response = String::from_utf8_lossy(&response);
        assert!(!response.contains("200"), "{response}");
        assert!(echo.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn connections_beyond_the_bound_wait_for_a_free_slot() {
        let limits = Limits {
            max_connections: 1,
            ..Limits::default()
        };
        let (address, echo) = start(limits).await;
        let mut first = TcpStream::connect(address).await.unwrap();
        exchange(&mut first, "GET /1 HTTP/1.1\r\nhost: x\r\n\r\n").await;
        let mut second = TcpStream::connect(address).await.unwrap();
        second
            .write_all(b"GET /waiting HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        // The first connection keeps its slot: its next request is answered, the second's not.
        exchange(&mut first, "GET /2 HTTP/1.1\r\nhost: x\r\n\r\n").await;
        assert_eq!(*echo.0.lock().unwrap(), ["/1", "/2"]);
        drop(first);
        let mut response = String::new();
        second.read_to_string(&mut response).await.unwrap();
        assert!(response.ends_with("/waiting"), "{response}");
        assert_eq!(*echo.0.lock().unwrap(), ["/1", "/2", "/waiting"]);
    }
}

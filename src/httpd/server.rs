//! Serving one listener with hyper: at most [`Limits::max_connections`] connections at once,
//! each with a header-read timeout and an idle timeout ([`super::idle`]); methods the handler
//! does not take ([`Handler::methods`], GET and HEAD unless it says otherwise) get 405 before it
//! sees them. A connection that finds every slot taken waits up to [`Limits::queue_wait`] for
//! one, with at most as many waiting as there are slots; one still waiting then is answered 503
//! with `Retry-After`, and one that finds the queue full is closed unanswered. A flood therefore
//! costs a bounded number of tasks and sockets, and every refusal is counted
//! ([`ListenerCounters`]).

use std::sync::Arc;
use std::time::Duration;

use futures::Future;
use futures::future::BoxFuture;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::idle::IdleTimeout;
use super::listener_counters::{ListenerCounters, Refusal};
use super::response::{Body, method_not_allowed};

/// How long accepting pauses after it failed.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How long a refused connection's request is read (and thrown away) after the 503, so that
/// closing it does not reset the answer away before the client reads it.
const REFUSAL_DRAIN: Duration = Duration::from_secs(1);

/// The answer to a connection that waited for a slot in vain.
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 47\r\n\r\n\
every connection slot is taken: try again later";

/// The bounds every connection is served within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once (and, apart from them, waiting for a slot).
    pub max_connections: usize,
    /// How long a connection waits for a slot before it is answered 503.
    pub queue_wait: Duration,
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
            queue_wait: Duration::from_secs(2),
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

/// Answers every connection on `listener` with `handler` within `limits`, counting in
/// `counters`, until `stop` completes; connections already open finish on their own.
pub async fn serve(
    listener: TcpListener,
    limits: Limits,
    handler: Arc<dyn Handler>,
    counters: ListenerCounters,
    stop: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let queue = Arc::new(Semaphore::new(limits.max_connections));
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors, say: pause rather than spin on the error.
                tracing::warn!("accepting an HTTP connection: {error}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let Ok(waiting) = Arc::clone(&queue).try_acquire_owned() else {
            counters.refused(Refusal::Dropped);
            continue;
        };
        let (slots, handler, counters) =
            (Arc::clone(&slots), Arc::clone(&handler), counters.clone());
        tokio::spawn(async move {
            let slot = tokio::time::timeout(limits.queue_wait, slots.acquire_owned()).await;
            match slot {
                Ok(Ok(slot)) => {
                    drop(waiting);
                    answer(stream, slot, limits, handler, counters).await;
                }
                _ => {
                    counters.refused(Refusal::Busy);
                    refuse(stream).await;
                    drop(waiting);
                }
            }
        });
    }
}

/// Serves the requests of `stream` in its `slot`.
async fn answer(
    stream: TcpStream,
    slot: OwnedSemaphorePermit,
    limits: Limits,
    handler: Arc<dyn Handler>,
    counters: ListenerCounters,
) {
    counters.opened();
    let io = TokioIo::new(IdleTimeout::new(stream, limits.idle_timeout));
    let service = service_fn(move |request: Request<Incoming>| {
        let handler = Arc::clone(&handler);
        async move {
            Ok::<_, std::convert::Infallible>(if handler.methods().contains(request.method()) {
                handler.handle(request).await
            } else {
                method_not_allowed(handler.methods())
            })
        }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(io, service)
        .await;
    if let Err(error) = served {
        if error.is_timeout() {
            counters.refused(Refusal::HeaderTimeout);
        }
        tracing::debug!("HTTP connection: {error}");
    }
    counters.closed();
    drop(slot);
}

/// Answers `stream` 503 and closes it, after reading what the client sent for a moment.
async fn refuse(mut stream: TcpStream) {
    if stream.write_all(BUSY).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(REFUSAL_DRAIN, async {
        while matches!(stream.read(&mut sink).await, Ok(read) if read > 0) {}
    })
    .await;
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

    async fn start(limits: Limits) -> (std::net::SocketAddr, Arc<Echo>, ListenerCounters) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let echo = Arc::new(Echo::default());
        let handler: Arc<dyn Handler> = echo.clone();
        let counters = ListenerCounters::unregistered("test");
        tokio::spawn(serve(
            listener,
            limits,
            handler,
            counters.clone(),
            futures::future::pending(),
        ));
        (address, echo, counters)
    }

    /// Waits until `counters` counted `count` refusals for `why`.
    async fn refused(counters: &ListenerCounters, why: Refusal, count: u64) {
        for _ in 0..500 {
            if counters.refusals(why) == count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{} refusals {why:?}, not {count}", counters.refusals(why));
    }

    /// A server of one slot, waiting `queue_wait` for it: the slot held by a kept-alive
    /// connection answered `/1` (returned first), and a second connection that sent
    /// `GET path` with `connection: close`.
    struct OneSlotTaken {
        address: std::net::SocketAddr,
        echo: Arc<Echo>,
        counters: ListenerCounters,
        first: TcpStream,
        second: TcpStream,
    }

    async fn one_slot_taken(queue_wait: Duration, path: &str) -> OneSlotTaken {
        let limits = Limits {
            max_connections: 1,
            queue_wait,
            ..Limits::default()
        };
        let (address, echo, counters) = start(limits).await;
        let mut first = TcpStream::connect(address).await.unwrap();
        exchange(&mut first, "GET /1 HTTP/1.1\r\nhost: x\r\n\r\n").await;
        let mut second = TcpStream::connect(address).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        second.write_all(request.as_bytes()).await.unwrap();
        OneSlotTaken {
            address,
            echo,
            counters,
            first,
            second,
        }
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
        let (address, echo, _) = start(Limits::default()).await;
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
        let (address, echo, counters) = start(limits).await;
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
        refused(&counters, Refusal::HeaderTimeout, 1).await;
        assert_eq!(counters.open(), 0, "its slot is given back");
    }

    #[tokio::test]
    async fn connections_beyond_the_bound_wait_for_a_free_slot() {
        let OneSlotTaken {
            echo,
            counters,
            mut first,
            mut second,
            ..
        } = one_slot_taken(Limits::default().queue_wait, "/waiting").await;
        // The first connection keeps its slot: its next request is answered, the second's not.
        exchange(&mut first, "GET /2 HTTP/1.1\r\nhost: x\r\n\r\n").await;
        assert_eq!(*echo.0.lock().unwrap(), ["/1", "/2"]);
        drop(first);
        let mut response = String::new();
        second.read_to_string(&mut response).await.unwrap();
        assert!(response.ends_with("/waiting"), "{response}");
        assert_eq!(*echo.0.lock().unwrap(), ["/1", "/2", "/waiting"]);
        assert_eq!(counters.refusals(Refusal::Busy), 0);
    }

    #[tokio::test]
    async fn a_connection_still_waiting_after_the_queue_wait_is_answered_503_and_counted() {
        let OneSlotTaken {
            echo,
            counters,
            first: _first,
            mut second,
            ..
        } = one_slot_taken(Duration::from_millis(100), "/refused").await;
        let mut response = String::new();
        second.read_to_string(&mut response).await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{response}"
        );
        assert!(response.contains("\r\nretry-after: 1\r\n"), "{response}");
        assert!(response.ends_with("try again later"), "{response}");
        assert_eq!(counters.refusals(Refusal::Busy), 1);
        assert_eq!(counters.open(), 1, "the first connection keeps its slot");
        assert_eq!(*echo.0.lock().unwrap(), ["/1"]);
    }

    #[tokio::test]
    async fn a_connection_that_finds_the_queue_full_is_closed_unanswered_and_counted() {
        let OneSlotTaken {
            address,
            echo,
            counters,
            first,
            second: mut queued,
        } = one_slot_taken(Duration::from_secs(30), "/queued").await;
        let mut third = TcpStream::connect(address).await.unwrap();
        let mut response = Vec::new();
        let _ = third.read_to_end(&mut response).await;
        assert!(
            response.is_empty(),
            "{}",
            String::from_utf8_lossy(&response)
        );
        refused(&counters, Refusal::Dropped, 1).await;
        drop(first);
        let mut response = String::new();
        queued.read_to_string(&mut response).await.unwrap();
        assert!(response.ends_with("/queued"), "{response}");
        assert_eq!(*echo.0.lock().unwrap(), ["/1", "/queued"]);
    }
}

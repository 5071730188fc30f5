//! A stream of server-sent events made for one viewer (an object's Events, a pod's log): a
//! comment every [`HEARTBEAT`] when nothing else was sent, so the connection stays under the
//! server's idle timeout and a viewer who left is noticed at the next write — which drops the
//! stream and the read behind it — and one of a bounded number of permits ([`Follows`]) held
//! for as long as it runs.

use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::{Bytes, Frame};
use hyper::header::{self, HeaderValue};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::events::HEARTBEAT;
use crate::httpd::response::Body;

/// How many streams made for viewers may run at once.
pub struct Follows(Arc<Semaphore>);

impl Follows {
    /// At most `max` at once.
    #[must_use]
    pub fn new(max: usize) -> Self {
        Self(Arc::new(Semaphore::new(max)))
    }

    /// A permit to start one; `None` when every permit is held by a running stream.
    #[must_use]
    pub fn start(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.0).try_acquire_owned().ok()
    }
}

/// Where one viewer's stream stands.
struct Live {
    chunks: BoxStream<'static, Bytes>,
    _permit: OwnedSemaphorePermit,
}

impl Live {
    /// The next chunk, or a heartbeat after [`HEARTBEAT`] without one; `None` when the stream
    /// ended.
    async fn next(mut self) -> Option<(Bytes, Self)> {
        match tokio::time::timeout(HEARTBEAT, self.chunks.next()).await {
            Ok(Some(chunk)) => Some((chunk, self)),
            Ok(None) => None,
            Err(_) => Some((Bytes::from_static(b": alive\n\n"), self)),
        }
    }
}

/// The `text/event-stream` answer sending `chunks`, holding `permit` until it ends or the
/// viewer leaves. Never stored by a cache.
pub fn response(
    chunks: impl Stream<Item = Bytes> + Send + 'static,
    permit: OwnedSemaphorePermit,
) -> Response<Body> {
    let live = Live {
        chunks: chunks.boxed(),
        _permit: permit,
    };
    event_stream(futures::stream::unfold(live, Live::next), "no-store")
}

/// The `text/event-stream` answer sending `chunks`, with `cache_control`.
pub fn event_stream(
    chunks: impl Stream<Item = Bytes> + Send + 'static,
    cache_control: &'static str,
) -> Response<Body> {
    let frames = chunks.map(|chunk| Ok(Frame::data(chunk)));
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn permits_are_bounded_and_given_back_when_a_stream_ends() {
        let follows = Follows::new(1);
        let permit = follows.start().unwrap();
        assert!(follows.start().is_none());
        let answer = response(
            futures::stream::iter([Bytes::from_static(b"event: end\ndata: \n\n")]),
            permit,
        );
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"event: end\ndata: \n\n");
        assert!(follows.start().is_some());
    }
}

//! Until when this replica may act, as the Lease loop last established it, shared with everything
//! that must stop when it passes: the controller loop (which cancels the reconcilers) and the
//! [`WriteGate`] on the controller's clients, which refuses every write (POST, PUT, PATCH,
//! DELETE) outside that time, so no write leaves after the renew deadline even from a task that
//! has not been cancelled yet. Reads always pass. The gate asks a [`WritePermit`]: the
//! leadership here, or a sharded replica's ownership (`super::ownership`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::sync::watch;

use crate::cluster::api_server::api_limits::ApiLimits;
use crate::cluster::destinations::clients::Connect;

/// The current leadership deadline (None: not leading), set by the Lease loop.
#[derive(Clone, Debug)]
pub struct Leadership(watch::Sender<Option<Instant>>);

impl Default for Leadership {
    fn default() -> Self {
        Self(watch::Sender::new(None))
    }
}

impl Leadership {
    /// Records the deadline the Lease loop established.
    pub fn set(&self, until: Option<Instant>) {
        self.0.send_replace(until);
    }

    /// Whether this replica may act now.
    #[must_use]
    pub fn is_leading(&self) -> bool {
        self.0.borrow().is_some_and(|until| Instant::now() < until)
    }

    /// Completes once this replica may act.
    pub async fn acquired(&self) {
        let mut deadline = self.0.subscribe();
        while !self.is_leading() {
            // The sender lives in `self`, so `changed` only fails if it was dropped.
            if deadline.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Completes once this replica may no longer act: its deadline passed without a renewal, or
    /// the Lease loop found it lost.
    pub async fn lost(&self) {
        let mut deadline = self.0.subscribe();
        loop {
            let until = *deadline.borrow_and_update();
            match until {
                Some(until) if Instant::now() < until => {
                    tokio::select! {
                        () = tokio::time::sleep_until(until.into()) => {}
                        _ = deadline.changed() => {}
                    }
                }
                _ => return,
            }
        }
    }

    /// A layer for kube clients that lets writes through only while leading.
    #[must_use]
    pub fn gate(&self) -> WriteGateLayer<Self> {
        WriteGateLayer(self.clone())
    }

    /// Makes clients whose writes pass the gate, within `limits`: the controller's own, and
    /// each destination's.
    #[must_use]
    pub fn connect(&self, limits: &ApiLimits) -> Connect {
        gated_connect(self.clone(), limits)
    }
}

impl WritePermit for Leadership {
    fn permits(&self, _path: &str) -> Result<(), tower::BoxError> {
        if self.is_leading() {
            Ok(())
        } else {
            Err(NotLeading.into())
        }
    }
}

/// Who may write what now, asked by the [`WriteGate`] before each write leaves.
pub trait WritePermit: Clone + Send + Sync + 'static {
    /// Whether a write to the API path `path` may be sent now.
    ///
    /// # Errors
    /// Why not.
    fn permits(&self, path: &str) -> Result<(), tower::BoxError>;
}

/// Makes clients (the controller's own, and each destination's) whose writes pass `permit`,
/// within `limits` (each attempt of a retried write passes the gate again).
#[must_use]
pub fn gated_connect<P: WritePermit>(permit: P, limits: &ApiLimits) -> Connect {
    let gate = WriteGateLayer(permit);
    let limits = limits.clone();
    Arc::new(move |config| limits.client(config, &gate))
}

/// A write refused because this replica does not lead.
#[derive(Debug, thiserror::Error)]
#[error("not written: this replica no longer holds the leader Lease")]
pub struct NotLeading;

/// Wraps a client's HTTP service in a [`WriteGate`].
#[derive(Clone, Debug)]
pub struct WriteGateLayer<P>(P);

impl<S, P: WritePermit> tower::Layer<S> for WriteGateLayer<P> {
    type Service = WriteGate<S, P>;

    fn layer(&self, inner: S) -> WriteGate<S, P> {
        WriteGate {
            inner,
            permit: self.0.clone(),
        }
    }
}

/// Refuses writes, before they are sent, that its permit does not allow.
#[derive(Clone, Debug)]
pub struct WriteGate<S, P> {
    inner: S,
    permit: P,
}

/// The future of a gated call.
type Gated<R> = Pin<Box<dyn Future<Output = Result<R, tower::BoxError>> + Send>>;

impl<S, B, P: WritePermit> tower::Service<http::Request<B>> for WriteGate<S, P>
where
    S: tower::Service<http::Request<B>>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = tower::BoxError;
    type Future = Gated<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let reads = [http::Method::GET, http::Method::HEAD, http::Method::OPTIONS];
        if !reads.contains(request.method())
            && let Err(refused) = self.permit.permits(request.uri().path())
        {
            return Box::pin(std::future::ready(Err(refused)));
        }
        let call = self.inner.call(request);
        Box::pin(async move { call.await.map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tower::{Layer as _, Service as _, ServiceExt as _};

    use super::*;

    type Answer = std::future::Ready<Result<http::Method, std::convert::Infallible>>;
    type Echo = tower::util::ServiceFn<fn(http::Request<()>) -> Answer>;

    /// Answers every request with its method.
    fn echo(request: http::Request<()>) -> Answer {
        std::future::ready(Ok(request.method().clone()))
    }

    async fn send(
        gate: &mut WriteGate<Echo, Leadership>,
        method: http::Method,
    ) -> Result<http::Method, String> {
        let request = http::Request::builder().method(method).body(()).unwrap();
        gate.ready().await.unwrap();
        gate.call(request).await.map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn writes_pass_only_before_the_deadline_and_reads_always() {
        let leadership = Leadership::default();
        let mut gate = leadership
            .gate()
            .layer(tower::service_fn(echo as fn(_) -> _));
        let refused = Err(NotLeading.to_string());
        assert_eq!(
            send(&mut gate, http::Method::GET).await,
            Ok(http::Method::GET)
        );
        assert_eq!(send(&mut gate, http::Method::PATCH).await, refused);
        leadership.set(Some(Instant::now() + Duration::from_secs(60)));
        for method in [http::Method::POST, http::Method::PUT, http::Method::DELETE] {
            assert_eq!(send(&mut gate, method.clone()).await, Ok(method));
        }
        leadership.set(Some(Instant::now()));
        assert_eq!(send(&mut gate, http::Method::POST).await, refused);
        assert_eq!(
            send(&mut gate, http::Method::GET).await,
            Ok(http::Method::GET)
        );
    }

    #[tokio::test]
    async fn lost_completes_when_the_deadline_passes_or_leadership_is_withdrawn() {
        let leadership = Leadership::default();
        leadership.lost().await;
        leadership.set(Some(Instant::now() + Duration::from_millis(50)));
        leadership.acquired().await;
        assert!(leadership.is_leading());
        leadership.lost().await;
        assert!(!leadership.is_leading());
        leadership.set(Some(Instant::now() + Duration::from_secs(3600)));
        let withdrawn = leadership.clone();
        let lost = tokio::spawn(async move { withdrawn.lost().await });
        leadership.set(None);
        lost.await.unwrap();
    }
}

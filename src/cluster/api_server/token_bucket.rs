//! The client-side rate limit of the requests to one API server, as client-go's: a token bucket
//! holding at most `burst` tokens, refilled at `qps` a second; each request (each retry too)
//! takes one, and waits for it when there is none. Waits are reservations, so requests leave in
//! the order they asked and a burst of them is spread out rather than refused. (What leaves is
//! counted by [`super::k8s_requests`], inside this layer.)

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// Requests a second and the burst allowed above it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Tokens added a second (> 0).
    pub qps: f64,
    /// The most tokens the bucket holds (>= 1).
    pub burst: u32,
}

/// A bucket shared by the clones of its layer and services.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: Rate,
    state: Arc<Mutex<Fill>>,
}

/// The tokens at `at` (negative: reserved by requests waiting).
#[derive(Debug)]
struct Fill {
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket.
    #[must_use]
    pub fn new(rate: Rate) -> Self {
        Self {
            rate,
            state: Arc::new(Mutex::new(Fill {
                tokens: f64::from(rate.burst),
                at: Instant::now(),
            })),
        }
    }

    /// Takes a token and says how long to wait before it is there (zero: at once).
    #[must_use]
    pub fn reserve(&self) -> Duration {
        let mut fill = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let refilled = fill.tokens + now.duration_since(fill.at).as_secs_f64() * self.rate.qps;
        fill.tokens = refilled.min(f64::from(self.rate.burst)) - 1.0;
        fill.at = now;
        if fill.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-fill.tokens / self.rate.qps)
        }
    }
}

/// Wraps a client's HTTP service in a [`RateLimited`] sharing one bucket.
#[derive(Clone, Debug)]
pub struct RateLimitLayer {
    bucket: TokenBucket,
}

impl RateLimitLayer {
    /// A layer taking from `bucket`.
    #[must_use]
    pub fn new(bucket: TokenBucket) -> Self {
        Self { bucket }
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited {
            inner,
            bucket: self.bucket.clone(),
        }
    }
}

/// Sends each request once the bucket has a token for it.
#[derive(Clone, Debug)]
pub struct RateLimited<S> {
    inner: S,
    bucket: TokenBucket,
}

/// The future of a rate-limited call.
type Limited<R> = Pin<Box<dyn Future<Output = Result<R, tower::BoxError>> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for RateLimited<S>
where
    S: tower::Service<http::Request<B>> + Clone + Send + 'static,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = tower::BoxError;
    type Future = Limited<S::Response>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner service is made ready when the token is there, not before.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let wait = self.bucket.reserve();
        // The clone that was not polled ready takes the call (tower's recipe for services that
        // are called from a future).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let ready = tower::ServiceExt::ready(&mut inner)
                .await
                .map_err(Into::into)?;
            ready.call(request).await.map_err(Into::into)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(qps: f64, burst: u32) -> TokenBucket {
        TokenBucket::new(Rate { qps, burst })
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_leaves_at_once_and_the_rest_at_the_rate() {
        let bucket = bucket(10.0, 3);
        let waits: Vec<Duration> = (0..6).map(|_| bucket.reserve()).collect();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(
            waits,
            [ms(0), ms(0), ms(0), ms(100), ms(200), ms(300)],
            "the burst, then one every 1/qps, in the order asked"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        let refilled: Vec<Duration> = (0..4).map(|_| bucket.reserve()).collect();
        assert_eq!(
            refilled,
            [ms(0), ms(0), ms(0), ms(100)],
            "an idle bucket refills to the burst, never above"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn requests_wait_for_their_token_in_the_order_sent() {
        use tower::{Layer as _, ServiceExt as _};

        let layer = RateLimitLayer::new(bucket(2.0, 1));
        let echo = tower::service_fn(|request: http::Request<()>| async move {
            Ok::<_, std::convert::Infallible>(request.uri().path().to_owned())
        });
        let service = layer.layer(echo);
        let started = Instant::now();
        let mut answers = Vec::new();
        for path in ["/a", "/b", "/c"] {
            let request = http::Request::builder().uri(path).body(()).unwrap();
            answers.push(service.clone().oneshot(request).await.unwrap());
        }
        assert_eq!(answers, ["/a", "/b", "/c"]);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(1),
            "two waits of 1/2 s"
        );
    }
}

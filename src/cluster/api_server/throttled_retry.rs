//! When an API server answers 429 Too Many Requests (API Priority and Fairness rejecting the
//! controller's flow, or another limit), 503 or 504, the request is sent again after the
//! `Retry-After` the server asked for (in seconds), or an exponential backoff when that is
//! longer or missing, with jitter so throttled requests do not return together. Bounded for a
//! controller: at most [`MAX_RETRIES`] retries and [`MAX_WAIT`] of waiting per request; past
//! either, or when the server asks for a longer wait than is left, the refusal goes back to the
//! caller, whose reconcile fails and is requeued with its own backoff, instead of holding a
//! worker for minutes (kube's default policy waits up to 1000 s between 15 retries). Each retry
//! is counted per server ([`retries`], exported as `flotilla_api_retries_total`) and logged at
//! debug; the responses themselves, 429s included, are counted by [`super::k8s_requests`].

use std::hash::BuildHasher as _;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// The server a retry went to.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerLabels {
    server: String,
}

/// The retries of this process, per API server (registered as `flotilla_api_retries`): kept
/// process-wide, as the clients that retry are made in many places.
#[must_use]
pub fn retries() -> Family<ServerLabels, Counter> {
    static RETRIES: OnceLock<Family<ServerLabels, Counter>> = OnceLock::new();
    RETRIES.get_or_init(Family::default).clone()
}

/// The retry counter of the API server at `server` (its URL).
#[must_use]
pub fn retries_of(server: &str) -> Counter {
    retries()
        .get_or_create(&ServerLabels {
            server: server.to_owned(),
        })
        .clone()
}

/// The most retries of one request (client-go's too).
pub const MAX_RETRIES: u32 = 10;
/// The most time one request spends waiting to be sent again.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The first backoff when the server sets no `Retry-After`; doubled on each retry.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest backoff between two tries.
const LONGEST_BACKOFF: Duration = Duration::from_secs(5);

/// The retry policy of one request to one server (cloned for each request by tower's `Retry`).
#[derive(Clone, Debug)]
pub struct ThrottledRetry {
    server: Arc<str>,
    counted: Counter,
    retries: u32,
    waited: Duration,
}

impl ThrottledRetry {
    /// The policy of requests to `server`.
    #[must_use]
    pub fn new(server: &str) -> Self {
        Self {
            server: server.into(),
            counted: retries_of(server),
            retries: 0,
            waited: Duration::ZERO,
        }
    }

    /// How long to wait before sending again after a response `status` with `Retry-After`
    /// `retry_after`, or None to give the response to the caller.
    fn wait(&self, status: StatusCode, retry_after: Option<Duration>) -> Option<Duration> {
        let retried = [
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::GATEWAY_TIMEOUT,
        ];
        if !retried.contains(&status) || self.retries >= MAX_RETRIES {
            return None;
        }
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << self.retries.min(16))
            .min(LONGEST_BACKOFF);
        let wait = retry_after.unwrap_or_default().max(backoff);
        let jitter = std::hash::RandomState::new().hash_one(self.retries) % 1000;
        let wait = wait + wait / 4 * u32::try_from(jitter).unwrap_or(0) / 1000;
        (self.waited + wait <= MAX_WAIT).then_some(wait)
    }
}

/// The `Retry-After` of `response` in seconds, as API servers send it.
fn retry_after<B>(response: &Response<B>) -> Option<Duration> {
    let value = response.headers().get(http::header::RETRY_AFTER)?;
    let seconds: u64 = value.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

impl<B> tower::retry::Policy<Request<Body>, Response<B>, tower::BoxError> for ThrottledRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        request: &mut Request<Body>,
        result: &mut Result<Response<B>, tower::BoxError>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        let status = response.status();
        let asked = retry_after(response);
        let Some(wait) = self.wait(status, asked) else {
            if status == StatusCode::TOO_MANY_REQUESTS {
                tracing::debug!(server = %self.server, method = %request.method(), path = request.uri().path(),
                    retries = self.retries, "throttled: not retried again, the caller gets the refusal");
            }
            return None;
        };
        self.retries += 1;
        self.waited += wait;
        self.counted.inc();
        tracing::debug!(server = %self.server, method = %request.method(), path = request.uri().path(),
            status = status.as_u16(), retry_after = ?asked, wait = ?wait, retry = self.retries,
            "the API server refused a request; sending it again");
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &Request<Body>) -> Option<Request<Body>> {
        let body = request.body().try_clone()?;
        let mut copy = Request::builder()
            .method(request.method().clone())
            .uri(request.uri().clone())
            .version(request.version())
            .body(body)
            .ok()?;
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use tower::retry::Policy as _;

    use super::*;

    fn policy() -> ThrottledRetry {
        ThrottledRetry::new("https://retry.test/")
    }

    fn answer(status: u16, retry_after: Option<&str>) -> Result<Response<()>, tower::BoxError> {
        let mut response = Response::builder().status(status);
        if let Some(seconds) = retry_after {
            response = response.header("Retry-After", seconds);
        }
        Ok(response.body(()).unwrap())
    }

    /// The waits `policy` asks for, answered `status` (with `retry_after`) every time, until
    /// it gives up.
    fn waits(status: u16, retry_after: Option<&str>) -> Vec<Duration> {
        let mut policy = policy();
        let mut request = Request::new(Body::empty());
        let mut waits = Vec::new();
        let start = tokio::time::Instant::now();
        while let Some(sleep) = policy.retry(&mut request, &mut answer(status, retry_after)) {
            waits.push(sleep.deadline() - start);
        }
        waits
    }

    /// Each of `waits` is the longer of `retry_after` and the retry's backoff, plus at most a
    /// quarter of jitter, and all of them stay within the bounds.
    fn assert_bounded(waits: &[Duration], retry_after: Duration) {
        for (n, wait) in waits.iter().enumerate() {
            let backoff = (FIRST_BACKOFF * (1 << n)).min(LONGEST_BACKOFF);
            let base = backoff.max(retry_after);
            assert!(
                *wait >= base && *wait <= base + base / 4,
                "retry {n}: {wait:?} in {waits:?}"
            );
        }
        assert!(waits.len() <= MAX_RETRIES as usize, "{waits:?}");
        assert!(waits.iter().sum::<Duration>() <= MAX_WAIT, "{waits:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn honours_retry_after_within_the_bounds() {
        let after_two = waits(429, Some("2"));
        assert_bounded(&after_two, Duration::from_secs(2));
        assert!(after_two.len() >= 5, "{after_two:?}");
        assert_eq!(
            waits(429, Some("60")),
            Vec::<Duration>::new(),
            "a server asking for more than the bound gets its refusal returned at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn backs_off_exponentially_without_retry_after_and_stops_at_the_bounds() {
        let waits = waits(503, None);
        assert_bounded(&waits, Duration::ZERO);
        assert!(waits.len() >= 8, "{waits:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn counts_its_retries_and_retries_only_what_may_succeed_later() {
        let mut policy = ThrottledRetry::new("https://counted-retry.test/");
        let mut request = Request::new(Body::empty());
        assert!(
            policy
                .retry(&mut request, &mut answer(429, Some("1")))
                .is_some()
        );
        assert!(policy.retry(&mut request, &mut answer(404, None)).is_none());
        assert!(policy.retry(&mut request, &mut answer(200, None)).is_none());
        assert!(
            policy
                .retry(&mut request, &mut answer(429, Some("600")))
                .is_none()
        );
        assert_eq!(retries_of("https://counted-retry.test/").get(), 1);
    }

    #[test]
    fn copies_the_request_for_a_retry() {
        let request = Request::builder()
            .method("PATCH")
            .uri("/api/v1/namespaces/a/configmaps/b")
            .header("content-type", "application/apply-patch+yaml")
            .body(Body::from(b"{}".to_vec()))
            .unwrap();
        let copy = tower::retry::Policy::<_, Response<()>, tower::BoxError>::clone_request(
            &mut policy(),
            &request,
        )
        .expect("a body in memory is copied");
        assert_eq!(copy.method(), request.method());
        assert_eq!(copy.uri(), request.uri());
        assert_eq!(copy.headers(), request.headers());
    }
}

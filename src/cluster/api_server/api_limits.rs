//! The controller's clients to an API server, as a controller should talk to one: each request
//! waits for a token of the server's [`TokenBucket`] (one per server, shared by the clients made
//! from one [`ApiLimits`]), passes the client's gate (the leader's write gate), and a refusal
//! 429/503/504 is sent again by [`ThrottledRetry`] within its bounds. Every attempt sent is
//! counted by [`super::k8s_requests`] (its response code tells the 429s), every retry by
//! [`super::throttled_retry::retries`]. kube's own retry (up to 15 retries, up to 1000 s apart) is
//! turned off in their place.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use http::{Request, Response};
use kube::Client;
use kube::client::{Body, ClientBuilder, DynBody};

use super::throttled_retry::ThrottledRetry;
use super::token_bucket::{Rate, RateLimitLayer, TokenBucket};

/// Argo CD's defaults for its clients (`ARGOCD_K8S_CLIENT_QPS`, `ARGOCD_K8S_CLIENT_BURST`).
pub const DEFAULT_RATE: Rate = Rate {
    qps: 50.0,
    burst: 100,
};

/// How many requests wait in a client's queue before callers wait to enqueue (kube's own).
const QUEUED: usize = 1024;

/// kube's HTTP service, queued so that the layers above it can be cloned per request.
pub type Queued = tower::buffer::Buffer<
    Request<Body>,
    std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<Response<Box<DynBody>>, tower::BoxError>>
                + Send,
        >,
    >,
>;

/// The rate and one bucket per API server, for the clients made from it.
#[derive(Clone, Debug)]
pub struct ApiLimits {
    rate: Rate,
    buckets: Arc<Mutex<BTreeMap<String, TokenBucket>>>,
}

impl Default for ApiLimits {
    fn default() -> Self {
        Self::new(DEFAULT_RATE)
    }
}

impl ApiLimits {
    /// Limits of `rate` per API server.
    #[must_use]
    pub fn new(rate: Rate) -> Self {
        Self {
            rate,
            buckets: Arc::default(),
        }
    }

    /// The bucket of `server`, made on first use.
    fn bucket(&self, server: &str) -> TokenBucket {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        buckets
            .entry(server.to_owned())
            .or_insert_with(|| TokenBucket::new(self.rate))
            .clone()
    }

    /// A client for `config` whose requests pass `gate` (`tower::layer::util::Identity` for
    /// none) after waiting for their token, retried when throttled.
    ///
    /// # Errors
    /// Unusable connection settings (TLS, credentials).
    pub fn client<L>(&self, mut config: kube::Config, gate: &L) -> Result<Client, kube::Error>
    where
        L: tower::Layer<Queued>,
        L::Service: tower::Service<
                Request<Body>,
                Response = Response<Box<DynBody>>,
                Error = tower::BoxError,
            > + Clone
            + Send
            + 'static,
        <L::Service as tower::Service<Request<Body>>>::Future: Send + 'static,
    {
        let server = config.cluster_url.to_string();
        config.default_retry = false;
        let limit = RateLimitLayer::new(self.bucket(&server));
        let retry = tower::retry::RetryLayer::new(ThrottledRetry::new(&server));
        let counted = super::k8s_requests::CountRequestsLayer::new(&server);
        Ok(ClientBuilder::try_from(config)?
            // Innermost: every attempt sent is counted (Argo CD's argocd_app_k8s_request_total).
            .with_layer(&counted)
            .with_layer(&tower::buffer::BufferLayer::new(QUEUED))
            .with_layer(gate)
            .with_layer(&limit)
            .with_layer(&retry)
            .build())
    }
}

//! The receiver's [`Handler`]: `POST /api/webhook` (Argo CD's path) with a body of at most
//! [`MAX_BODY`] bytes is told by its headers ([`Provider::identify`]), verified
//! ([`verify`]), read as a push ([`push`]) and announced ([`Refresher::refresh`]; its
//! Applications through the [`RefreshQueue`]), or read as a
//! pull-request event ([`pull_request`]) and announced to the ApplicationSets listing that
//! repository's pull requests ([`Refresher::refresh_pull_requests`]) when its action may change
//! what they list. Every request is counted in
//! `flotilla_webhook_requests_total{provider, result}`; the answer says what was done or why
//! nothing was: 200 `ignored` for a pull-request action that changes no list (an assignment, a
//! review), 413 for a body over the limit, 400 for a request of no known provider, an event
//! other than a push, a pull-request event or a ping, or a payload naming no repository, 401
//! for a missing or wrong signature or token (or no secret configured), 503 when the Secret or
//! the API cannot be read or the queue is full.

use std::sync::Arc;

use futures::future::BoxFuture;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};

use super::payload::push;
use super::provider::{Event, Provider};
use super::pull_request_event::pull_request;
use super::pushed_refs::PushedRefs;
use super::refresh::Refresher;
use super::refresh_queue::{CAPACITY, RefreshQueue};
use super::secrets::WebhookSecretSource;
use super::signature::verify;
use crate::controller::runtime::metrics::Metrics;
use crate::httpd::response::{Body, text};
use crate::httpd::server::Handler;

/// The largest body taken: 1 MiB (a push of many commits stays well below it).
pub const MAX_BODY: usize = 1024 * 1024;

/// The path webhooks are sent to.
pub const PATH: &str = "/api/webhook";

/// The webhook receiver.
pub struct WebhookReceiver(Arc<Receiving>);

/// What the receiver reads and writes, shared by its requests.
struct Receiving {
    secrets: WebhookSecretSource,
    refresher: Refresher,
    queue: RefreshQueue,
    metrics: Arc<Metrics>,
}

impl WebhookReceiver {
    /// Verifies with `secrets`, announces pushes with `refresher` (starting the task that
    /// annotates their Applications), counts in `metrics`.
    #[must_use]
    pub fn new(secrets: WebhookSecretSource, refresher: Refresher, metrics: Arc<Metrics>) -> Self {
        let queue = RefreshQueue::start(refresher.clone(), Arc::clone(&metrics));
        Self(Arc::new(Receiving {
            secrets,
            refresher,
            queue,
            metrics,
        }))
    }

    /// Starts the watch of the Secret now, so that the first webhook does not wait for it.
    pub async fn watch_secrets(&self) {
        if let Err(error) = self.0.secrets.current().await {
            tracing::warn!("webhooks are refused until it is read: {error}");
        }
    }
}

/// How a request ended: its status, its `result` label and the answer's text.
struct Outcome {
    status: StatusCode,
    result: &'static str,
    message: String,
}

impl Outcome {
    fn new(status: StatusCode, result: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            result,
            message: message.into(),
        }
    }
}

impl Handler for WebhookReceiver {
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
        let receiver = Arc::clone(&self.0);
        Box::pin(async move {
            if request.uri().path() != PATH {
                return text(
                    StatusCode::NOT_FOUND,
                    format!("not found; git webhooks go to {PATH}\n"),
                );
            }
            let provider = Provider::identify(request.headers());
            let outcome = receiver.receive(request, provider.clone()).await;
            let name = provider.map_or("unknown", |(provider, _)| provider.name());
            receiver.metrics.webhook(name, outcome.result);
            if outcome.status.is_success() {
                tracing::info!(provider = name, "webhook: {}", outcome.message);
            } else {
                tracing::warn!(provider = name, status = %outcome.status, "webhook refused: {}", outcome.message);
            }
            text(outcome.status, format!("{}\n", outcome.message))
        })
    }

    fn methods(&self) -> &'static [Method] {
        &[Method::POST]
    }
}

impl Receiving {
    /// The outcome of one request to [`PATH`] from `provider`.
    async fn receive(
        &self,
        request: Request<Incoming>,
        provider: Option<(Provider, Event)>,
    ) -> Outcome {
        let too_large = || {
            Outcome::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the body is larger than {MAX_BODY} bytes"),
            )
        };
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_BODY as u64) {
            return too_large();
        }
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => return too_large(),
            Err(error) => {
                return Outcome::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    format!("reading the body: {error}"),
                );
            }
        };
        let Some((provider, event)) = provider else {
            return Outcome::new(
                StatusCode::BAD_REQUEST,
                "unknown_provider",
                "no event header of GitHub, GitLab, Bitbucket, Bitbucket Server, Gitea, Forgejo or Gogs",
            );
        };
        let secrets = match self.secrets.current().await {
            Ok(secrets) => secrets,
            Err(error) => {
                return Outcome::new(StatusCode::SERVICE_UNAVAILABLE, "failed", error.to_string());
            }
        };
        if let Err(error) = verify(
            provider,
            &parts.headers,
            &body,
            &secrets,
            self.secrets.name(),
        ) {
            return Outcome::new(StatusCode::UNAUTHORIZED, "unauthorized", error.to_string());
        }
        match event {
            Event::Push => self.push(provider, &body).await,
            Event::PullRequest => self.pull_request(provider, &body).await,
            Event::Ping => Outcome::new(StatusCode::OK, "ping", "pong"),
            Event::Other(name) => Outcome::new(
                StatusCode::BAD_REQUEST,
                "unknown_event",
                format!(
                    "{} event {name:?} is neither a push nor a pull-request event; only those refresh",
                    provider.name()
                ),
            ),
        }
    }

    /// The outcome of the verified push `body` of `provider`.
    async fn push(&self, provider: Provider, body: &[u8]) -> Outcome {
        let pushed = match push(provider, body) {
            Ok(pushed) => pushed,
            Err(error) => {
                return Outcome::new(StatusCode::BAD_REQUEST, "bad_payload", error.to_string());
            }
        };
        let refs = PushedRefs::new(&pushed.refs, pushed.default_branch.as_deref());
        // Refused before anything is done when the Applications of earlier pushes still wait.
        let Some(place) = self.queue.reserve() else {
            return Outcome::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "queue_full",
                format!("{CAPACITY} pushes are still being announced; deliver this one again"),
            );
        };
        match self.refresher.refresh(&pushed.repos, &refs).await {
            Ok(refreshing) => {
                let repos: Vec<String> = pushed.repos.iter().map(ToString::to_string).collect();
                let message = format!(
                    "push to {} ({}): refreshed {} ApplicationSet(s); refreshing {} Application(s)",
                    repos.join(", "),
                    pushed.refs.join(", "),
                    refreshing.application_sets.len(),
                    refreshing.applications.len(),
                );
                if !refreshing.applications.is_empty() {
                    place.send(refreshing.applications);
                }
                Outcome::new(StatusCode::OK, "refreshed", message)
            }
            Err(error) => {
                Outcome::new(StatusCode::SERVICE_UNAVAILABLE, "failed", error.to_string())
            }
        }
    }

    /// The outcome of the verified pull-request event `body` of `provider`.
    async fn pull_request(&self, provider: Provider, body: &[u8]) -> Outcome {
        let event = match pull_request(provider, body) {
            Ok(event) => event,
            Err(error) => {
                return Outcome::new(StatusCode::BAD_REQUEST, "bad_payload", error.to_string());
            }
        };
        if !event.changes_listing() {
            return Outcome::new(
                StatusCode::OK,
                "ignored",
                format!("{event}: this action changes no pull request list; nothing refreshed"),
            );
        }
        match self.refresher.refresh_pull_requests(&event).await {
            Ok(names) => Outcome::new(
                StatusCode::OK,
                "refreshed",
                format!("{event}: refreshed {} ApplicationSet(s)", names.len()),
            ),
            Err(error) => {
                Outcome::new(StatusCode::SERVICE_UNAVAILABLE, "failed", error.to_string())
            }
        }
    }
}

//! The web view's [`Handler`]: a page as a whole HTML document (with its CSRF token), or, when
//! the browser asks for `text/event-stream` at the same address, as live updates
//! ([`super::events`]); a POST is an action ([`super::act`]); an Application's resource tree
//! and an object's panel are read when asked ([`super::inspect`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::act::Actor;
use super::events::page_events;
use super::inspect::{Inspector, inspection};
use super::layout::document;
use super::live_stream::event_stream;
use super::routes::{not_found, page};
use super::watch::FleetWatch;
use crate::httpd::response::{Body, full};
use crate::httpd::server::Handler;

const HTML: &str = "text/html; charset=utf-8";
/// Only the embedded style and script run; nothing is loaded from elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; \
    script-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'";

/// Serves the pages of one [`FleetWatch`], the actions of its [`Actor`] and the reads of its
/// [`Inspector`].
pub struct WebView {
    pub watch: Arc<FleetWatch>,
    pub actor: Arc<Actor>,
    pub inspector: Arc<Inspector>,
}

/// `response` with the headers every page carries: only the embedded style and script run,
/// and no content sniffing.
fn secured(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

impl Handler for WebView {
    fn handle(&self, request: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
        let path = request.uri().path().to_owned();
        let query = request.uri().query().map(str::to_owned);
        if request.method() == Method::POST {
            let actor = Arc::clone(&self.actor);
            let headers = request.headers().clone();
            // The body is not read: an action's address says all.
            return Box::pin(async move {
                let mut response = actor.act(&headers, &path, query.as_deref()).await;
                response
                    .headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                response
            });
        }
        if let Some((app, what)) = inspection(&path) {
            let (watch, actor, inspector) = (
                Arc::clone(&self.watch),
                Arc::clone(&self.actor),
                Arc::clone(&self.inspector),
            );
            let headers = request.headers().clone();
            return Box::pin(async move {
                let snapshot = watch.snapshot();
                if what.streams() {
                    let response = inspector
                        .stream(&snapshot, &app, what, query.as_deref(), &headers)
                        .await;
                    return secured(response);
                }
                let (status, shown) = inspector
                    .page(&snapshot, &app, what, query.as_deref(), &headers)
                    .await;
                let mut response = secured(full(
                    status,
                    HTML,
                    document(watch.namespace(), &shown, &actor.page_token()),
                ));
                // What was read for one viewer is never kept by a cache.
                response
                    .headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                response
            });
        }
        let wants_events = request
            .headers()
            .get(header::ACCEPT)
            .and_then(|accept| accept.to_str().ok())
            .is_some_and(|accept| accept.contains("text/event-stream"));
        let response = if wants_events {
            event_stream(
                page_events(Arc::clone(&self.watch), path, query),
                "no-cache",
            )
        } else {
            let snapshot = self.watch.snapshot();
            let (status, shown) = match page(&path, query.as_deref(), &snapshot) {
                Some(found) => (StatusCode::OK, found),
                None => (StatusCode::NOT_FOUND, not_found()),
            };
            let token = self.actor.page_token();
            full(
                status,
                HTML,
                document(self.watch.namespace(), &shown, &token),
            )
        };
        let response = secured(response);
        Box::pin(async move { response })
    }

    /// Pages are GET (and HEAD); actions are POST.
    fn methods(&self) -> &'static [Method] {
        &[Method::GET, Method::HEAD, Method::POST]
    }
}

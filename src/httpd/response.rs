//! The response body every handler returns (a whole buffer or a stream of chunks, boxed) and
//! the plain-text answers they share.

use std::convert::Infallible;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Response, StatusCode, header};

/// The body of every response: a buffer ([`full`]) or a stream (server-sent events).
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Plain text, UTF-8.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// A whole response of `status` with `content_type` and `body`.
#[must_use]
pub fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = status;
    if let Ok(value) = header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// `text` as a plain-text response of `status`.
#[must_use]
pub fn text(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    full(status, TEXT, text)
}

/// 405 with `Allow` listing `allowed` (`GET, HEAD` for the read-only endpoints).
#[must_use]
pub fn method_not_allowed(allowed: &[Method]) -> Response<Body> {
    let allowed = allowed
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let mut response = text(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "method not allowed; only {}\n",
            allowed.replace(", ", " and ")
        ),
    );
    if let Ok(value) = header::HeaderValue::from_str(&allowed) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

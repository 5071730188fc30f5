//! One JSON POST to a notification service: HTTP/1.1 with hyper on one connection, `http://` or
//! `https://` (the service's certificate verified against the system's roots, as for generator
//! plugins), bounded by a timeout covering the connection, the TLS handshake and the answer.

use std::time::Duration;

use hyper::Method;
use hyper::body::Bytes;

use crate::controller::http_clients::url_request::{RequestError, send};

/// How long one attempt may take.
pub const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an error answer is quoted.
const QUOTED: usize = 200;

/// Why an attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    #[error("{0}")]
    Unusable(String),
    #[error("no answer: {0}")]
    Unreachable(String),
    #[error("no answer within {}s", POST_TIMEOUT.as_secs())]
    Timeout,
    #[error("answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
}

/// POSTs `body` (JSON) to `url` with `headers`; success is any 2xx answer.
///
/// # Errors
/// A URL that is not `http://` or `https://`, no connection, no answer within
/// [`POST_TIMEOUT`], or an answer other than 2xx.
pub async fn post_json(
    url: &str,
    headers: &[(String, String)],
    body: &serde_json::Value,
) -> Result<(), PostError> {
    let mut all = vec![("content-type", "application/json")];
    all.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let (status, bytes) = send(
        Method::POST,
        url,
        &all,
        Bytes::from(body.to_string()),
        POST_TIMEOUT,
    )
    .await
    .map_err(|error| match error {
        RequestError::Unusable(message) => PostError::Unusable(message),
        RequestError::Unreachable(message) => PostError::Unreachable(message),
        RequestError::Timeout(_) => PostError::Timeout,
    })?;
    if status.is_success() {
        return Ok(());
    }
    Err(PostError::Status {
        status: status.as_u16(),
        body: String::from_utf8_lossy(&bytes)
            .chars()
            .take(QUOTED)
            .collect::<String>()
            .trim()
            .to_owned(),
    })
}

//! One JSON POST to a notification service: HTTP/1.1 with hyper on one connection, `http://` or
//! `https://` (the service's certificate verified against the system's roots, as for generator
//! plugins), bounded by a timeout covering the connection, the TLS handshake and the answer.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::rt::{Read, Write};
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use crate::controller::plugin_tls::PluginTls;

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
    tokio::time::timeout(POST_TIMEOUT, attempt(url, headers, body))
        .await
        .map_err(|_| PostError::Timeout)?
}

async fn attempt(
    url: &str,
    headers: &[(String, String)],
    body: &serde_json::Value,
) -> Result<(), PostError> {
    let unreachable = |e: &dyn std::fmt::Display| PostError::Unreachable(e.to_string());
    let uri: Uri = url
        .parse()
        .map_err(|e| PostError::Unusable(format!("invalid URL: {e}")))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(PostError::Unusable("only http:// and https:// URLs".into())),
    };
    let host = uri
        .host()
        .ok_or_else(|| PostError::Unusable("the URL has no host".into()))?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let mut request = Request::post(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::CONTENT_TYPE, "application/json");
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| PostError::Unusable(format!("a header: {e}")))?;
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(|e| unreachable(&e))?;
    if !https {
        return exchange(TokioIo::new(stream), request).await;
    }
    let tls = PluginTls::system().map_err(PostError::Unusable)?;
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
        .map_err(|e| PostError::Unusable(format!("host name for TLS: {e}")))?
        .to_owned();
    let stream = tls
        .connector()
        .connect(name, stream)
        .await
        .map_err(|e| unreachable(&e))?;
    exchange(TokioIo::new(stream), request).await
}

/// Sends `request` over `io`; `Ok` on a 2xx answer.
async fn exchange<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<(), PostError>
where
    IO: Read + Write + Unpin + Send + 'static,
{
    let (status, bytes) = crate::httpd::client::exchange(io, request)
        .await
        .map_err(|e| PostError::Unreachable(e.to_string()))?;
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

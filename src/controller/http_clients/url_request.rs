//! One HTTP/1.1 request to a URL, `http://` or `https://` (the server's certificate verified
//! against the system's roots, as for generator plugins, unless the caller chooses otherwise),
//! with hyper on one connection, bounded by a timeout covering the connection, the TLS handshake
//! and the whole answer: what notification services are sent, what a step's HTTP analysis asks
//! and what SCM providers' APIs are asked.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use super::plugin_tls::PluginTls;

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{0}")]
    Unusable(String),
    #[error("no answer: {0}")]
    Unreachable(String),
    #[error("no answer within {}s", .0.as_secs())]
    Timeout(Duration),
}

/// Sends `method` to `url` with `headers` and `body`, and reads the whole answer.
///
/// # Errors
/// A URL that is not `http://` or `https://`, no connection, or no answer within `timeout`.
pub async fn send(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
    timeout: Duration,
) -> Result<(StatusCode, Bytes), RequestError> {
    let response = request(method, url, headers, body, timeout, PluginTls::system).await?;
    Ok((response.status(), response.into_body()))
}

/// [`send`] answering the whole response (headers too), `https://` connections made with the
/// TLS configuration `tls` gives.
///
/// # Errors
/// As [`send`], and no TLS configuration for an `https://` URL.
pub async fn request(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
    timeout: Duration,
    tls: impl FnOnce() -> Result<PluginTls, String>,
) -> Result<Response<Bytes>, RequestError> {
    tokio::time::timeout(timeout, attempt(method, url, headers, body, tls))
        .await
        .map_err(|_| RequestError::Timeout(timeout))?
}

async fn attempt(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Bytes,
    tls: impl FnOnce() -> Result<PluginTls, String>,
) -> Result<Response<Bytes>, RequestError> {
    let unreachable = |e: &dyn std::fmt::Display| RequestError::Unreachable(e.to_string());
    let uri: Uri = url
        .parse()
        .map_err(|e| RequestError::Unusable(format!("invalid URL: {e}")))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => {
            return Err(RequestError::Unusable(
                "only http:// and https:// URLs".into(),
            ));
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| RequestError::Unusable("the URL has no host".into()))?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let mut request = Request::builder()
        .method(method)
        .uri(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(hyper::header::HOST, format!("{host}:{port}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(body))
        .map_err(|e| RequestError::Unusable(format!("a header: {e}")))?;
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(|e| unreachable(&e))?;
    let exchanged = if https {
        let tls = tls().map_err(RequestError::Unusable)?;
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|e| RequestError::Unusable(format!("host name for TLS: {e}")))?
            .to_owned();
        let stream = tls
            .connector()
            .connect(name, stream)
            .await
            .map_err(|e| unreachable(&e))?;
        crate::httpd::client::exchange(TokioIo::new(stream), request).await
    } else {
        crate::httpd::client::exchange(TokioIo::new(stream), request).await
    };
    exchanged.map_err(|e| unreachable(&e))
}

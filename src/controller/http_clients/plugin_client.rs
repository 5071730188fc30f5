//! Asking generator plugins over HTTP: one HTTP/1.1 POST per call (hyper, one connection,
//! `http://`, or `https://` through [`super::plugin_tls`]), JSON in and out, bounded by a timeout
//! that covers connecting, the TLS handshake, sending and reading the whole answer. Generation
//! runs on a blocking thread, so each call blocks that thread on the controller's runtime.

use std::time::Duration;

use flotilla_generators::cause::Cause;
use flotilla_generators::source::{PluginCallError, PluginService};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::rt::{Read, Write};
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::runtime::Handle;

use super::plugin_tls::PluginTls;

/// How long a plugin may take to answer, as Argo CD's default.
pub const PLUGIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of an error answer's body an error message quotes.
const QUOTED_BODY: usize = 200;

/// [`PluginService`] over HTTP.
pub struct HttpPlugins {
    runtime: Handle,
    timeout: Duration,
    /// For `https://` plugins; why there is none, if TLS could not be set up.
    tls: Result<PluginTls, String>,
}

impl HttpPlugins {
    /// Calls that run on `runtime` and give up after `timeout`, `https://` ones trusting the
    /// system's roots. Use only from a blocking thread (`spawn_blocking`), never from an async
    /// task.
    #[must_use]
    pub fn new(runtime: Handle, timeout: Duration) -> Self {
        Self::with_tls(runtime, timeout, PluginTls::system())
    }

    /// [`Self::new`] with `tls` for `https://` plugins.
    #[must_use]
    pub fn with_tls(runtime: Handle, timeout: Duration, tls: Result<PluginTls, String>) -> Self {
        Self {
            runtime,
            timeout,
            tls,
        }
    }
}

impl PluginService for HttpPlugins {
    fn call(&self, url: &str, token: &str, body: &Value) -> Result<Value, PluginCallError> {
        let exchange = tokio::time::timeout(self.timeout, self.post(url, token, body));
        self.runtime
            .block_on(exchange)
            .map_err(|_| PluginCallError::Timeout {
                seconds: self.timeout.as_secs(),
            })?
    }
}

impl HttpPlugins {
    async fn post(&self, url: &str, token: &str, body: &Value) -> Result<Value, PluginCallError> {
        let uri: Uri = url.parse().map_err(|e| unreachable("invalid URL", e))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(connect(
                    "only http:// and https:// plugin URLs are supported".into(),
                ));
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| connect("the URL has no host".into()))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let request = Request::post(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(hyper::header::HOST, format!("{host}:{port}"))
            .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| unreachable("", e))?;
        let stream = TcpStream::connect((host, port))
            .await
            .map_err(|e| unreachable("", e))?;
        if !https {
            return exchange(TokioIo::new(stream), request).await;
        }
        let tls = self.tls.as_ref().map_err(|e| connect(e.clone()))?;
        // A host in brackets is an IPv6 address, which a certificate names without them.
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|e| unreachable("invalid host name for TLS", e))?
            .to_owned();
        let stream = tls
            .connector()
            .connect(name, stream)
            .await
            .map_err(|e| unreachable("TLS", e))?;
        exchange(TokioIo::new(stream), request).await
    }
}

fn connect(message: String) -> PluginCallError {
    PluginCallError::Connect { message }
}

fn unreachable(
    context: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> PluginCallError {
    PluginCallError::Unreachable {
        context: context.to_owned(),
        cause: Cause::new(error),
    }
}

/// Sends `request` over `io` and reads the answer.
async fn exchange<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<Value, PluginCallError>
where
    IO: Read + Write + Unpin + Send + 'static,
{
    let response = crate::httpd::client::exchange(io, request)
        .await
        .map_err(|e| unreachable("", e))?;
    let (status, bytes) = (response.status(), response.into_body());
    if status != StatusCode::OK {
        let text = String::from_utf8_lossy(&bytes);
        return Err(PluginCallError::Status {
            status: status.as_u16(),
            body: text
                .chars()
                .take(QUOTED_BODY)
                .collect::<String>()
                .trim()
                .to_string(),
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| PluginCallError::InvalidJson {
        cause: Cause::new(e),
    })
}

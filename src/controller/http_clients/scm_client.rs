//! Asking SCM providers' REST APIs (the pullRequest generator): one HTTP/1.1 GET
//! per call through [`super::url_request`], the whole answer (status, headers, body) handed to
//! the generators, which decide about pages, rate limits and errors. `https://` servers are
//! verified against the system's roots, or not at all for `insecure: true`. Generation runs on
//! a blocking thread, so each call blocks that thread on the controller's runtime.

use std::time::Duration;

use flotilla_generators::source::{HttpAnswer, ScmApi, ScmCallError};
use hyper::Method;
use hyper::body::Bytes;
use tokio::runtime::Handle;

use super::plugin_tls::PluginTls;
use super::url_request::{RequestError, request};

/// How long one page may take, as Argo CD's SCM clients allow.
pub const SCM_TIMEOUT: Duration = Duration::from_secs(30);

/// [`ScmApi`] over HTTP.
pub struct HttpScm {
    runtime: Handle,
    timeout: Duration,
}

impl HttpScm {
    /// Calls that run on `runtime` and give up after `timeout`. Use only from a blocking thread
    /// (`spawn_blocking`), never from an async task.
    #[must_use]
    pub fn new(runtime: Handle, timeout: Duration) -> Self {
        Self { runtime, timeout }
    }
}

impl ScmApi for HttpScm {
    fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        insecure: bool,
    ) -> Result<HttpAnswer, ScmCallError> {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let tls = if insecure {
            PluginTls::accepting_any
        } else {
            PluginTls::system
        };
        let exchange = request(Method::GET, url, &headers, Bytes::new(), self.timeout, tls);
        let response = self
            .runtime
            .block_on(exchange)
            .map_err(|error| match error {
                RequestError::Unusable(message) => ScmCallError::Unusable { message },
                RequestError::Unreachable(message) => ScmCallError::Unreachable { message },
                RequestError::Timeout(after) => ScmCallError::Timeout {
                    seconds: after.as_secs(),
                },
            })?;
        Ok(HttpAnswer {
            status: response.status().as_u16(),
            headers: response
                .headers()
                .iter()
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.as_str().to_string(), value)
                })
                .collect(),
            body: response.into_body().to_vec(),
        })
    }
}

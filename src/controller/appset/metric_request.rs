//! The GET of one measurement of a metric analysis (`analysis.prometheus`, `analysis.web`):
//! the request [`MetricCheck::request`] names, with the credentials or headers of the Secret it
//! names (read in the ApplicationSet's namespace) — a Prometheus Secret's `token` as a bearer
//! token, or its `username` and `password` as HTTP basic auth; every entry of a web analysis'
//! Secret as a header. The Secret's values go into the request's headers only: never into a
//! message, a log line, the status or an Event. The answer is judged by
//! [`MetricCheck::measure`].

use std::collections::BTreeMap;

use base64::Engine as _;
use hyper::Method;
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::analysis::GET_TIMEOUT;
use crate::cluster::api_server::api_error::ApiError;
use crate::controller::http_clients::url_request::send;
use flotilla_core::rollout::analysis::AnalysisOutcome;
use flotilla_core::rollout::metric::MetricCheck;

/// Why a measurement's headers could not be made (its message names the Secret and its keys,
/// never their values).
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("Secret {0} not found")]
    NotFound(String),
    #[error("reading Secret {name}: {error}")]
    Read {
        name: String,
        #[source]
        error: ApiError,
    },
    #[error("Secret {0} has neither token nor username and password")]
    NoCredentials(String),
    #[error("Secret {name}: {key} is not UTF-8 text")]
    NotText { name: String, key: String },
}

/// Takes one measurement of `check`: its outcome and what was seen.
pub async fn measure(check: &MetricCheck, secrets: &Api<Secret>) -> (AnalysisOutcome, String) {
    let request = check.request();
    let headers = match &request.secret {
        None => Vec::new(),
        Some(name) => match headers(secrets, name, request.credentials).await {
            Ok(headers) => headers,
            Err(error) => return (AnalysisOutcome::Inconclusive, error.to_string()),
        },
    };
    let borrowed: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    match send(
        Method::GET,
        &request.url,
        &borrowed,
        Bytes::new(),
        GET_TIMEOUT,
    )
    .await
    {
        Ok((status, body)) => check.measure(status.as_u16(), &body),
        Err(error) => (AnalysisOutcome::Inconclusive, error.to_string()),
    }
}

/// The headers the Secret `name` gives: `Authorization` from its credentials, or each entry.
async fn headers(
    secrets: &Api<Secret>,
    name: &str,
    credentials: bool,
) -> Result<Vec<(String, String)>, SecretError> {
    let secret = secrets
        .get_opt(name)
        .await
        .map_err(|error| SecretError::Read {
            name: name.to_owned(),
            error: error.into(),
        })?
        .ok_or_else(|| SecretError::NotFound(name.to_owned()))?;
    let mut entries = BTreeMap::new();
    for (key, value) in secret.data.unwrap_or_default() {
        let text = String::from_utf8(value.0).map_err(|_| SecretError::NotText {
            name: name.to_owned(),
            key: key.clone(),
        })?;
        entries.insert(key, text);
    }
    for (key, value) in secret.string_data.unwrap_or_default() {
        entries.insert(key, value);
    }
    if !credentials {
        return Ok(entries.into_iter().collect());
    }
    let authorization = match (
        entries.get("token"),
        entries.get("username"),
        entries.get("password"),
    ) {
        (Some(token), _, _) => format!("Bearer {}", token.trim()),
        (None, Some(username), Some(password)) => format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
        ),
        _ => return Err(SecretError::NoCredentials(name.to_owned())),
    };
    Ok(vec![("Authorization".to_owned(), authorization)])
}

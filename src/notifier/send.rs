//! Performs one [`Request`] of a notification in Argo CD's format: an HTTP request (with its
//! basic authentication) whose answer must be what the service documents — any 2xx, Slack's
//! `{"ok": true}`, a Teams connector's `1` — or an email ([`super::smtp`]).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::Method;
use hyper::body::Bytes;

use super::post::POST_TIMEOUT;
use super::smtp::send_email;
use crate::controller::http_clients::url_request::send;
use flotilla_core::notify::argo::payload::{Answer, Request};

/// How much of an answer is quoted.
const QUOTED: usize = 200;

/// Sends `request`.
///
/// # Errors
/// What went wrong, in words: no connection, an answer the service does not give on success.
pub async fn perform(request: &Request) -> Result<(), String> {
    let (method, url, headers, basic_auth, body, answer) = match request {
        Request::Email(email) => return send_email(email).await.map_err(|e| e.to_string()),
        Request::Http {
            method,
            url,
            headers,
            basic_auth,
            body,
            answer,
        } => (method, url, headers, basic_auth, body, answer),
    };
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|e| format!("method {method:?}: {e}"))?;
    let authorization = basic_auth
        .as_ref()
        .map(|(user, password)| format!("Basic {}", STANDARD.encode(format!("{user}:{password}"))));
    let mut all: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    if let Some(value) = &authorization {
        all.push(("authorization", value));
    }
    let (status, bytes) = send(method, url, &all, Bytes::from(body.clone()), POST_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&bytes);
    let quoted = || {
        text.chars()
            .take(QUOTED)
            .collect::<String>()
            .trim()
            .to_owned()
    };
    if !status.is_success() {
        return Err(format!("answered HTTP {}: {}", status.as_u16(), quoted()));
    }
    match answer {
        Answer::Success => Ok(()),
        Answer::SlackOk => {
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if parsed["ok"] == serde_json::Value::Bool(true) {
                Ok(())
            } else {
                Err(format!("Slack answered {}", quoted()))
            }
        }
        Answer::TeamsOne if text.trim() == "1" => Ok(()),
        Answer::TeamsOne => Err(format!("Teams answered {:?}, not 1", quoted())),
    }
}

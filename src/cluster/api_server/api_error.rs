//! How a Kubernetes API error reads in messages: what the server said (its message names the
//! kind, object, field and rule), its reason and HTTP status; a failure to reach the server reads
//! as its chain of causes. Never a `Debug` dump of `Status` (which is what `kube::Error` prints).

use std::fmt;

use kube::runtime::watcher;

use crate::sync::execute::cluster_api::server_message;

/// A kube client error, displayed as [`server_message`] when the server answered, else as the
/// whole chain of causes (`ServiceError: client error (Connect): tcp connect error: Connection
/// refused`). The chain is part of the text, so [`std::error::Error::source`] is empty: printing
/// the error with its causes never repeats them.
#[derive(Debug)]
pub struct ApiError(kube::Error);

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        Self(error)
    }
}

impl ApiError {
    /// The HTTP status the server answered with; `None` when it was not reached.
    #[must_use]
    pub fn status_code(&self) -> Option<u16> {
        match &self.0 {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&api_message(&self.0))
    }
}

/// `error` as [`ApiError`] displays it, for an error kept as `kube::Error`.
#[must_use]
pub fn api_message(error: &kube::Error) -> String {
    if let kube::Error::Api(status) = error {
        return server_message(status.code, &status.reason, &status.message);
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        let part = error.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        cause = error.source();
    }
    text
}

impl std::error::Error for ApiError {}

/// A watch failure, its API error read as [`ApiError`] (a watcher's own text embeds the
/// `Debug` dump).
#[must_use]
pub fn watch_message(error: watcher::Error) -> String {
    match error {
        watcher::Error::InitialListFailed(error) => {
            format!("the initial list failed: {}", ApiError(error))
        }
        watcher::Error::WatchStartFailed(error) => {
            format!("the watch could not start: {}", ApiError(error))
        }
        watcher::Error::WatchFailed(error) => format!("the watch failed: {}", ApiError(error)),
        watcher::Error::WatchError(status) => format!(
            "the watch ended: {}",
            server_message(status.code, &status.reason, &status.message)
        ),
        other @ watcher::Error::NoResourceVersion => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut status = Status::failure(message, reason);
        status.code = code;
        kube::Error::Api(status.boxed())
    }

    #[test]
    fn the_server_message_with_reason_and_code() {
        let cases = [
            (
                status(404, "NotFound", "configmaps \"web\" not found"),
                "configmaps \"web\" not found (HTTP 404 NotFound)",
            ),
            (
                status(
                    422,
                    "Invalid",
                    "ConfigMap \"My_Dir\" is invalid: metadata.name: Invalid value: \"My_Dir\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters",
                ),
                "ConfigMap \"My_Dir\" is invalid: metadata.name: Invalid value: \"My_Dir\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters (HTTP 422 Invalid)",
            ),
            (
                status(500, "", "etcdserver: timeout"),
                "etcdserver: timeout (HTTP 500)",
            ),
            (
                status(401, "Unauthorized", ""),
                "the server answered HTTP 401 Unauthorized",
            ),
            (status(503, "", ""), "the server answered HTTP 503"),
        ];
        for (error, expected) in cases {
            let error = ApiError::from(error);
            assert_eq!(error.to_string(), expected);
            assert!(std::error::Error::source(&error).is_none());
        }
    }

    /// What hyper's connector reports: a cause with its own cause.
    #[derive(Debug, thiserror::Error)]
    #[error("client error (Connect)")]
    struct Connect(#[source] std::io::Error);

    #[test]
    fn a_transport_failure_reads_as_its_causes_once() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = ApiError::from(kube::Error::Service(Box::new(Connect(refused))));
        assert_eq!(
            error.to_string(),
            "ServiceError: client error (Connect): connection refused"
        );
        assert!(std::error::Error::source(&error).is_none());
    }

    #[test]
    fn watch_failures_read_the_same_way() {
        let failed =
            watcher::Error::InitialListFailed(status(403, "Forbidden", "secrets is forbidden"));
        assert_eq!(
            watch_message(failed),
            "the initial list failed: secrets is forbidden (HTTP 403 Forbidden)"
        );
    }
}

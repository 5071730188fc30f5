//! What a kube-runtime `Controller` yields when something other than a reconcile went wrong: a
//! failed watch (its list or watch refused, say `cannot list resource "applications"`) is
//! logged at WARN with the API server's message, so a missing right is named where an operator
//! looks; a reconcile's own failure is already reported by its error policy (logged at debug).

use std::fmt::Display;

use kube::runtime::{controller, watcher};

use crate::cluster::api_server::api_error::watch_message;

/// Logs `error`, yielded by a controller of `what` ("Applications", "ApplicationSets").
pub fn controller_failed<R: Display>(what: &str, error: controller::Error<R, watcher::Error>) {
    match error {
        controller::Error::QueueError(error) => {
            tracing::warn!(
                "a watch of the {what} controller failed: {}",
                watch_message(error)
            );
        }
        other => tracing::debug!("controller: {other}"),
    }
}

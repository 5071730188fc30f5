//! Errors of the node simulator.

use flotilla::cluster::api_error::ApiError;

/// Failures that stop the simulator. Per-pod API errors are logged and retried instead.
#[derive(Debug, thiserror::Error)]
pub enum NodeSimError {
    /// The Node object could not be created or its status written.
    #[error("registering node {node}: {error}")]
    RegisterNode {
        /// The node name.
        node: String,
        /// The API error, as the server said it.
        #[source]
        error: ApiError,
    },
    /// The pod watch stream ended.
    #[error("watching pods: the pod watch ended")]
    WatchStopped,
}

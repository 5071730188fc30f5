//! Errors of the node simulator.

use flotilla::cluster::api_server::api_error::ApiError;

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
    /// The kubelet endpoint's TLS certificate or configuration could not be made.
    #[error("the kubelet endpoint's TLS: {0}")]
    Tls(String),
    /// The kubelet endpoint's port could not be bound.
    #[error("listening on 127.0.0.1:{port} for the kubelet endpoint: {source}")]
    Listen {
        /// The port asked for (0: any free port).
        port: u16,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
}

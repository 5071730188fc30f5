//! Errors of the node simulator.

/// Failures that stop the simulator. Per-pod API errors are logged and retried instead.
#[derive(Debug, thiserror::Error)]
pub enum NodeSimError {
    /// The Node object could not be created or its status written.
    #[error("registering node {node}: {source}")]
    RegisterNode {
        /// The node name.
        node: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The pod watch stream ended.
    #[error("watching pods: the pod watch ended")]
    WatchStopped,
}

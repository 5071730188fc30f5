//! The node simulator behind `flotilla-node-sim`, a test tool (not part of the product): plays
//! the kubelet (and the scheduler) for a control plane without nodes. It registers one Ready Node, binds pending pods to it, and after a
//! delay reports them Running, Succeeded or failed as their `sim.flotilla.dev/*` annotations ask,
//! so the real controller manager computes workload status as in a real cluster. It serves the
//! kubelet's container log endpoint ([`log_server`]) with the lines the pods' log annotations
//! give ([`container_log`], [`log_book`]), so `kubectl logs` works through the API server.

pub mod container_log;
pub mod error;
pub mod kubelet;
pub mod log_book;
pub mod log_server;
pub mod node;
pub mod placement;
pub mod plan;
pub mod pod_status;

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};
use tokio::time::MissedTickBehavior;

use flotilla::cluster::api_server::api_error::watch_message;

use error::NodeSimError;

/// How often pods are re-examined (delays are measured at this granularity).
const TICK: Duration = Duration::from_millis(100);
/// How often the node's Ready condition is refreshed.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// Settings of one simulated node.
#[derive(Debug, Clone)]
pub struct SimulatorConfig {
    /// The Node's name.
    pub node_name: String,
    /// Start delay for pods without `sim.flotilla.dev/ready-after`.
    pub default_ready_after: Duration,
    /// The kubelet endpoint's port on 127.0.0.1 (0: a free port).
    pub kubelet_port: u16,
    /// Bind no pod: run only those naming the node in `spec.nodeName` (the node is tainted
    /// [`node::DEDICATED_TAINT`]).
    pub dedicated: bool,
}

/// Registers the node and simulates its pods until `shutdown` completes.
///
/// # Errors
/// [`NodeSimError`] when the node cannot be registered or the pod watch ends.
pub async fn run(
    client: Client,
    config: &SimulatorConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), NodeSimError> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.kubelet_port))
        .await
        .map_err(|source| NodeSimError::Listen {
            port: config.kubelet_port,
            source,
        })?;
    let port = listener
        .local_addr()
        .map_err(|source| NodeSimError::Listen {
            port: config.kubelet_port,
            source,
        })?
        .port();
    let book = Arc::new(log_book::LogBook::default());
    let (stop_logs, logs_stopped) = tokio::sync::oneshot::channel::<()>();
    let server = Arc::new(log_server::LogServer::new(Arc::clone(&book)));
    tokio::spawn(
        server.serve(listener, log_server::self_signed_acceptor()?, async move {
            let _ = logs_stopped.await;
        }),
    );
    let nodes: Api<Node> = Api::all(client.clone());
    node::register(&nodes, &config.node_name, config.dedicated, port).await?;
    tracing::info!(node = %config.node_name, kubelet_port = port, "node registered");

    let (store, writer) = reflector::store();
    let watch = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default());
    let mut events = pin!(reflector(writer, watch).default_backoff());
    let mut shutdown = pin!(shutdown);
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    let mut kubelet = kubelet::Kubelet::new(
        client,
        &config.node_name,
        config.default_ready_after,
        config.dedicated,
    );
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            event = events.next() => match event {
                Some(Ok(_)) => book.record(&store.state(), &config.node_name, Timestamp::now()),
                Some(Err(error)) => {
                    tracing::warn!(error = %watch_message(error), "pod watch error; retrying");
                }
                None => return Err(NodeSimError::WatchStopped),
            },
            _ = tick.tick() => kubelet.sync(&store.state()).await,
            _ = heartbeat.tick() => {
                if let Err(error) = node::heartbeat(&nodes, &config.node_name, port).await {
                    tracing::warn!(%error, "node heartbeat failed");
                }
            }
        }
    }
    let _ = stop_logs.send(());
    tracing::info!(node = %config.node_name, "node simulator stopped");
    Ok(())
}

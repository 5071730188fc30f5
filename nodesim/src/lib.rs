//! The node simulator behind `flotilla-node-sim`, a test tool (not part of the product): plays
//! the kubelet (and the scheduler) for a control plane without nodes. It registers one Ready Node, binds pending pods to it, and after a
//! delay reports them Running, Succeeded or failed as their `sim.flotilla.dev/*` annotations ask,
//! so the real controller manager computes workload status as in a real cluster.

pub mod error;
pub mod kubelet;
pub mod node;
pub mod placement;
pub mod plan;
pub mod pod_status;

use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};
use tokio::time::MissedTickBehavior;

use flotilla::cluster::api_error::watch_message;

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
    let nodes: Api<Node> = Api::all(client.clone());
    node::register(&nodes, &config.node_name).await?;
    tracing::info!(node = %config.node_name, "node registered");

    let (store, writer) = reflector::store();
    let watch = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default());
    let mut events = pin!(reflector(writer, watch).default_backoff());
    let mut shutdown = pin!(shutdown);
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    let mut kubelet = kubelet::Kubelet::new(client, &config.node_name, config.default_ready_after);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            event = events.next() => match event {
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    tracing::warn!(error = %watch_message(error), "pod watch error; retrying");
                }
                None => return Err(NodeSimError::WatchStopped),
            },
            _ = tick.tick() => kubelet.sync(&store.state()).await,
            _ = heartbeat.tick() => {
                if let Err(error) = node::heartbeat(&nodes, &config.node_name).await {
                    tracing::warn!(%error, "node heartbeat failed");
                }
            }
        }
    }
    tracing::info!(node = %config.node_name, "node simulator stopped");
    Ok(())
}

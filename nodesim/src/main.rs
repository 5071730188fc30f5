//! `flotilla node-sim`: runs the node simulator against a cluster that has no nodes (such as the
//! test control plane), so workloads reach Ready without a container runtime.

use std::process::ExitCode;
use std::time::Duration;

use crate::duration::parse_duration;
use crate::nodesim::{SimulatorConfig, run as simulate};

/// Behaviour and annotations, shown by `flotilla node-sim --help`.
const AFTER_HELP: &str = "\
Pending pods are bound to the simulated node (there is no scheduler) and, after --ready-after, \
reported Running and Ready; pods with restartPolicy Never or OnFailure (such as Job pods) \
Succeeded. Terminating pods are deleted as a kubelet would. Per-pod annotations, usually set on \
a pod template:
  sim.flotilla.dev/fail: \"true\"              containers exit 1 (restartPolicy Never: pod Failed; otherwise CrashLoopBackOff)
  sim.flotilla.dev/image-pull-error: \"true\"  Pending, containers waiting in ImagePullBackOff
  sim.flotilla.dev/ready-after: 5s           this pod's delay
Stops on Ctrl-C or SIGTERM.";

/// Arguments of `flotilla node-sim`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct NodeSimArgs {
    #[command(flatten)]
    pub cluster: crate::cli::connect::KubeconfigArgs,
    /// Name of the simulated Node.
    #[arg(long, default_value = "flotilla-sim")]
    pub node_name: String,
    /// Delay before a bound pod reaches its outcome, e.g. 500ms, 2s, 1m.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub ready_after: Duration,
}

/// Runs the simulator until interrupted.
///
/// # Errors
/// Unreadable kubeconfig, unreachable cluster, or a node that cannot be registered.
pub fn run(args: &NodeSimArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = args.cluster.client().await?;
        let config = SimulatorConfig {
            node_name: args.node_name.clone(),
            default_ready_after: args.ready_after,
        };
        simulate(client, &config, super::connect::shutdown_signal()).await?;
        Ok(ExitCode::SUCCESS)
    })
}

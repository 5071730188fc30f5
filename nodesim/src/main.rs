//! `flotilla-node-sim`: runs the node simulator against a cluster that has no nodes (such as the
//! test control plane), so workloads reach Ready without a container runtime. A test tool, built
//! beside `flotilla` but not part of it.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use flotilla::cli::LogFormat;
use flotilla::cli::connect::{KubeconfigArgs, shutdown_signal};
use flotilla_generators::duration::parse_duration;
use flotilla_node_sim::{SimulatorConfig, run as simulate};

/// Behaviour and annotations, shown by `flotilla-node-sim --help`.
const AFTER_HELP: &str = "\
Pending pods are bound to the simulated node (there is no scheduler) and, after --ready-after, \
reported Running and Ready; pods with restartPolicy Never or OnFailure (such as Job pods) \
Succeeded. Terminating pods are deleted as a kubelet would. Per-pod annotations, usually set on \
a pod template:
  sim.flotilla.dev/fail: \"true\"              containers exit 1 (restartPolicy Never: pod Failed; otherwise CrashLoopBackOff)
  sim.flotilla.dev/image-pull-error: \"true\"  Pending, containers waiting in ImagePullBackOff
  sim.flotilla.dev/ready-after: 5s           this pod's delay
  sim.flotilla.dev/log: |                    what the containers print, one line per line (patch it to append lines)
  sim.flotilla.dev/log.NAME: ...             what container NAME prints (instead of sim.flotilla.dev/log)
  sim.flotilla.dev/previous-log[.NAME]: ...  what the previous, terminated instance printed (kubectl logs --previous)
The kubelet's log endpoint (/containerLogs/NAMESPACE/POD/CONTAINER with follow, previous, tailLines, timestamps, sinceSeconds, sinceTime, limitBytes) is served over HTTPS on 127.0.0.1, on the port the Node registers as status.daemonEndpoints.kubeletEndpoint, so kubectl logs reaches it through the API server. Each line is stamped with the time the simulator first saw it.
Stops on Ctrl-C or SIGTERM.";

/// Simulate a Ready node (kubelet and scheduler) for a cluster without nodes.
#[derive(Debug, Parser)]
#[command(name = "flotilla-node-sim", version, after_help = AFTER_HELP)]
struct Args {
    #[command(flatten)]
    cluster: KubeconfigArgs,
    /// Name of the simulated Node.
    #[arg(long, default_value = "flotilla-sim")]
    node_name: String,
    /// Delay before a bound pod reaches its outcome, e.g. 500ms, 2s, 1m.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    ready_after: Duration,
    /// Port of the kubelet's log endpoint on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    kubelet_port: u16,
    /// Bind no pending pod: run only the pods naming this node in spec.nodeName. The node is
    /// tainted sim.flotilla.dev/dedicated=true:NoSchedule so DaemonSets leave it alone (for a
    /// test that runs its own simulator beside the shared ones).
    #[arg(long)]
    dedicated: bool,
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() -> ExitCode {
    let args = Args::parse();
    flotilla::cli::init_tracing(args.verbose, LogFormat::Text);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", flotilla::cli::error_text(&error));
            ExitCode::FAILURE
        }
    }
}

/// Runs the simulator until interrupted.
///
/// # Errors
/// Unreadable kubeconfig, unreachable cluster, or a node that cannot be registered.
fn run(args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = args.cluster.client().await?;
        let config = SimulatorConfig {
            node_name: args.node_name.clone(),
            default_ready_after: args.ready_after,
            kubelet_port: args.kubelet_port,
            dedicated: args.dedicated,
        };
        simulate(client, &config, shutdown_signal()).await?;
        Ok(())
    })
}

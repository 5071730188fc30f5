//! Command-line surface: one file per subcommand, each with its clap arguments and a `run`.

pub mod connect;
pub mod controller;
pub mod crd;
pub mod directory_args;
pub mod node_sim;
pub mod plan;
pub mod render;
pub mod rollout;
pub mod simulate;
pub mod sync;
pub mod table;

use clap::{Parser, Subcommand};

/// Flotilla: ApplicationSets, progressive rollouts and wave/hook syncs for Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "flotilla", version, about)]
pub struct Cli {
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print Flotilla's CustomResourceDefinitions as YAML.
    Crd(crd::CrdArgs),
    /// Expand an ApplicationSet into Applications, offline.
    Render(render::RenderArgs),
    /// Simulate a Ready node (kubelet and scheduler) for a cluster without nodes.
    NodeSim(node_sim::NodeSimArgs),
    /// Print the order a sync would apply a manifest directory in, offline.
    Plan(plan::PlanArgs),
    /// Inspect RollingSync rollouts.
    Rollout(rollout::RolloutArgs),
    /// Run the ApplicationSet controller in a namespace (leader-elected).
    Controller(controller::ControllerArgs),
    /// Sync a manifest directory or an Application to a cluster, wave by wave.
    Sync(sync::SyncArgs),
    /// Preview a whole rollout on an embedded cluster with a virtual clock: order, timing, what
    /// a failure stops.
    Simulate(simulate::SimulateArgs),
}

/// Logs to stderr; `RUST_LOG` wins over `-v`.
pub fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

//! Command-line surface: one file per subcommand, each with its clap arguments and a `run`.

pub mod app;
pub mod connect;
pub mod controller;
pub mod crd;
pub mod customizations_args;
pub mod diff;
pub mod directory_args;
pub mod get;
pub mod node_sim;
pub mod plan;
pub mod render;
pub mod rollout;
pub mod simulate;
pub mod sync;
pub mod version;

use clap::{Parser, Subcommand};

/// Flotilla: ApplicationSets, progressive rollouts and wave/hook syncs for Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "flotilla", version, about)]
pub struct Cli {
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Log lines as text or as JSON objects (one per line, for log collectors).
    #[arg(long, value_enum, default_value_t, global = true)]
    pub log_format: LogFormat,
    /// The helm v3 binary for Helm sources (else FLOTILLA_HELM, else `helm` on PATH).
    #[arg(long, global = true, value_name = "PATH")]
    pub helm: Option<std::path::PathBuf>,
    /// A kustomize v5 binary for Kustomize sources (else FLOTILLA_KUSTOMIZE, else
    /// `kubectl kustomize`).
    #[arg(long, global = true, value_name = "PATH")]
    pub kustomize: Option<std::path::PathBuf>,
    /// The kubectl whose `kubectl kustomize` builds Kustomize sources when no kustomize is given
    /// (else FLOTILLA_KUBECTL, else `kubectl` on PATH).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubectl: Option<std::path::PathBuf>,
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
    /// Run the ApplicationSet and Application controllers in a namespace (leader-elected).
    Controller(controller::ControllerArgs),
    /// Sync a manifest directory or an Application to a cluster, wave by wave.
    Sync(sync::SyncArgs),
    /// Show how the live objects differ from a manifest directory or an Application's source
    /// (exit code 0 equal, 1 different, 2 error).
    Diff(diff::DiffArgs),
    /// List ApplicationSets or Applications with their sync, health and rollout.
    Get(get::GetArgs),
    /// Request a sync of an Application, terminate it, or wait until it is Healthy and Synced.
    App(app::AppArgs),
    /// Preview a whole rollout on an embedded cluster with a virtual clock: order, timing, what
    /// a failure stops.
    Simulate(simulate::SimulateArgs),
    /// Print Flotilla's version and the versions of helm and kustomize it runs.
    Version(version::VersionArgs),
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Logs to stderr in `format`; `RUST_LOG` wins over `-v`. Below `-vv`, the kube client's own
/// line for each failed request is left out: the error it returns is reported by the command,
/// with what it was doing.
pub fn init_tracing(verbose: u8, format: LogFormat) {
    let default = match verbose {
        0 => "warn,kube_client::client::builder=off",
        1 => "info,kube_client::client::builder=off",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

//! Command-line surface: one file per subcommand, each with its clap arguments and a `run`.

pub mod api_limit_args;
pub mod app;
pub mod appset;
pub mod command_repos;
pub mod completion;
pub mod connect;
pub mod controller;
pub mod crd;
pub mod customizations_args;
pub mod deletion_wait;
pub mod diff;
pub mod directory_args;
pub mod docs;
pub mod get;
pub mod health_args;
pub mod import;
pub mod interrupt;
pub mod jsonnet_eval;
pub mod missing;
pub mod output;
pub mod plan;
pub mod proj;
pub mod project_args;
pub mod render;
pub mod rollout;
pub mod simulate;
pub mod simulate_together;
pub mod sync;
pub mod version;
pub mod windows;

use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::source::tools::DEFAULT_JSONNET_MEMORY_MIB;
use flotilla_generators::duration::{DurationError, DurationProblem, parse_duration};

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
    /// A directory of Config Management Plugins, one Argo CD `ConfigManagementPlugin` file
    /// (`*.yaml`) per plugin, for sources with `source.plugin`; read at start, a bad file is an
    /// error.
    #[arg(long, global = true, env = "FLOTILLA_PLUGINS_DIR", value_name = "DIR")]
    pub plugins_dir: Option<std::path::PathBuf>,
    /// How long one run of helm, kustomize or a git command reaching a remote, or one Jsonnet
    /// file's evaluation, may take before it is stopped (Argo CD's repo-server setting of the
    /// same name and default).
    #[arg(
        long,
        global = true,
        env = "ARGOCD_EXEC_TIMEOUT",
        value_name = "DURATION",
        default_value = "90s",
        value_parser = parse_exec_timeout
    )]
    pub exec_timeout: Duration,
    /// The most memory one Jsonnet file's evaluation may use, in MiB; past it the evaluation is
    /// stopped with an error naming the file.
    #[arg(
        long,
        global = true,
        env = "FLOTILLA_JSONNET_MEMORY_MIB",
        value_name = "MIB",
        default_value_t = DEFAULT_JSONNET_MEMORY_MIB,
        value_parser = clap::value_parser!(u64).range(16..)
    )]
    pub jsonnet_memory_mib: u64,
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
    /// Print the order a sync would apply a manifest directory in, offline.
    Plan(plan::PlanArgs),
    /// Inspect RollingSync rollouts.
    Rollout(rollout::RolloutArgs),
    /// Run the ApplicationSet and Application controllers in a namespace (leader-elected).
    Controller(Box<controller::ControllerArgs>),
    /// Sync a manifest directory or an Application to a cluster, wave by wave.
    Sync(sync::SyncArgs),
    /// Show how the live objects differ from a manifest directory or an Application's source
    /// (exit code 0 equal, 1 different, 2 error).
    Diff(diff::DiffArgs),
    /// List ApplicationSets or Applications with their sync, health and rollout.
    Get(get::GetArgs),
    /// Write the flotilla.dev equivalents of Argo CD's AppProjects, ApplicationSets and
    /// Applications (from a namespace or files); a dry run unless --apply.
    Import(import::ImportArgs),
    /// Create, change, inspect, sync, wait for and delete Applications (argocd app's verbs).
    App(app::AppArgs),
    /// List, show, generate and delete ApplicationSets.
    Appset(appset::AppsetArgs),
    /// List and show AppProjects.
    Proj(proj::ProjArgs),
    /// Preview a whole rollout on an embedded cluster with a virtual clock: order, timing, what
    /// a failure stops.
    Simulate(simulate::SimulateArgs),
    /// Print Flotilla's version and the versions of helm and kustomize it runs.
    Version(version::VersionArgs),
    /// Print the shell completion script (bash, zsh, fish, powershell).
    Completion(completion::CompletionArgs),
    /// List the sync windows that apply to an Application (or each of an ApplicationSet's), and
    /// whether they are active now.
    Windows(windows::WindowsArgs),
    /// Evaluate one Jsonnet file for a parent Flotilla (its child process, under its limits).
    #[command(hide = true)]
    JsonnetEval(jsonnet_eval::JsonnetEvalArgs),
    /// Write the book's reference pages from the code (CRD fields, commands, metrics, reasons).
    #[command(hide = true)]
    Docs(docs::DocsArgs),
}

/// An `--exec-timeout`: a duration above zero.
fn parse_exec_timeout(text: &str) -> Result<Duration, DurationError> {
    match parse_duration(text)? {
        Duration::ZERO => Err(DurationError::new(text, DurationProblem::NotPositive)),
        timeout => Ok(timeout),
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The exit code of a command that failed with `error`: 20 when the Application,
/// ApplicationSet or AppProject it names does not exist (Argo CD's code, see
/// [`missing::DOES_NOT_EXIST`]), 3 when the Kubernetes API server could not be reached, 2 when
/// an input file could not be read as what it must be (like a usage error, which clap reports
/// with 2 before a command runs), else 1 (the operation failed). 0 is success.
#[must_use]
pub fn exit_code(error: &anyhow::Error) -> std::process::ExitCode {
    let chain = || error.chain();
    if chain().any(|cause| {
        cause.is::<missing::Missing>()
            || cause
                .downcast_ref::<crate::actions::error::ActionError>()
                .is_some_and(crate::actions::error::ActionError::is_missing)
    }) {
        std::process::ExitCode::from(missing::DOES_NOT_EXIST)
    } else if chain().any(|cause| cause.is::<connect::Unreachable>()) {
        std::process::ExitCode::from(3)
    } else if chain().any(|cause| {
        cause.is::<flotilla_core::api::document::DocumentError>()
            || cause.is::<flotilla_core::yaml::YamlError>()
            || cause.is::<import::InputError>()
    }) {
        std::process::ExitCode::from(2)
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// How a failed command's error reads: its message, then each cause in its chain that the text
/// so far does not already say. Errors keep their cause as the source and most also name it in
/// their message, which anyhow's `{:#}` would print twice.
#[must_use]
pub fn error_text(error: &anyhow::Error) -> String {
    let mut causes = error.chain().map(ToString::to_string);
    let mut text = causes.next().unwrap_or_default();
    for cause in causes {
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Whether log lines are coloured: only on a terminal (never into `kubectl logs` or a file),
/// and not when `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).
#[must_use]
pub fn colour_logs(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

/// Logs to stderr in `format`, coloured as [`colour_logs`] says; `RUST_LOG` wins over `-v`.
/// Below `-vv`, the kube client's own line for each failed request is left out: the error it
/// returns is reported by the command, with what it was doing.
pub fn init_tracing(verbose: u8, format: LogFormat) {
    let default = match verbose {
        0 => "warn,kube_client::client::builder=off",
        1 => "info,kube_client::client::builder=off",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let colour = colour_logs(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;
    use crate::source::tools::DEFAULT_TOOL_TIMEOUT;

    #[test]
    fn error_text_says_each_cause_once() {
        let io = || std::io::Error::other("disk full");
        let named = crate::repo::checkout::CheckoutError::Io {
            commit: "abc".into(),
            dir: "/cache/x".into(),
            error: io(),
        };
        assert_eq!(
            error_text(&anyhow::Error::new(named).context("sync shop")),
            "sync shop: cannot write the files of commit abc to /cache/x: disk full"
        );
        let unnamed = anyhow::Error::new(io()).context("reading app.yaml");
        assert_eq!(error_text(&unnamed), "reading app.yaml: disk full");
    }

    #[test]
    fn the_exec_timeout_and_jsonnet_memory_default_to_the_tools_defaults() {
        let cli = Cli::parse_from(["flotilla", "version"]);
        assert_eq!(cli.exec_timeout, DEFAULT_TOOL_TIMEOUT);
        assert_eq!(cli.jsonnet_memory_mib, DEFAULT_JSONNET_MEMORY_MIB);
        let cli = Cli::parse_from(["flotilla", "version", "--exec-timeout", "1m30s"]);
        assert_eq!(cli.exec_timeout, Duration::from_secs(90));
        assert!(Cli::try_parse_from(["flotilla", "version", "--exec-timeout", "0s"]).is_err());
    }

    #[test]
    fn the_controller_has_no_sync_timeout_and_no_wave_delay_by_default() {
        // As Argo CD's settings: seconds, or a duration.
        let controller = |flags: &[&str]| {
            let args = [&["flotilla", "controller"], flags].concat();
            match Cli::parse_from(args).command {
                Command::Controller(args) => (args.sync_timeout, args.sync_wave_delay),
                other => panic!("not the controller: {other:?}"),
            }
        };
        assert_eq!(controller(&[]), (Duration::ZERO, Duration::ZERO));
        assert_eq!(
            controller(&["--sync-timeout", "300", "--sync-wave-delay", "2"]),
            (Duration::from_secs(300), Duration::from_secs(2))
        );
    }

    #[test]
    fn logs_are_coloured_only_on_a_terminal_without_no_color() {
        assert!(colour_logs(true, None));
        assert!(colour_logs(true, Some(OsStr::new(""))));
        assert!(!colour_logs(true, Some(OsStr::new("1"))));
        assert!(!colour_logs(false, None));
    }
}

//! `flotilla rollout`: inspecting RollingSync rollouts. `explain --state FILE` replays a saved
//! rollout state offline through the same step function the controller runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::rollout::explain::{explain_json, explain_text};
use crate::rollout::state_file::parse_state_file;
use crate::rollout::step;

/// Arguments of `flotilla rollout`.
#[derive(Debug, clap::Args)]
pub struct RolloutArgs {
    #[command(subcommand)]
    pub command: RolloutCommand,
}

/// The `rollout` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RolloutCommand {
    /// Explain, per step, what the rollout does next and why.
    Explain(ExplainArgs),
}

/// Output formats of `flotilla rollout explain`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainOutput {
    #[default]
    Text,
    Json,
}

/// Arguments of `flotilla rollout explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The ApplicationSet's name (shown in the output).
    pub appset: String,
    /// Replay this rollout state file offline instead of reading the cluster.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: ExplainOutput,
}

/// The explanation `args` ask for.
///
/// # Errors
/// No `--state` (live mode needs the controller), an unreadable or invalid state file.
pub fn explain_from_args(args: &ExplainArgs) -> anyhow::Result<String> {
    let Some(path) = &args.state else {
        anyhow::bail!("live explain needs the controller (not yet implemented); use --state");
    };
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {file}"))?;
    let input = parse_state_file(&file, &text)?;
    let decision = step(&input);
    Ok(match args.output {
        ExplainOutput::Text => explain_text(&args.appset, &input, &decision),
        ExplainOutput::Json => explain_json(&args.appset, &decision)?,
    })
}

/// Runs a `rollout` subcommand; errors go to stderr with exit code 1.
///
/// # Errors
/// See [`explain_from_args`].
pub fn run(args: &RolloutArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        RolloutCommand::Explain(explain) => print!("{}", explain_from_args(explain)?),
    }
    Ok(ExitCode::SUCCESS)
}

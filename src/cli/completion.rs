//! `flotilla completion bash|zsh|fish|powershell`: the shell's completion script for every
//! subcommand and flag, generated from the same definitions the parser uses.

use std::io::Write as _;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::Cli;

/// Arguments of `flotilla completion`.
#[derive(Debug, clap::Args)]
pub struct CompletionArgs {
    /// The shell: bash, zsh, fish or powershell (e.g. `source <(flotilla completion bash)`).
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells completion is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

/// Prints the script to stdout.
///
/// # Errors
/// Stdout cannot be written (a closed pipe ends the command quietly).
pub fn run(args: &CompletionArgs) -> anyhow::Result<ExitCode> {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "flotilla", &mut script);
    match std::io::stdout().write_all(&script) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(error).context("writing the completion script"))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

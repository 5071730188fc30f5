//! The `flotilla` command line: parses arguments and hands each subcommand to its module in
//! `flotilla::cli`.

use std::process::ExitCode;

use clap::Parser;
use flotilla::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    flotilla::cli::init_tracing(cli.verbose, cli.log_format);
    flotilla::source::Tools::configure(flotilla::source::Tools::new(
        cli.helm,
        cli.kustomize,
        cli.kubectl,
    ));
    let result: anyhow::Result<ExitCode> = match cli.command {
        Command::Crd(args) => flotilla::cli::crd::run(&args),
        Command::Render(args) => flotilla::cli::render::run(&args),
        Command::NodeSim(args) => flotilla::cli::node_sim::run(&args),
        Command::Plan(args) => flotilla::cli::plan::run(&args),
        Command::Rollout(args) => flotilla::cli::rollout::run(&args),
        Command::Controller(args) => flotilla::cli::controller::run(&args),
        Command::Sync(args) => flotilla::cli::sync::run(&args),
        Command::Diff(args) => Ok(flotilla::cli::diff::run(&args)),
        Command::Get(args) => flotilla::cli::get::run(&args),
        Command::App(args) => flotilla::cli::app::run(&args),
        Command::Simulate(args) => flotilla::cli::simulate::run(&args),
        Command::Version(args) => flotilla::cli::version::run(&args),
        Command::Completion(args) => flotilla::cli::completion::run(&args),
        Command::Windows(args) => flotilla::cli::windows::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", flotilla::cli::error_text(&error));
            flotilla::cli::exit_code(&error)
        }
    }
}

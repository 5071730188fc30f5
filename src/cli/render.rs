//! `flotilla render`: expands an ApplicationSet into Applications, offline.

use std::process::ExitCode;

/// Arguments of `flotilla render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {}

/// Renders and prints.
///
/// # Errors
/// Unreadable input.
pub fn run(_args: &RenderArgs) -> anyhow::Result<ExitCode> {
    Ok(ExitCode::SUCCESS)
}

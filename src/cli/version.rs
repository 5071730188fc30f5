//! `flotilla version`: Flotilla's version and those of the tools it runs for Helm charts and
//! Kustomize sources (checked: helm v3, kustomize v5), or why a tool cannot be used.

use std::process::ExitCode;

use crate::source::Tools;

/// Arguments of `flotilla version` (none).
#[derive(Debug, clap::Args)]
pub struct VersionArgs {}

/// Prints the versions; exits 1 when a tool cannot be used (Flotilla still syncs plain
/// directories then).
///
/// # Errors
/// None; the result type is the subcommands'.
pub fn run(_args: &VersionArgs) -> anyhow::Result<ExitCode> {
    println!("flotilla {}", env!("CARGO_PKG_VERSION"));
    let tools = Tools::current();
    let (helm, kustomize) = Tools::versions();
    let mut usable = true;
    for (name, path, version) in [
        ("helm", tools.helm.display().to_string(), helm),
        ("kustomize", tools.kustomize.to_string(), kustomize),
    ] {
        match version {
            Ok(version) => println!("{name} {version} ({path})"),
            Err(error) => {
                usable = false;
                println!("{name} unusable ({path}): {error}");
            }
        }
    }
    Ok(if usable {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

//! `flotilla version`: Flotilla's version, the git commit it was built from and when (recorded
//! by `build.rs`), and the versions of the tools it runs for Helm charts and Kustomize sources
//! (checked: helm v3, kustomize v5), or why a tool cannot be used.

use std::process::ExitCode;

use crate::source::Toolchain;

/// Arguments of `flotilla version` (none).
#[derive(Debug, clap::Args)]
pub struct VersionArgs {}

/// Prints the versions of `toolchain`'s tools; exits 1 when a tool cannot be used (Flotilla
/// still syncs plain directories then).
///
/// # Errors
/// None; the result type is the subcommands'.
pub fn run(_args: &VersionArgs, toolchain: &Toolchain) -> anyhow::Result<ExitCode> {
    println!(
        "flotilla {} (commit {}, built {})",
        env!("CARGO_PKG_VERSION"),
        env!("FLOTILLA_GIT_COMMIT"),
        env!("FLOTILLA_BUILD_DATE")
    );
    let tools = &toolchain.tools;
    let (helm, kustomize) = toolchain.versions();
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

//! `flotilla crd`: prints the CustomResourceDefinitions as a multi-document YAML stream.

use std::process::ExitCode;

use flotilla_core::api::crd;

/// Arguments of `flotilla crd` (none).
#[derive(Debug, clap::Args)]
pub struct CrdArgs {}

/// Prints every CRD, separated by `---`.
///
/// # Errors
/// Serialization failures.
pub fn run(_args: &CrdArgs) -> anyhow::Result<ExitCode> {
    for (_, definition) in crd::all() {
        print!("---\n{}", crd::to_yaml(&definition)?);
    }
    Ok(ExitCode::SUCCESS)
}

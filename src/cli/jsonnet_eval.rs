//! `flotilla jsonnet-eval REQUEST` (hidden): evaluates one Jsonnet file in this process and prints
//! the outcome as JSON (`{"Ok": [documents]}` or `{"Err": "message"}`). It is the child process
//! [`crate::source::jsonnet`] runs under the exec timeout and a memory limit; not for people.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use flotilla_core::manifest::{InProcess, JsonnetEvaluator, JsonnetRequest};

use crate::source::disk::Disk;

/// Arguments of `flotilla jsonnet-eval`.
#[derive(Debug, clap::Args)]
pub struct JsonnetEvalArgs {
    /// The request: a JSON file naming the Jsonnet file, its text, the repository and options.
    pub request: PathBuf,
}

/// Evaluates the request and prints the documents or the evaluation's error.
///
/// # Errors
/// The request cannot be read or is not one, or stdout cannot be written.
pub fn run(args: &JsonnetEvalArgs) -> anyhow::Result<ExitCode> {
    let file = args.request.display();
    let text = std::fs::read_to_string(&args.request).with_context(|| file.to_string())?;
    let request: JsonnetRequest =
        serde_json::from_str(&text).with_context(|| format!("{file}: not a request"))?;
    let outcome = InProcess { tree: &Disk }.evaluate(&request);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &outcome).context("stdout")?;
    out.flush().context("stdout")?;
    Ok(ExitCode::SUCCESS)
}

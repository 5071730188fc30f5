//! Jsonnet evaluated in a child process: the evaluator cannot be interrupted and a thread cannot
//! be killed, so each `*.jsonnet` file of a directory source is evaluated by Flotilla's own
//! binary (`flotilla jsonnet-eval`, [`crate::cli::jsonnet_eval`]), run as the other tools are
//! ([`super::run`]): killed when it passes the exec timeout, its data segment limited so an
//! evaluation that allocates without bound fails an allocation and ends, its output bounded by
//! the limits of an Application. The request goes in a file of the run's private directory, the
//! documents or the error come back as JSON on stdout. Knows nothing of Jsonnet itself.

use std::path::Path;

use serde_json::Value as Json;

use super::run::{RunInput, ToolCommand, ToolError};
use super::tools::Tools;
use flotilla_core::manifest::{JsonnetEvaluator, JsonnetRequest};
use flotilla_generators::duration::format_duration;

/// The subcommand of Flotilla's binary that evaluates one request.
pub const SUBCOMMAND: &str = "jsonnet-eval";

/// What Rust's runtime prints when an allocation fails (then it aborts).
const ALLOCATION_FAILED: &str = "memory allocation of";

/// One MiB in bytes.
const MIB: u64 = 1024 * 1024;

/// Evaluates each file in a child process of `tools.flotilla`, within `tools.timeout` and
/// `tools.jsonnet_memory_mib`.
#[derive(Debug, Clone, Copy)]
pub struct ChildProcess<'a> {
    pub tools: &'a Tools,
}

impl JsonnetEvaluator for ChildProcess<'_> {
    fn evaluate(&self, request: &JsonnetRequest) -> Result<Vec<Json>, String> {
        let absolute = |path: &Path| {
            std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
        };
        // The child runs in a private directory: it gets the files by their absolute paths.
        let request = JsonnetRequest {
            path: absolute(&request.path)?,
            repository: absolute(&request.repository)?,
            source: absolute(&request.source)?,
            ..request.clone()
        };
        let text = serde_json::to_string(&request)
            .map_err(|error| format!("cannot pass the file to the evaluator: {error}"))?;
        let mut command = ToolCommand {
            program: self.tools.flotilla.clone(),
            args: Vec::new(),
            network: false,
        };
        let home = command.private_home().map_err(|error| error.to_string())?;
        let file = home.path().join("request.json");
        std::fs::write(&file, text).map_err(|error| format!("{}: {error}", file.display()))?;
        command.args = vec![SUBCOMMAND.into(), file.into()];
        let input = RunInput {
            memory: Some(self.tools.jsonnet_memory_mib.saturating_mul(MIB)),
            ..RunInput::new(home.path())
        };
        match command.run_with(self.tools.timeout, &input) {
            Ok(out) => serde_json::from_str(&out).map_err(|error| {
                format!("`{command}` did not answer with an evaluation ({error}): {out:.200}")
            })?,
            Err(ToolError::TimedOut { timeout, .. }) => Err(format!(
                "the evaluation did not finish within {} (the exec timeout: --exec-timeout, \
                 ARGOCD_EXEC_TIMEOUT) and was stopped",
                format_duration(timeout)
            )),
            Err(ToolError::Failed { stderr, .. }) if stderr.contains(ALLOCATION_FAILED) => {
                Err(format!(
                    "the evaluation needed more than {} MiB of memory (--jsonnet-memory-mib) \
                     and was stopped",
                    self.tools.jsonnet_memory_mib
                ))
            }
            Err(error) => Err(error.to_string()),
        }
    }
}

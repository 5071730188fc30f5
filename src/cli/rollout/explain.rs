//! `flotilla rollout explain APPSET`: reads the ApplicationSet and its Applications from the
//! cluster, observes them exactly as the controller does (generation, plan, revisions resolved
//! now) and runs the same step function, then says per step what happens next and why.
//! `--export FILE` writes the state it used; `--state FILE` replays such a file offline.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use super::AppSetArgs;
use crate::cluster::watched_secrets::WatchedSecrets;
use crate::controller::appset_reconciler::{AppSetContext, live_rollout_input};
use crate::controller::metrics::Metrics;
use crate::repo::LocalRepos;
use crate::repo::cache::RepoCache;
use crate::rollout::explain::{explain_json, explain_text};
use crate::rollout::state_file::{parse_state_file, to_state_file};
use crate::rollout::{RolloutInput, step};

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
    #[command(flatten)]
    pub target: AppSetArgs,
    /// Replay this rollout state file offline instead of reading the cluster.
    #[arg(long, value_name = "FILE", conflicts_with = "export")]
    pub state: Option<PathBuf>,
    /// Also write the state this explanation used to FILE (replay it with --state).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Read repository URL from a local PATH (repeatable), as the controller's --repo.
    #[arg(long = "repo", value_name = "URL=PATH")]
    pub repos: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: ExplainOutput,
}

/// The explanation of the state file `path`, offline.
///
/// # Errors
/// An unreadable or invalid state file.
pub fn explain_state_file(
    appset: &str,
    path: &Path,
    output: ExplainOutput,
) -> anyhow::Result<String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {file}"))?;
    let input = parse_state_file(&file, &text)?;
    render(appset, &input, output)
}

/// `explain APPSET` against the cluster, writing `--export` when asked.
///
/// # Errors
/// The ApplicationSet cannot be read, does not use RollingSync, or cannot be generated; the
/// export cannot be written.
pub async fn live(args: &ExplainArgs) -> anyhow::Result<String> {
    let target = &args.target;
    let (client, namespace) = target.connect().await?;
    let appset = Arc::new(target.get(&client, &namespace).await?);
    let repos = LocalRepos::from_mappings(&args.repos)?;
    // The controller's default cache directory: a repository it has fetched is not cloned again.
    let credentials = WatchedSecrets::repository_credentials(client.clone(), &namespace);
    let cache = RepoCache::new(std::env::temp_dir().join("flotilla-repos"), repos)
        .with_credentials(Arc::new(credentials), None);
    let ctx = AppSetContext::new(
        client,
        namespace.clone(),
        Arc::new(cache),
        Duration::ZERO,
        Arc::new(Metrics::default()),
    );
    let input = live_rollout_input(&ctx, &appset).await?.with_context(|| {
        format!(
            "ApplicationSet {namespace}/{} does not use RollingSync",
            target.appset
        )
    })?;
    if let Some(path) = &args.export {
        let text = to_state_file(&input).context("serializing the rollout state")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    render(&target.appset, &input, args.output)
}

fn render(appset: &str, input: &RolloutInput, output: ExplainOutput) -> anyhow::Result<String> {
    let decision = step(input);
    Ok(match output {
        ExplainOutput::Text => explain_text(appset, input, &decision),
        ExplainOutput::Json => explain_json(appset, &decision)?,
    })
}

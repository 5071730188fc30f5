//! `flotilla rollout explain APPSET`: reads the ApplicationSet and its Applications from the
//! cluster, observes them exactly as the controller does (generation, plan, revisions resolved
//! now) and runs the same step function, then says per step what happens next and why.
//! `--export FILE` writes the state it used; `--state FILE` replays such a file offline.
//! Printed in the one output vocabulary: `table` (alias `text`) and `wide` are the text,
//! `json`/`yaml` the decision, `name` the ApplicationSet's Applications.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use super::AppSetArgs;
use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cluster::destinations::clients::plain_connect;
use crate::cluster::watches::watched_secrets::WatchedSecrets;
use crate::controller::appset::{AppSetContext, live_rollout_input};
use crate::controller::runtime::metrics::Metrics;
use crate::repo::LocalRepos;
use crate::repo::cache::RepoCache;
use crate::source::Toolchain;
use flotilla_core::rollout::decision::RolloutDecision;
use flotilla_core::rollout::explain::{ExplainDocument, explain_text};
use flotilla_core::rollout::reverse_deletion::deletion_text;
use flotilla_core::rollout::state_file::{parse_state_file, to_state_file};
use flotilla_core::rollout::{RolloutInput, advance};

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
    pub output: OutputFormat,
}

/// The explanation of the state file `path`, offline.
///
/// # Errors
/// An unreadable or invalid state file.
pub fn explain_state_file(
    appset: &str,
    path: &Path,
    output: OutputFormat,
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
pub async fn live(args: &ExplainArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<String> {
    let target = &args.target;
    let (client, namespace) = target.connect().await?;
    let appset = Arc::new(target.get(&client, &namespace).await?);
    let repos = LocalRepos::from_mappings(&args.repos)?;
    // The controller's default cache directory: a repository it has fetched is not cloned again.
    let credentials = WatchedSecrets::repository_credentials(client.clone(), &namespace);
    let cache = RepoCache::new(
        std::env::temp_dir().join("flotilla-repos"),
        repos,
        Arc::clone(toolchain),
    )
    .with_credentials(Arc::new(credentials), None);
    let ctx = AppSetContext::new(
        client,
        plain_connect(),
        namespace.clone(),
        Arc::new(cache),
        Duration::ZERO,
        Arc::new(Metrics::default()),
    );
    // A deleted ApplicationSet whose Applications go in reverse step order: where that stands
    // comes first, from its status (the rollout's explanation follows when it can be made).
    let deletion = appset
        .status
        .as_ref()
        .and_then(|s| s.deletion.as_ref())
        .filter(|_| appset.metadata.deletion_timestamp.is_some())
        .filter(|_| matches!(args.output, OutputFormat::Table | OutputFormat::Wide))
        .map(|progress| format!("Deletion: {}\n", deletion_text(progress)));
    let input = live_rollout_input(&ctx, &appset).await.map(|input| {
        input.with_context(|| {
            format!(
                "ApplicationSet {namespace}/{} does not use RollingSync",
                target.appset
            )
        })
    });
    let input = match (input, &deletion) {
        (Ok(Ok(input)), _) => input,
        (Err(_) | Ok(Err(_)), Some(deletion)) => return Ok(deletion.clone()),
        (Err(error), None) => return Err(error.into()),
        (Ok(Err(error)), None) => return Err(error),
    };
    if let Some(path) = &args.export {
        let text = to_state_file(&input).context("serializing the rollout state")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let explained = render(&target.appset, &input, args.output)?;
    Ok(deletion.unwrap_or_default() + &explained)
}

fn render(appset: &str, input: &RolloutInput, output: OutputFormat) -> anyhow::Result<String> {
    output.print(&Explained {
        appset,
        input,
        decision: advance(input),
    })
}

/// The step function's decision on a rollout's state, as `explain` prints it.
struct Explained<'a> {
    appset: &'a str,
    input: &'a RolloutInput,
    decision: RolloutDecision,
}

impl Printable for Explained<'_> {
    fn data(&self) -> impl serde::Serialize + '_ {
        ExplainDocument {
            application_set: self.appset,
            decision: &self.decision,
        }
    }

    fn names(&self) -> Vec<String> {
        self.decision
            .application_status
            .iter()
            .map(|entry| object_name(flotilla_core::api::GROUP, "Application", &entry.application))
            .collect()
    }

    /// The text, per step (it has no columns to add).
    fn table(&self, _wide: bool) -> String {
        explain_text(self.appset, self.input, &self.decision)
    }
}

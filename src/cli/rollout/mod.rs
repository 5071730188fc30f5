//! `flotilla rollout`: operating RollingSync rollouts. `explain` says per step what the controller
//! does next and why (live, or replayed offline from a state file), `status` shows steps and
//! Applications as a table (optionally live), `pause` and `resume` stop and restart promotion,
//! `promote` approves a step with `approval: manual`.

pub mod explain;
pub mod pause;
pub mod promote;
pub mod status;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::cli::connect::KubeconfigArgs;
use crate::cluster::api_server::api_error::ApiError;
use crate::source::Toolchain;
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_layout;

pub use explain::{ExplainArgs, explain_state_file};

/// Arguments of `flotilla rollout`.
#[derive(Debug, clap::Args)]
pub struct RolloutArgs {
    #[command(subcommand)]
    pub command: RolloutCommand,
}

/// The `rollout` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RolloutCommand {
    /// Explain, per step, what the rollout does next and why.
    Explain(ExplainArgs),
    /// Show the rollout's steps and Applications as a table.
    Status(status::StatusArgs),
    /// Stop promoting Applications; syncs already running finish.
    Pause(AppSetArgs),
    /// Promote Applications again after a pause.
    Resume(AppSetArgs),
    /// Approve a step with `approval: manual` (the one waiting now, or `--step N`).
    Promote(promote::PromoteArgs),
}

/// An ApplicationSet in a cluster: its name, namespace and how to reach the cluster.
#[derive(Debug, Clone, clap::Args)]
pub struct AppSetArgs {
    /// The ApplicationSet's name.
    pub appset: String,
    /// Its namespace (default: the kubeconfig's namespace).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: KubeconfigArgs,
}

impl AppSetArgs {
    /// A client and the namespace to use.
    ///
    /// # Errors
    /// An unusable kubeconfig.
    pub async fn connect(&self) -> anyhow::Result<(Client, String)> {
        let client = self.cluster.client().await?;
        let namespace = self
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        Ok((client, namespace))
    }

    /// The ApplicationSet as stored now.
    ///
    /// # Errors
    /// It does not exist or cannot be read.
    pub async fn get(&self, client: &Client, namespace: &str) -> anyhow::Result<ApplicationSet> {
        Api::<ApplicationSet>::namespaced(client.clone(), namespace)
            .get(&self.appset)
            .await
            .map_err(ApiError::from)
            .with_context(|| format!("reading ApplicationSet {namespace}/{}", self.appset))
    }

    /// [`Self::get`], with every Application's rollout entry listed in
    /// `status.applicationStatus`: read back from its Applications when a large rollout keeps
    /// them there ([`flotilla_core::controller::appset::rollout_layout`]).
    ///
    /// # Errors
    /// The ApplicationSet, or its Applications, cannot be read.
    pub async fn get_with_rollout(
        &self,
        client: &Client,
        namespace: &str,
    ) -> anyhow::Result<ApplicationSet> {
        let mut appset = self.get(client, namespace).await?;
        if let Some(status) = appset.status.as_mut()
            && rollout_layout::on_applications(status)
        {
            let selector = format!("{APPLICATION_SET_LABEL}={}", self.appset);
            let applications = Api::<Application>::namespaced(client.clone(), namespace)
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(ApiError::from)
                .with_context(|| {
                    format!("listing the Applications of {namespace}/{}", self.appset)
                })?;
            rollout_layout::hydrate(status, &applications.items);
        }
        Ok(appset)
    }
}

/// Runs a `rollout` subcommand.
///
/// # Errors
/// See each subcommand.
pub fn run(args: &RolloutArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    let runtime = || tokio::runtime::Runtime::new().context("starting the async runtime");
    match &args.command {
        RolloutCommand::Explain(explain) => match &explain.state {
            Some(state) => print!(
                "{}",
                explain_state_file(&explain.target.appset, state, explain.output)?
            ),
            None => print!(
                "{}",
                runtime()?.block_on(explain::live(explain, toolchain))?
            ),
        },
        RolloutCommand::Status(status) => runtime()?.block_on(status::run(status))?,
        RolloutCommand::Pause(target) => {
            println!("{}", runtime()?.block_on(pause::set_paused(target, true))?)
        }
        RolloutCommand::Resume(target) => {
            println!("{}", runtime()?.block_on(pause::set_paused(target, false))?)
        }
        RolloutCommand::Promote(args) => {
            println!("{}", runtime()?.block_on(promote::promote(args))?)
        }
    }
    Ok(ExitCode::SUCCESS)
}

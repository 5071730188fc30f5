//! `flotilla appset`: ApplicationSets from a terminal or a pipeline, with argocd appset's verbs —
//! show one, list those of a namespace (or all), generate the Applications a file (offline, as
//! `flotilla render`) or a live ApplicationSet would produce (its generators read with the
//! command's sources: `--repo`, `--clusters`, `--project`), and delete one (its Applications go
//! with it, as their owner says).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use kube::Api;
use kube::api::DeleteParams;

use crate::cli::deletion_wait::DeletionWaitArgs;
use crate::cli::get::{GetKind, ListArgs, ShowArgs, application_sets_table, show};
use crate::cli::missing::get_named;
use crate::cli::output::{OutputFormat, Written};
use crate::cluster::api_server::api_error::ApiError;
use crate::source::Toolchain;
use flotilla_core::api::ApplicationSet;

/// Arguments of `flotilla appset`.
#[derive(Debug, clap::Args)]
pub struct AppsetArgs {
    #[command(subcommand)]
    pub command: AppsetCommand,
    /// Namespace of the ApplicationSets (default: the kubeconfig's).
    #[arg(long, short = 'n', global = true)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: super::connect::KubeconfigArgs,
}

/// The `appset` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AppsetCommand {
    /// Show the ApplicationSet: strategy, Applications, rollout (-o yaml|json: the object).
    Get(ShowArgs),
    /// List the ApplicationSets of the namespace (or all, -A).
    List(ListArgs),
    /// Print the Applications an ApplicationSet generates: a file, offline (as `flotilla
    /// render`), or, when no such file exists, the ApplicationSet of that name in the cluster.
    Generate(super::render::RenderArgs),
    /// Delete the ApplicationSet; the Applications it owns are deleted with it.
    Delete(DeleteArgs),
}

/// Arguments of `flotilla appset delete`.
#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// The ApplicationSet.
    pub name: String,
    #[command(flatten)]
    pub wait: DeletionWaitArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Runs an `appset` subcommand.
///
/// # Errors
/// No cluster, no such ApplicationSet, an unreadable file, or a refused request.
pub fn run(args: &AppsetArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    if let AppsetCommand::Generate(render) = &args.command
        && render.input.appset.exists()
    {
        return super::render::run(render, toolchain);
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let (client, namespace) = args.cluster.client_in(args.namespace.as_deref()).await?;
        let api: Api<ApplicationSet> = Api::namespaced(client.clone(), &namespace);
        let text = match &args.command {
            AppsetCommand::Get(get) => {
                show(&api, &get.name, get.output, application_sets_table).await?
            }
            AppsetCommand::List(list) => {
                let (listing, scope) = list.listing(&namespace);
                listing.list_kind(GetKind::Appsets, client, scope).await?
            }
            AppsetCommand::Delete(delete) => return delete_appset(&api, delete).await,
            AppsetCommand::Generate(render) => {
                let name = render.input.appset.to_string_lossy();
                let appset = get_named(&api, &name).await?;
                let origin = format!("ApplicationSet {namespace}/{name}");
                let input = render.input.clone();
                let toolchain = Arc::clone(toolchain);
                // Rendering may run helm or git: off the async workers.
                let rendered = tokio::task::spawn_blocking(move || {
                    input.render_appset(&origin, appset, &toolchain)
                })
                .await??;
                return super::render::print_rendered(&rendered, render.output);
            }
        };
        print!("{text}");
        Ok(ExitCode::SUCCESS)
    })
}

/// Deletes the ApplicationSet (foreground: its owned Applications first).
async fn delete_appset(api: &Api<ApplicationSet>, args: &DeleteArgs) -> anyhow::Result<ExitCode> {
    let name = &args.name;
    let appset = get_named(api, name).await?;
    api.delete(name, &DeleteParams::foreground())
        .await
        .map_err(ApiError::from)
        .with_context(|| format!("deleting ApplicationSet {name}"))?;
    let uid = appset.metadata.uid.clone().unwrap_or_default();
    if !args.wait.gone(api, name, &uid).await? {
        return Ok(ExitCode::FAILURE);
    }
    print!(
        "{}",
        args.output.print(&Written {
            object: &appset,
            message: format!("applicationset '{name}' deleted"),
        })?
    );
    Ok(ExitCode::SUCCESS)
}

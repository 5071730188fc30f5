//! `flotilla app`: Applications from a terminal or a pipeline, with argocd app's verbs — create,
//! change (`set`, `unset`), delete, show and list them, print their manifests, managed resources
//! and pods' logs; request a sync, terminate the running one, confirm the pruning or deletion of
//! objects that ask for it, see how its objects differ from its source, list its history and
//! roll back to an entry of it, or wait until it is Healthy and Synced (the exit code says
//! whether it got there; the codes are argocd's, see `docs/src/pipelines.md`).

mod create;
mod delete;
mod diff;
mod history;
mod logs;
mod manifests;
mod resources;
mod rollback;
mod set;
mod show;
pub mod spec_flags;
mod wait;

pub use wait::{WaitFlags, WaitFor, WaitState, wait_state};

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::wait::{Error as WaitError, await_condition};
use serde_json::json;

use crate::actions::application;
use crate::cluster::api_server::api_error::{ApiError, watch_message};
use crate::source::Toolchain;
use flotilla_core::api::application::{Application, DELETION_APPROVED_ANNOTATION, SyncOperation};
use flotilla_generators::duration::{format_duration, parse_duration};

/// Arguments of `flotilla app`.
#[derive(Debug, clap::Args)]
pub struct AppArgs {
    #[command(subcommand)]
    pub command: AppCommand,
    /// Namespace of the Application (default: the kubeconfig's).
    #[arg(long, short = 'n', global = true)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: super::connect::KubeconfigArgs,
}

/// The `app` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AppCommand {
    /// Create an Application from flags or a file (-f); an existing one that differs is refused
    /// unless --upsert.
    Create(create::CreateArgs),
    /// Change fields of the Application's spec; the fields not named stay as they are.
    Set(set::SetArgs),
    /// Remove Helm parameters, values files, Kustomize images or sync options from the spec.
    Unset(set::UnsetArgs),
    /// Delete the Application, with its resources unless --cascade=false.
    Delete(delete::DeleteArgs),
    /// Show the Application: its sync, health and placement (-o yaml|json: the object).
    Get(show::GetArgs),
    /// List the Applications of the namespace (or all, -A).
    List(show::ListArgs),
    /// Print the Application's manifests: as its source renders them at its target revision (or
    /// --revision), or its live objects (--source live).
    Manifests(manifests::ManifestsArgs),
    /// List the objects the Application manages, with their sync and health.
    Resources(resources::ResourcesArgs),
    /// Print the logs of the pods of the Application's workloads.
    Logs(logs::LogsArgs),
    /// Ask the controller to sync the Application now.
    Sync(SyncArgs),
    /// Stop the Application's running sync (its SyncFail hooks do not run).
    Terminate(NameArg),
    /// Confirm the pruning of Prune=confirm objects by the running sync, and the deletion of
    /// Delete=confirm objects of a deleted Application (sets argocd.argoproj.io/deletion-approved).
    #[command(alias = "confirm-deletion")]
    ConfirmPrune(NameArg),
    /// Wait until the Application is Healthy, Synced and has no operation (or what the flags
    /// name); exits 1 on timeout, 20 when it does not exist.
    Wait(WaitArgs),
    /// Show how the Application's objects differ from its source, as the controller compares
    /// them; exits 0 when equal, 1 when different, 2 on error.
    Diff(diff::AppDiffArgs),
    /// List the Application's last successful syncs (status.history): the ids `rollback` takes.
    History(history::HistoryArgs),
    /// Sync the Application back to a history entry (default: the one before the newest);
    /// refused with automated sync on unless --force, which suspends it.
    Rollback(rollback::RollbackArgs),
}

/// Arguments of `flotilla app sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The Application.
    pub app: String,
    /// Sync this revision instead of the source's targetRevision.
    #[arg(long, default_value = "")]
    pub revision: String,
    /// Delete tracked objects that are no longer in the source.
    #[arg(long)]
    pub prune: bool,
    /// Let --prune delete every object of the Application when its manifests are empty
    /// (refused otherwise).
    #[arg(long)]
    pub allow_empty: bool,
    /// Sync options for this sync only (repeatable), e.g. `Replace=true`.
    #[arg(long = "sync-option", value_name = "OPTION")]
    pub sync_options: Vec<String>,
}

/// An Application name.
#[derive(Debug, clap::Args)]
pub struct NameArg {
    /// The Application.
    pub app: String,
}

/// Arguments of `flotilla app wait`.
#[derive(Debug, clap::Args)]
pub struct WaitArgs {
    /// The Application.
    pub app: String,
    #[command(flatten)]
    pub flags: WaitFlags,
    /// Give up after this long, e.g. 5m.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// Runs an `app` subcommand.
///
/// # Errors
/// No cluster, no such Application, or a rejected write.
pub fn run(args: &AppArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let (client, namespace) = args.cluster.client_in(args.namespace.as_deref()).await?;
        let api: Api<Application> = Api::namespaced(client.clone(), &namespace);
        match &args.command {
            AppCommand::Create(create) => create::create(&api, create).await,
            AppCommand::Set(set) => set::set(&api, set).await,
            AppCommand::Unset(unset) => set::unset(&api, unset).await,
            AppCommand::Delete(delete) => delete::delete(&api, delete).await,
            AppCommand::Get(get) => show::get(&api, get).await,
            AppCommand::List(list) => show::list(client, &namespace, list).await,
            AppCommand::Manifests(manifests) => {
                manifests::manifests(toolchain, client, &namespace, manifests).await
            }
            AppCommand::Resources(resources) => resources::resources(&api, resources).await,
            AppCommand::Logs(logs) => logs::logs(client, &namespace, logs).await,
            AppCommand::Sync(sync) => request_sync(&api, sync).await,
            AppCommand::Terminate(name) => terminate(&api, &name.app).await,
            AppCommand::ConfirmPrune(name) => confirm_prune(&api, &name.app).await,
            AppCommand::Wait(wait) => wait_for(&api, wait).await,
            AppCommand::History(args) => {
                history::history(&api, args).await?;
                Ok(ExitCode::SUCCESS)
            }
            AppCommand::Rollback(args) => rollback::request_rollback(&api, args, username()).await,
            AppCommand::Diff(diff) => {
                let objects = diff::app_diff(toolchain, client, &namespace, diff).await;
                Ok(crate::cli::diff::report(objects, diff.output))
            }
        }
    })
}

/// The user name recorded on operations started from this command line.
fn username() -> String {
    std::env::var("USER").unwrap_or_else(|_| "flotilla-cli".to_string())
}

async fn request_sync(api: &Api<Application>, args: &SyncArgs) -> anyhow::Result<ExitCode> {
    let mut sync = SyncOperation {
        prune: args.prune,
        sync_options: args.sync_options.clone(),
        allow_empty: args.allow_empty,
        ..SyncOperation::default()
    };
    // `--revision A,B` names one revision per source of an Application with `sources`.
    sync.set_revision(&args.revision);
    println!(
        "{}",
        application::request_sync(api, &args.app, sync, &username()).await?
    );
    Ok(ExitCode::SUCCESS)
}

async fn terminate(api: &Api<Application>, name: &str) -> anyhow::Result<ExitCode> {
    println!("{}", application::terminate(api, name).await?);
    Ok(ExitCode::SUCCESS)
}

/// Sets the approval annotation to now, which confirms what waits for it now (see
/// [`DELETION_APPROVED_ANNOTATION`]).
async fn confirm_prune(api: &Api<Application>, name: &str) -> anyhow::Result<ExitCode> {
    crate::cli::missing::get_named(api, name).await?;
    let now = k8s_openapi::jiff::Timestamp::now();
    let approved = format!("{now:.3}");
    let patch =
        json!({ "metadata": { "annotations": { DELETION_APPROVED_ANNOTATION: approved } } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(ApiError::from)
        .context(format!(
            "confirming the pruning of Application {name}'s objects"
        ))?;
    println!(
        "pruning and deletion of Application {name}'s objects confirmed ({DELETION_APPROVED_ANNOTATION}: {approved})"
    );
    Ok(ExitCode::SUCCESS)
}

async fn wait_for(api: &Api<Application>, args: &WaitArgs) -> anyhow::Result<ExitCode> {
    // An Application that does not exist is an error at once (argocd's code 20), not a wait.
    crate::cli::missing::get_named(api, &args.app).await?;
    let want = WaitFor::from_flags(args.flags);
    let done = |app: Option<&Application>| {
        app.is_some_and(|app| wait_state(app, &want) == WaitState::Done)
    };
    let waited = tokio::time::timeout(args.timeout, await_condition(api.clone(), &args.app, done));
    if let Ok(result) = waited.await {
        result
            .map_err(|WaitError::ProbeFailed(error)| anyhow::anyhow!(watch_message(error)))
            .context(format!("watching Application {}", args.app))?;
        println!("Application {} is ready", args.app);
        return Ok(ExitCode::SUCCESS);
    }
    let reason = match api.get_opt(&args.app).await.map_err(ApiError::from)? {
        Some(app) => match wait_state(&app, &want) {
            WaitState::Done => "ready just now".to_string(),
            WaitState::Waiting(reason) => reason,
        },
        None => "it does not exist".to_string(),
    };
    eprintln!(
        "timed out after {} waiting for Application {}: {reason}",
        format_duration(args.timeout),
        args.app
    );
    Ok(ExitCode::FAILURE)
}

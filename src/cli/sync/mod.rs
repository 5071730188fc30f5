//! `flotilla sync PATH`: syncs a manifest directory or an Application to a cluster with the
//! wave/hook engine. Validation errors are printed before anything is written; a live view runs
//! on stderr; the result prints on stdout in the one output vocabulary (`-o
//! table|wide|yaml|json|name`). Exit code 0 only when the
//! operation Succeeded; Ctrl-C terminates the operation cleanly. Nobody can confirm the pruning
//! of a `Prune=confirm` object while this command runs, so `--confirm-prune` confirms it up
//! front; without it the operation stops there, left Running (a later run resumes it), and the
//! command exits 1 naming the objects.

pub mod app_name;
pub mod source;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::cli::command_repos::command_repos;
use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::cluster::api_server::operation_configmap::ConfigMapStore;
use crate::source::{Toolchain, generate};
use crate::sync::application_settings::{SyncOverrides, SyncSettings};
use crate::sync::execute::{
    DEFAULT_WAVE_DELAY_TEXT, ExecuteSettings, PruneConfirmation, SyncParams, run_sync,
};
use flotilla_core::sync::{OperationPhase, OperationState, SyncOptions, SyncPlan};
use flotilla_core::table::Table;
use flotilla_generators::duration::parse_duration;

use app_name::AppName;
use source::SyncSource;
use view::LiveView;

/// Arguments of `flotilla sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// A manifest directory or file, or an Application YAML.
    pub path: PathBuf,
    /// Destination namespace (default: the Application's `destination.namespace`).
    #[arg(short, long)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: crate::cli::connect::KubeconfigArgs,
    /// Application name for tracking and the stored operation (default: the Application's name,
    /// or one made of the directory's name: lower case, other characters than letters and digits
    /// as `-`).
    #[arg(long)]
    pub app: Option<String>,
    /// Delete managed objects that are no longer desired.
    #[arg(long)]
    pub prune: bool,
    /// Let --prune delete every object of the Application when the manifests are empty
    /// (refused otherwise).
    #[arg(long)]
    pub allow_empty: bool,
    /// Confirm the pruning of objects marked Prune=confirm (without it, the sync stops before
    /// deleting them and names them).
    #[arg(long)]
    pub confirm_prune: bool,
    /// An Application-wide sync option, e.g. ApplyOutOfSyncOnly=true, CreateNamespace=true,
    /// Replace=true (repeatable; over the Application's syncPolicy.syncOptions).
    #[arg(long = "sync-option", value_name = "KEY=VALUE", value_parser = parse_sync_option)]
    pub sync_options: Vec<SyncOptions>,
    /// Server-side dry run: validate every object, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Fail the operation when it has not finished after this long (e.g. 90s, 10m; default:
    /// the Application's flotilla.dev/sync-timeout annotation, else none).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// How long after a wave's last apply the next wave starts at the earliest (Argo CD's
    /// ARGOCD_SYNC_WAVE_DELAY; the time the wave takes to become Healthy counts towards it).
    #[arg(long, value_parser = parse_duration, default_value = DEFAULT_WAVE_DELAY_TEXT)]
    pub wave_delay: Duration,
    #[command(flatten)]
    pub directory: crate::cli::directory_args::DirectoryArgs,
    #[command(flatten)]
    pub customizations: crate::cli::customizations_args::CustomizationsArgs,
    #[command(flatten)]
    pub project: crate::cli::project_args::ProjectArgs,
    /// Map a repoURL to a local git repository or directory: URL=PATH (repeatable).
    #[arg(long = "repo", value_name = "URL=PATH")]
    pub repos: Vec<String>,
    /// Output format of the result.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Runs the sync.
///
/// # Errors
/// An unusable source or cluster, or an operation state that cannot be stored.
pub fn run(args: &SyncArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    let repos = command_repos(&args.repos, toolchain)?;
    let source = SyncSource::open(&args.path, &repos)?;
    let overrides = SyncOverrides {
        prune: args.prune,
        allow_empty: args.allow_empty,
        sync_options: args.sync_options.clone(),
        timeout: args.timeout,
        namespace: args.namespace.clone(),
        directory: args.directory.options(),
    };
    let process = args.customizations.read()?.over(ExecuteSettings {
        wave_delay: args.wave_delay,
        ..ExecuteSettings::default()
    });
    let projects = args.project.read()?;
    let SyncSettings {
        execute: settings,
        source: options,
    } = source.settings(&overrides, &process, &projects)?;
    if let Some(refused) = source.manual_sync_block(&projects, jiff::Timestamp::now()) {
        eprintln!("error: {refused}; nothing was applied");
        return Ok(ExitCode::FAILURE);
    }
    let namespace = settings
        .destination_namespace
        .clone()
        .context("no destination namespace: pass --namespace")?;
    let app = AppName::choose(args.app.as_deref(), source.app(), &args.path)?;
    if let Some(note) = app.note() {
        eprintln!("note: {note}");
    }
    let app = app.name;
    // Generated once, before the runtime starts (helm or kustomize may run): every attempt's
    // plan is built from these manifests.
    let generated = generate(toolchain, &source.root, &options);
    let load = |operation_id: &str| {
        SyncPlan::from_loaded(generated.clone(), Some(&namespace), operation_id)
    };
    if let Err(errors) = load("validate") {
        for error in &errors.0 {
            eprintln!("error: {error}");
        }
        eprintln!(
            "{} validation error(s); nothing was applied",
            errors.0.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let state = runtime.block_on(async {
        let cluster = KubeCluster::new(args.cluster.client().await?);
        let store = ConfigMapStore::new(cluster.client(), &namespace, &app);
        let (terminate, cancel) = watch::channel(false);
        let mut ctrl_c = signal(SignalKind::interrupt())?;
        crate::cli::interrupt::handled_by_the_command();
        tokio::spawn(async move {
            if ctrl_c.recv().await.is_some() {
                let _ = terminate.send(true);
            }
        });
        let view = LiveView::new();
        let request = SyncParams {
            app: &app,
            revision: source.revision.as_deref(),
            dry_run: args.dry_run,
            prune_confirmation: if args.confirm_prune {
                PruneConfirmation::Given
            } else {
                PruneConfirmation::Absent
            },
        };
        let state = run_sync(
            &cluster,
            &store,
            &load,
            &request,
            &settings,
            cancel,
            &|event| view.show(event),
        )
        .await?;
        tracing::info!(requests = %cluster.request_counts(), "sync finished");
        anyhow::Ok(state)
    })?;
    print!(
        "{}",
        args.output.print(&Synced {
            app: &app,
            state: &state
        })?
    );
    Ok(match state.phase {
        OperationPhase::Succeeded => ExitCode::SUCCESS,
        OperationPhase::Running => {
            eprintln!(
                "{}; run again with --confirm-prune to prune them (the operation resumes)",
                state.message
            );
            ExitCode::FAILURE
        }
        _ => ExitCode::FAILURE,
    })
}

/// One `--sync-option`: a known option with true or false (or confirm, for Prune).
fn parse_sync_option(text: &str) -> Result<SyncOptions, flotilla_core::sync::OptionError> {
    text.parse()
}

/// An Application's finished (or stopped) operation, as `sync` prints it.
struct Synced<'a> {
    app: &'a str,
    state: &'a OperationState,
}

impl Printable for Synced<'_> {
    /// The whole operation state.
    fn data(&self) -> impl serde::Serialize + '_ {
        self.state
    }

    fn names(&self) -> Vec<String> {
        self.state
            .resources
            .iter()
            .map(|r| object_name(&r.group, &r.kind, &r.name))
            .collect()
    }

    fn table(&self, wide: bool) -> String {
        report(self.app, self.state, wide)
    }
}

/// A summary like `argocd app sync` prints, then one row per object; `wide` adds the phase and
/// wave each ran in.
fn report(app: &str, state: &OperationState, wide: bool) -> String {
    let time = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.as_ref().map(|t| t.0.to_string()).unwrap_or_default()
    };
    let mut text = format!(
        "Name:          {app}\nOperation:     Sync\nSync Revision: {}\nPhase:         {:?}\nStart:         {}\nFinished:      {}\nMessage:       {}\n\n",
        state.revision.as_deref().unwrap_or("(local directory)"),
        state.phase,
        time(&state.started_at),
        time(&state.finished_at),
        state.message
    );
    let mut headers = vec![];
    if wide {
        headers.extend(["PHASE", "WAVE"]);
    }
    headers.extend([
        "GROUP",
        "KIND",
        "NAMESPACE",
        "NAME",
        "STATUS",
        "HEALTH",
        "HOOK",
        "MESSAGE",
    ]);
    let mut table = Table::new(&headers);
    for record in &state.resources {
        let mut row = vec![];
        if wide {
            row.extend([record.sync_phase.to_string(), record.wave.to_string()]);
        }
        row.extend([
            record.group.clone(),
            record.kind.clone(),
            record.namespace.clone(),
            record.name.clone(),
            format!("{:?}", record.status),
            record.health.map(|h| format!("{h:?}")).unwrap_or_default(),
            record.hook_type.map(|h| h.to_string()).unwrap_or_default(),
            record.message.clone(),
        ]);
        table.row(row);
    }
    text.push_str(&table.render());
    text
}

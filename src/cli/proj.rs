//! `flotilla proj get|list`: AppProjects as `argocd proj` shows them — what each permits to
//! deploy (source repositories) and where (destinations); `-o wide` adds the cluster-scoped kinds
//! it permits and its sync windows.

use std::process::ExitCode;

use kube::Api;

use crate::cli::get::{ListArgs, ShowArgs, show};
use flotilla_core::api::AppProject;
use flotilla_core::table::Table;

/// Arguments of `flotilla proj`.
#[derive(Debug, clap::Args)]
pub struct ProjArgs {
    #[command(subcommand)]
    pub command: ProjCommand,
    /// Namespace of the AppProjects (default: the kubeconfig's).
    #[arg(long, short = 'n', global = true)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: super::connect::KubeconfigArgs,
}

/// The `proj` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProjCommand {
    /// Show the AppProject (-o yaml|json: the object).
    Get(ShowArgs),
    /// List the AppProjects of the namespace (or all, -A).
    List(ListArgs),
}

/// Runs a `proj` subcommand.
///
/// # Errors
/// No cluster, no such AppProject, or a refused request.
pub fn run(args: &ProjArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    let text = runtime.block_on(async {
        let (client, namespace) = args.cluster.client_in(args.namespace.as_deref()).await?;
        match &args.command {
            ProjCommand::Get(get) => {
                let api: Api<AppProject> = Api::namespaced(client, &namespace);
                show(&api, &get.name, get.output, projects_table).await
            }
            ProjCommand::List(list) => {
                let (listing, scope) = list.listing(&namespace);
                let api = crate::cli::get::api(client, scope);
                listing.list(api, projects_table).await
            }
        }
    })?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// One row per AppProject: name, description, source repositories and destinations
/// (`server|name/namespace`); `wide` adds the cluster-scoped kinds it permits and the number of
/// sync windows.
#[must_use]
pub fn projects_table(projects: &[AppProject], wide: bool) -> Table {
    let mut headers = vec!["NAME", "DESCRIPTION", "SOURCES", "DESTINATIONS"];
    if wide {
        headers.extend(["CLUSTER-RESOURCES", "WINDOWS"]);
    }
    let mut table = Table::new(&headers);
    for project in projects {
        let spec = &project.spec;
        let destinations: Vec<String> = spec
            .destinations
            .iter()
            .map(|d| {
                let cluster = if d.server.is_empty() {
                    &d.name
                } else {
                    &d.server
                };
                format!("{cluster},{}", d.namespace)
            })
            .collect();
        let mut row = vec![
            project.metadata.name.clone().unwrap_or_default(),
            spec.description.clone(),
            spec.source_repos.join(","),
            destinations.join(";"),
        ];
        if wide {
            let kinds: Vec<String> = spec
                .cluster_resource_whitelist
                .iter()
                .map(|k| format!("{}/{}", k.group, k.kind))
                .collect();
            row.extend([kinds.join(","), spec.sync_windows.len().to_string()]);
        }
        table.row(row);
    }
    table
}

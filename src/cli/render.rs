//! `flotilla render`: expands an ApplicationSet file into Applications, offline, and prints them
//! as YAML, JSON or a table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::api::document::parse_application_set;
use crate::api::{Application, ApplicationSet};
use crate::cluster::inventory::StaticInventory;
use crate::project::Projects;
use crate::render::admission::{RefusedApplication, admitted, refusals_message};
use crate::render::{Sources, render_application_set};
use crate::repo::LocalRepos;
use crate::table::Table;

/// Output formats of `flotilla render`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderOutput {
    #[default]
    Yaml,
    Json,
    Table,
}

/// The ApplicationSet and the sources its generators read, shared by the subcommands that
/// render one (`render`, `simulate`).
#[derive(Debug, Clone, clap::Args)]
pub struct AppSetArgs {
    /// The ApplicationSet file (flotilla.dev/v1alpha1 or argoproj.io/v1alpha1).
    pub appset: PathBuf,
    /// Map a repoURL to a local git repository or directory: URL=PATH (repeatable).
    #[arg(long = "repo", value_name = "URL=PATH")]
    pub repos: Vec<String>,
    /// A YAML list of Argo CD-style cluster Secrets, for the clusters generator.
    #[arg(long, value_name = "FILE")]
    pub clusters: Option<PathBuf>,
    #[command(flatten)]
    pub project: crate::cli::project_args::ProjectArgs,
}

/// Arguments of `flotilla render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub input: AppSetArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: RenderOutput,
}

/// An ApplicationSet file, its Applications (sorted by name) and the repositories they map to.
pub struct Rendered {
    /// The parsed ApplicationSet.
    pub appset: ApplicationSet,
    /// Its Applications that their projects admit.
    pub applications: Vec<Application>,
    /// Its Applications that their projects refuse (the controller would not write them).
    pub refused: Vec<RefusedApplication>,
    /// The `--project` files' projects.
    pub projects: Projects,
    /// The `--repo` mappings.
    pub repos: LocalRepos,
}

impl AppSetArgs {
    /// Reads and renders the ApplicationSet.
    ///
    /// # Errors
    /// Unreadable files, invalid YAML, generator or template errors, invalid Applications.
    pub fn render(&self) -> anyhow::Result<Rendered> {
        let file = self.appset.display().to_string();
        let text =
            std::fs::read_to_string(&self.appset).with_context(|| format!("cannot read {file}"))?;
        let appset = parse_application_set(&file, &text)?;
        let inventory = match &self.clusters {
            Some(path) => {
                let name = path.display().to_string();
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
                StaticInventory::from_yaml(&name, &text)?
            }
            None => StaticInventory::default(),
        };
        let repos = LocalRepos::from_mappings(&self.repos)?;
        let sources = Sources::offline(&inventory, &repos);
        let rendered =
            render_application_set(&appset, sources).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
        let projects = self.project.read()?;
        let (applications, refused) = admitted(rendered, &projects, inventory.registrations());
        if !refused.is_empty() {
            eprintln!("warning: {file}: {}", refusals_message(&refused));
        }
        Ok(Rendered {
            appset,
            applications,
            refused,
            projects,
            repos,
        })
    }
}

/// The Applications `args` describe, sorted by name.
///
/// # Errors
/// See [`AppSetArgs::render`].
pub fn render_from_args(args: &AppSetArgs) -> anyhow::Result<Vec<Application>> {
    Ok(args.render()?.applications)
}

/// Renders and prints the Applications their projects admit; errors go to stderr with exit
/// code 1, and so do refusals by a `--project` (after the admitted Applications are printed).
///
/// # Errors
/// See [`render_from_args`].
pub fn run(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let Rendered {
        applications,
        refused,
        ..
    } = args.input.render()?;
    let text = match args.output {
        RenderOutput::Yaml => serde_saphyr::to_string(&applications)?,
        RenderOutput::Json => serde_json::to_string_pretty(&applications)? + "\n",
        RenderOutput::Table => table(&applications),
    };
    print!("{text}");
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn table(applications: &[Application]) -> String {
    let mut table = Table::new(&["NAME", "PROJECT", "DESTINATION", "NAMESPACE", "SOURCE PATH"]);
    for app in applications {
        let destination = &app.spec.destination;
        table.row(vec![
            app.metadata.name.clone().unwrap_or_default(),
            app.spec.project.clone(),
            destination
                .server
                .clone()
                .or_else(|| destination.name.clone())
                .unwrap_or_default(),
            destination.namespace.clone().unwrap_or_default(),
            app.spec.source.path.clone(),
        ]);
    }
    table.render()
}

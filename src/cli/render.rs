//! `flotilla render`: expands an ApplicationSet file into Applications, offline, and prints them
//! in the one output vocabulary (`-o yaml` by default; `table`, `wide`, `json`, `name`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::cli::command_repos::command_repos;
use crate::cli::get::{PLACEMENT, placement};
use crate::cli::output::{OutputFormat, Printable, resource_name};
use crate::cluster::generator_inputs::inventory::StaticInventory;
use crate::render::admission::{RefusedApplication, admitted, refusals_message};
use crate::render::{Sources, render_application_set};
use crate::repo::cache::RepoCache;
use crate::source::Toolchain;
use flotilla_core::api::application_set::StrategyType;
use flotilla_core::api::document::parse_application_set;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::project::Projects;
use flotilla_core::rollout::RolloutConfig;
use flotilla_core::table::Table;

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
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Yaml)]
    pub output: OutputFormat,
}

/// An ApplicationSet file, its Applications (sorted by name) and the source resolver its
/// generators read through, which the Applications' sources are read through too (`simulate`).
pub struct Rendered {
    /// The parsed ApplicationSet.
    pub appset: ApplicationSet,
    /// Its Applications that their projects admit.
    pub applications: Vec<Application>,
    /// Its Applications that their projects refuse (the controller would not write them).
    pub refused: Vec<RefusedApplication>,
    /// The `--project` files' projects.
    pub projects: Projects,
    /// The command's source resolver (with the `--repo` mappings), removed with it.
    pub repos: RepoCache,
}

impl AppSetArgs {
    /// Reads and renders the ApplicationSet.
    ///
    /// # Errors
    /// Unreadable files, invalid YAML, generator or template errors, invalid Applications.
    pub fn render(&self, toolchain: &Arc<Toolchain>) -> anyhow::Result<Rendered> {
        let file = self.appset.display().to_string();
        let text =
            std::fs::read_to_string(&self.appset).with_context(|| format!("cannot read {file}"))?;
        let appset = parse_application_set(&file, &text)?;
        self.render_appset(&file, appset, toolchain)
    }

    /// Whether the file holds more than one document (several ApplicationSets).
    ///
    /// # Errors
    /// The file cannot be read or is not YAML.
    pub fn holds_several(&self) -> anyhow::Result<bool> {
        let file = self.appset.display().to_string();
        let text =
            std::fs::read_to_string(&self.appset).with_context(|| format!("cannot read {file}"))?;
        Ok(documents(&file, &text)?.len() > 1)
    }

    /// Reads and renders every ApplicationSet of the file and of `also` (each file may hold
    /// several, as YAML documents), in order.
    ///
    /// # Errors
    /// As [`Self::render`], for the first that fails.
    pub fn render_each(
        &self,
        also: &[PathBuf],
        toolchain: &Arc<Toolchain>,
    ) -> anyhow::Result<Vec<Rendered>> {
        let mut rendered = Vec::new();
        for path in std::iter::once(&self.appset).chain(also) {
            let file = path.display().to_string();
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read {file}"))?;
            let documents = documents(&file, &text)?;
            if documents.len() <= 1 {
                let appset = parse_application_set(&file, &text)?;
                rendered.push(self.render_appset(&file, appset, toolchain)?);
                continue;
            }
            for (index, document) in documents.iter().enumerate() {
                let named = format!("{file} (document {})", index + 1);
                let appset = parse_application_set(&named, &document.to_string())?;
                rendered.push(self.render_appset(&named, appset, toolchain)?);
            }
        }
        Ok(rendered)
    }

    /// Renders `appset`, read from `file` (or the object named there), with these arguments'
    /// sources, read (and later generated) with `toolchain`.
    ///
    /// # Errors
    /// As [`Self::render`].
    pub fn render_appset(
        &self,
        file: &str,
        appset: ApplicationSet,
        toolchain: &Arc<Toolchain>,
    ) -> anyhow::Result<Rendered> {
        let file = file.to_owned();
        if let Some(strategy) = appset
            .spec
            .strategy
            .as_ref()
            .filter(|s| s.type_ == StrategyType::RollingSync)
        {
            // The controller would only say InvalidRolloutConfig; a command says it at once.
            RolloutConfig::from_strategy(strategy).map_err(|error| {
                anyhow::anyhow!(
                    "{file}: ApplicationSet {}: spec.strategy.rollingSync: {error}",
                    appset.metadata.name.as_deref().unwrap_or_default()
                )
            })?;
        }
        let inventory = match &self.clusters {
            Some(path) => {
                let name = path.display().to_string();
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
                StaticInventory::from_yaml(&name, &text)?
            }
            None => StaticInventory::default(),
        };
        let repos = command_repos(&self.repos, toolchain)?;
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

/// The documents of `text` (read from `file`), empty ones left out.
///
/// # Errors
/// The text is not YAML.
fn documents(file: &str, text: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple_with_options(
        text,
        flotilla_core::manifest::limits::yaml_options(),
    )
    .map_err(|error| flotilla_core::yaml::YamlError::new(file, &error))?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The Applications `args` describe, sorted by name.
///
/// # Errors
/// See [`AppSetArgs::render`].
pub fn render_from_args(
    args: &AppSetArgs,
    toolchain: &Arc<Toolchain>,
) -> anyhow::Result<Vec<Application>> {
    Ok(args.render(toolchain)?.applications)
}

/// Renders and prints the Applications their projects admit; errors go to stderr with exit
/// code 1, and so do refusals by a `--project` (after the admitted Applications are printed).
///
/// # Errors
/// See [`render_from_args`].
pub fn run(args: &RenderArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    print_rendered(&args.input.render(toolchain)?, args.output)
}

/// Prints the Applications `rendered` admits in `output`; exit code 1 when a project refused
/// some (said on stderr by the rendering).
///
/// # Errors
/// They cannot be serialized.
pub fn print_rendered(rendered: &Rendered, output: OutputFormat) -> anyhow::Result<ExitCode> {
    let Rendered {
        applications,
        refused,
        ..
    } = rendered;
    print!("{}", output.print(&RenderedApplications(applications))?);
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Rendered Applications, as `render` prints them.
struct RenderedApplications<'a>(&'a [Application]);

impl Printable for RenderedApplications<'_> {
    fn data(&self) -> impl serde::Serialize + '_ {
        self.0
    }

    fn names(&self) -> Vec<String> {
        self.0.iter().map(resource_name).collect()
    }

    /// Name, project, destination, namespace and path; `wide` adds the repository and target
    /// revision.
    fn table(&self, wide: bool) -> String {
        let shown = |column: &usize| wide || !matches!(PLACEMENT[*column], "REPO" | "TARGET");
        let columns: Vec<usize> = (0..PLACEMENT.len()).filter(shown).collect();
        let headers: Vec<&str> = std::iter::once("NAME")
            .chain(columns.iter().map(|&c| PLACEMENT[c]))
            .collect();
        let mut table = Table::new(&headers);
        for app in self.0 {
            let cells = placement(app);
            table.row(
                std::iter::once(app.metadata.name.clone().unwrap_or_default())
                    .chain(columns.iter().map(|&c| cells[c].clone()))
                    .collect(),
            );
        }
        table.render()
    }
}

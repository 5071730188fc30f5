//! `--project FILE` (repeatable): AppProjects read from files for commands that run without a
//! cluster, as the controller reads them from its namespace.

use std::path::PathBuf;

use anyhow::Context;

use crate::api::project_document::parse_app_project;
use crate::project::Projects;

/// The `--project` flag.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProjectArgs {
    /// An AppProject file (flotilla.dev/v1alpha1 or argoproj.io/v1alpha1; repeatable). Without
    /// one, the built-in `default` project applies: everything permitted, no sync windows.
    #[arg(long = "project", value_name = "FILE")]
    pub projects: Vec<PathBuf>,
}

impl ProjectArgs {
    /// The projects of the files (a later file's project of the same name wins).
    ///
    /// # Errors
    /// A file cannot be read or is not an AppProject Flotilla understands.
    pub fn read(&self) -> anyhow::Result<Projects> {
        let mut projects = Vec::new();
        for path in &self.projects {
            let file = path.display().to_string();
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read {file}"))?;
            let project = parse_app_project(&file, &text)?;
            projects.push((
                project.metadata.name.clone().unwrap_or_default(),
                project.spec,
            ));
        }
        Ok(Projects::new(projects))
    }
}

//! `--project FILE` of `flotilla render`, `plan`, `sync`, `diff` and `simulate`: AppProjects
//! (flotilla.dev or Argo CD's argoproj.io YAML) that Applications are checked against offline,
//! with the same check the controller makes. Without the flag no project is checked.

use std::path::PathBuf;

use anyhow::Context as _;

use crate::api::document::parse_app_project;
use crate::project::Projects;

/// Which project files to check against.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProjectArgs {
    /// An AppProject file to check Applications against, as the controller does (repeatable;
    /// Argo CD's YAML accepted). An Application naming a project not given is refused, except
    /// `default`, which permits everything unless given. Without the flag nothing is checked.
    #[arg(long = "project", value_name = "FILE")]
    pub projects: Vec<PathBuf>,
}

impl ProjectArgs {
    /// The projects of the files; without files, every project permits everything.
    ///
    /// # Errors
    /// An unreadable file or one that is not a usable AppProject, naming the file and field.
    pub fn read(&self) -> anyhow::Result<Projects> {
        if self.projects.is_empty() {
            return Ok(Projects::unchecked());
        }
        let mut projects = Vec::new();
        for path in &self.projects {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {file}"))?;
            let project = parse_app_project(&file, &text)?;
            projects.push((project.metadata.name.unwrap_or_default(), project.spec));
        }
        Ok(Projects::new(projects))
    }
}

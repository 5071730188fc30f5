//! `--project FILE` of `flotilla render`, `plan`, `sync`, `diff` and `simulate`: AppProjects
//! (flotilla.dev or Argo CD's argoproj.io YAML) that Applications are checked against offline,
//! with the same check the controller makes. Without the flag no project is checked.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use flotilla_core::api::AppProject;
use flotilla_core::api::document::parse_app_project;
use flotilla_generators::source::{IN_CLUSTER_NAME, IN_CLUSTER_SERVER};

use flotilla_core::project::{Admission, ClusterIdentity, Projects};

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
    /// The projects of the files, kept in the namespace the files name (the control plane's,
    /// for `sourceNamespaces`); without files, every project permits everything.
    ///
    /// # Errors
    /// An unreadable file or one that is not a usable AppProject, naming the file and field.
    pub fn read(&self) -> anyhow::Result<Projects> {
        if self.projects.is_empty() {
            return Ok(Projects::unchecked());
        }
        let projects = self
            .projects
            .iter()
            .map(|path| read(path))
            .collect::<anyhow::Result<Vec<_>>>()?;
        // The control plane's namespace is where the projects live: their files' namespace.
        let namespace = projects.iter().find_map(|p| p.metadata.namespace.clone());
        let projects = Projects::new(
            projects
                .into_iter()
                .map(|p| (p.metadata.name.unwrap_or_default(), p.spec)),
        );
        Ok(match namespace {
            Some(namespace) => projects.in_namespace(&namespace),
            None => projects,
        })
    }

    /// The admission of objects by the one project given, deploying to the in-cluster
    /// destination (`flotilla plan`, which has no Application); `None` without `--project`.
    ///
    /// # Errors
    /// More than one file, or one that cannot be read.
    pub fn single(&self) -> anyhow::Result<Option<Admission>> {
        let [path] = self.projects.as_slice() else {
            anyhow::ensure!(
                self.projects.is_empty(),
                "give one --project: the objects are judged by one project"
            );
            return Ok(None);
        };
        let project = read(path)?;
        Ok(Some(Admission {
            project: project.metadata.name.unwrap_or_default(),
            spec: project.spec,
            cluster: ClusterIdentity {
                server: IN_CLUSTER_SERVER.to_owned(),
                name: IN_CLUSTER_NAME.to_owned(),
            },
            ..Admission::default()
        }))
    }
}

/// The AppProject in the file at `path`.
fn read(path: &Path) -> anyhow::Result<AppProject> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {file}"))?;
    Ok(parse_app_project(&file, &text)?)
}

//! The one project check of an Application, used by every runner (the controller, `render`,
//! `plan`, `sync`, `simulate`): its project exists, may be used from the Application's
//! namespace and permits its repository and destination;
//! the [`Admission`] then judges each object before the first write.

use std::sync::Arc;

use crate::api::app_project::AppProjectSpec;
use crate::api::application::ApplicationSpec;

use super::Projects;
use super::destinations::{ClusterIdentity, Place, permit_destination};
use super::kinds::{Deployed, permit_object};
use super::memos::ProjectMemos;
use super::refusal::Refusal;
use super::source_namespaces::permit_source_namespace;
use super::sources::permit_source;

/// Where an Application's projects are looked up, which cluster its destination is and which
/// namespace the Application lives in (`None`: unknown, taken as the control plane's).
#[derive(Debug, Clone, Copy)]
pub struct ProjectScope<'a> {
    pub projects: &'a Projects,
    pub cluster: &'a ClusterIdentity,
    pub namespace: Option<&'a str>,
}

/// An Application its project admitted: what its objects are judged against.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    pub project: String,
    pub spec: AppProjectSpec,
    pub cluster: ClusterIdentity,
    /// Where the project's globs are kept (its [`super::Projects`]'s).
    pub memos: Arc<ProjectMemos>,
}

impl Default for Admission {
    /// The built-in `default` project's admission: every object is permitted.
    fn default() -> Self {
        Self {
            project: crate::api::app_project::DEFAULT_PROJECT.to_owned(),
            spec: super::permit_all(),
            cluster: ClusterIdentity::default(),
            memos: Arc::default(),
        }
    }
}

impl Admission {
    /// Whether the project permits deploying `object`.
    ///
    /// # Errors
    /// The refusal naming the object and the rule.
    pub fn permit(&self, object: Deployed<'_>) -> Result<(), Refusal> {
        permit_object(
            &self.project,
            &self.spec,
            &self.cluster,
            object,
            &self.memos,
        )
    }
}

/// Checks the Application `spec` against its project in `scope`.
///
/// # Errors
/// The project is missing or refuses the repository or the destination.
pub fn admit(spec: &ApplicationSpec, scope: ProjectScope<'_>) -> Result<Admission, Refusal> {
    let name = if spec.project.is_empty() {
        crate::api::app_project::DEFAULT_PROJECT
    } else {
        spec.project.as_str()
    };
    let project = scope
        .projects
        .get(name)
        .map_err(|missing| Refusal::MissingProject {
            project: missing.name,
        })?;
    let memos = scope.projects.memos();
    permit_source_namespace(
        name,
        &project,
        scope.projects.namespace(),
        scope.namespace,
        memos,
    )?;
    let scoped = scope.projects.scoped_repositories(name);
    for source in spec.all_sources() {
        permit_source(name, &project, scoped, &source.repo_url, memos)?;
    }
    let namespace = spec.destination.namespace.as_deref().unwrap_or_default();
    permit_destination(
        name,
        &project,
        Place {
            cluster: scope.cluster,
            namespace,
        },
        memos,
    )?;
    Ok(Admission {
        project: name.to_owned(),
        spec: project.into_owned(),
        cluster: scope.cluster.clone(),
        memos: scope.projects.memos_handle(),
    })
}

//! Projects: what the Applications of each project may deploy, from where, to where and when.
//! [`Projects`] is the pure lookup every decision uses (the controller fills it from a watch,
//! the CLI from `--project` files); the built-in `default` project permits everything until the
//! operator creates one of that name. The projects also carry the namespace they live in (the
//! control plane's: Applications elsewhere need `sourceNamespaces`) and the repositories each
//! project's own repository Secrets name (permitted as if in `sourceRepos`).

pub mod admission;
pub mod destinations;
pub mod kinds;
pub mod memos;
pub mod pattern;
pub mod refusal;
pub mod source_namespaces;
pub mod sources;
pub mod windows;

pub use admission::{Admission, ProjectScope, admit};
pub use destinations::ClusterIdentity;
pub use kinds::Deployed;
pub use memos::ProjectMemos;
pub use refusal::Refusal;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::api::app_project::{AppProjectSpec, DEFAULT_PROJECT, GroupKind, ProjectDestination};

/// A project an Application names that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("project {name:?} does not exist")]
pub struct MissingProject {
    pub name: String,
}

/// The projects known now, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Projects {
    by_name: BTreeMap<String, AppProjectSpec>,
    /// Every name is the permit-everything project (nothing is checked).
    unchecked: bool,
    /// The namespace the projects live in (the control plane's), when known.
    namespace: Option<String>,
    /// The repository URLs of the Secrets scoped to each project.
    scoped_repositories: BTreeMap<String, Vec<String>>,
    /// The projects' globs and windows parsed so far (the owner's, shared by every copy).
    memos: Arc<ProjectMemos>,
}

impl Projects {
    /// The given projects (a later one of the same name wins).
    #[must_use]
    pub fn new(projects: impl IntoIterator<Item = (String, AppProjectSpec)>) -> Self {
        Self {
            by_name: projects.into_iter().collect(),
            ..Self::default()
        }
    }

    /// These projects, kept in the control plane's namespace `namespace`: Applications of other
    /// namespaces may use only projects whose `sourceNamespaces` permit theirs.
    #[must_use]
    pub fn in_namespace(self, namespace: &str) -> Self {
        Self {
            namespace: Some(namespace.to_owned()),
            ..self
        }
    }

    /// These projects, with the repositories of project-scoped repository Secrets, as
    /// (project, URL) pairs.
    #[must_use]
    pub fn with_scoped_repositories(
        self,
        scoped: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        let mut scoped_repositories: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (project, url) in scoped {
            scoped_repositories.entry(project).or_default().push(url);
        }
        Self {
            scoped_repositories,
            ..self
        }
    }

    /// These projects, their globs and windows kept in `memos` (the caller's, which outlives
    /// this snapshot of the projects: a controller keeps one for its life).
    #[must_use]
    pub fn with_memos(self, memos: Arc<ProjectMemos>) -> Self {
        Self { memos, ..self }
    }

    /// Where the projects' parsed globs and windows are kept.
    #[must_use]
    pub fn memos(&self) -> &ProjectMemos {
        &self.memos
    }

    /// [`Self::memos`], shared (for what outlives this borrow, such as an [`Admission`]).
    #[must_use]
    pub fn memos_handle(&self) -> Arc<ProjectMemos> {
        Arc::clone(&self.memos)
    }

    /// The control plane's namespace, when known.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The repositories of the Secrets scoped to project `name`.
    #[must_use]
    pub fn scoped_repositories(&self, name: &str) -> &[String] {
        self.scoped_repositories
            .get(name)
            .map_or(&[], Vec::as_slice)
    }

    /// No projects are checked: every name permits everything (the CLI without `--project`).
    #[must_use]
    pub fn unchecked() -> Self {
        Self {
            unchecked: true,
            ..Self::default()
        }
    }

    /// The project `name`: the stored one, or the permit-everything `default` when none of that
    /// name is stored.
    ///
    /// # Errors
    /// No project of that name (other than `default`).
    pub fn get(&self, name: &str) -> Result<Cow<'_, AppProjectSpec>, MissingProject> {
        match self.by_name.get(name) {
            Some(spec) => Ok(Cow::Borrowed(spec)),
            None if self.unchecked || name == DEFAULT_PROJECT || name.is_empty() => {
                Ok(Cow::Owned(permit_all()))
            }
            None => Err(MissingProject {
                name: name.to_owned(),
            }),
        }
    }
}

/// The built-in `default` project: any repository, any destination, any kind, and (as Argo CD
/// creates it, without `sourceNamespaces`) only for Applications in the control plane's
/// namespace.
#[must_use]
pub fn permit_all() -> AppProjectSpec {
    AppProjectSpec {
        description: "the built-in default project: permits everything".to_owned(),
        source_repos: vec!["*".to_owned()],
        destinations: vec![ProjectDestination {
            server: "*".to_owned(),
            name: "*".to_owned(),
            namespace: "*".to_owned(),
        }],
        cluster_resource_whitelist: vec![GroupKind {
            group: "*".to_owned(),
            kind: "*".to_owned(),
            name: String::new(),
        }],
        ..AppProjectSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_permits_everything_until_one_is_stored() {
        let none = Projects::default();
        assert_eq!(none.get("default").unwrap().into_owned(), permit_all());
        assert_eq!(none.get("").unwrap().into_owned(), permit_all());
        assert_eq!(
            none.get("team-a").unwrap_err(),
            MissingProject {
                name: "team-a".to_owned()
            }
        );
        let strict = AppProjectSpec {
            source_repos: vec!["https://git.example.com/*".to_owned()],
            ..AppProjectSpec::default()
        };
        let stored = Projects::new([("default".to_owned(), strict.clone())]);
        assert_eq!(stored.get("default").unwrap().into_owned(), strict);
        let unchecked = Projects::unchecked();
        assert_eq!(unchecked.get("team-a").unwrap().into_owned(), permit_all());
    }
}

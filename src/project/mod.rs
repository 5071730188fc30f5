//! Projects: what the Applications of each project may deploy, from where, to where and when.
//! [`Projects`] is the pure lookup every decision uses (the controller fills it from a watch,
//! the CLI from `--project` files); the built-in `default` project permits everything until the
//! operator creates one of that name.

pub mod admission;
pub mod destinations;
pub mod kinds;
pub mod pattern;
pub mod refusal;
pub mod sources;
pub mod windows;

pub use admission::{Admission, ProjectScope, admit};
pub use destinations::ClusterIdentity;
pub use kinds::Deployed;
pub use refusal::Refusal;

use std::borrow::Cow;
use std::collections::BTreeMap;

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
}

impl Projects {
    /// The given projects (a later one of the same name wins).
    #[must_use]
    pub fn new(projects: impl IntoIterator<Item = (String, AppProjectSpec)>) -> Self {
        Self {
            by_name: projects.into_iter().collect(),
            unchecked: false,
        }
    }

    /// No projects are checked: every name permits everything (the CLI without `--project`).
    #[must_use]
    pub fn unchecked() -> Self {
        Self {
            by_name: BTreeMap::new(),
            unchecked: true,
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

/// The built-in `default` project: any repository, any destination, any kind (as Argo CD
/// creates it).
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
        source_namespaces: vec!["*".to_owned()],
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

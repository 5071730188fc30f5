//! Why a project refuses an Application or one of its objects: the project, what was refused
//! and the rule that refused it, in words a user can act on.

use super::pattern::PatternError;

/// A refusal by a project.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("project {project:?} does not exist")]
    MissingProject { project: String },
    #[error("project {project:?}: {field}: {error}")]
    Pattern {
        project: String,
        field: String,
        #[source]
        error: PatternError,
    },
    #[error("repository {repo} is not permitted in project {project:?}: {rule}")]
    Source {
        project: String,
        repo: String,
        rule: String,
    },
    #[error("an Application in namespace {namespace} may not use project {project:?}: {rule}")]
    SourceNamespace {
        project: String,
        namespace: String,
        rule: String,
    },
    #[error("destination {destination} is not permitted in project {project:?}: {rule}")]
    Destination {
        project: String,
        destination: String,
        rule: String,
    },
    #[error("{object} is not permitted in project {project:?}: {rule}")]
    Kind {
        project: String,
        object: String,
        rule: String,
    },
}

/// The rule text for a value no allow entry of `field` matched; `shown` are its allow entries
/// as the user wrote them.
pub(super) fn no_entry(field: &str, shown: &[String]) -> String {
    if shown.is_empty() {
        format!("{field} permits nothing (it has no entry that is not a `!` denial)")
    } else {
        format!("no {field} entry permits it ({})", shown.join(", "))
    }
}

//! Which namespaces an Application may live in to use a project (`sourceNamespaces`, Argo CD's
//! "Applications in any namespace"): one in the control plane's namespace (where the projects
//! live) always may; one elsewhere only when some entry matches its namespace and no `!` entry
//! does. The built-in `default` project lists none, so Applications outside the control plane's
//! namespace need a project that names their namespace, as in Argo CD.

use crate::api::app_project::AppProjectSpec;

use super::memos::ProjectMemos;
use super::pattern::{ListVerdict, judge_list};
use super::refusal::{Refusal, no_entry};

/// Whether `project` (named `name`, kept in namespace `control`) may be used by an Application
/// in namespace `namespace`. Unknown namespaces (an offline file that names none) count as the
/// control plane's. Globs are kept in `memos`.
///
/// # Errors
/// The refusal naming the rule, or an unusable entry.
pub fn permit_source_namespace(
    name: &str,
    project: &AppProjectSpec,
    control: Option<&str>,
    namespace: Option<&str>,
    memos: &ProjectMemos,
) -> Result<(), Refusal> {
    let (Some(control), Some(namespace)) = (control, namespace) else {
        return Ok(());
    };
    if namespace == control {
        return Ok(());
    }
    let verdict = judge_list(&project.source_namespaces, namespace, str::to_owned, memos).map_err(
        |(index, error)| Refusal::Pattern {
            project: name.to_owned(),
            field: format!("sourceNamespaces[{index}]"),
            error,
        },
    )?;
    let rule = match verdict {
        ListVerdict::Permitted => return Ok(()),
        ListVerdict::Denied(entry) => format!("denied by sourceNamespaces entry {entry:?}"),
        ListVerdict::Unmatched => {
            let shown: Vec<String> = project
                .source_namespaces
                .iter()
                .filter(|entry| !entry.starts_with('!'))
                .map(|entry| format!("{entry:?}"))
                .collect();
            format!(
                "{} (only Applications in {control} may use a project without one)",
                no_entry("sourceNamespaces", &shown)
            )
        }
    };
    Err(Refusal::SourceNamespace {
        project: name.to_owned(),
        namespace: namespace.to_owned(),
        rule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::permit_source_namespace`] with memos of its own.
    fn permit_source_namespace(
        name: &str,
        project: &AppProjectSpec,
        control: Option<&str>,
        namespace: Option<&str>,
    ) -> Result<(), Refusal> {
        super::permit_source_namespace(name, project, control, namespace, &ProjectMemos::default())
    }

    fn project(entries: &[&str]) -> AppProjectSpec {
        AppProjectSpec {
            source_namespaces: entries.iter().map(|e| (*e).to_owned()).collect(),
            ..AppProjectSpec::default()
        }
    }

    #[test]
    fn only_listed_namespaces_other_than_the_control_planes_may_use_a_project() {
        let team = project(&["team-*", "!team-secret"]);
        let permit =
            |namespace| permit_source_namespace("team", &team, Some("flotilla"), namespace);
        assert!(permit(Some("flotilla")).is_ok());
        assert!(permit(Some("team-a")).is_ok());
        assert!(permit(None).is_ok());
        assert_eq!(
            permit(Some("team-secret")).unwrap_err().to_string(),
            "an Application in namespace team-secret may not use project \"team\": denied by \
             sourceNamespaces entry \"!team-secret\""
        );
        assert_eq!(
            permit(Some("shop")).unwrap_err().to_string(),
            "an Application in namespace shop may not use project \"team\": no sourceNamespaces \
             entry permits it (\"team-*\") (only Applications in flotilla may use a project \
             without one)"
        );
        let none = project(&[]);
        assert!(
            permit_source_namespace("default", &none, Some("flotilla"), Some("shop"))
                .unwrap_err()
                .to_string()
                .contains("sourceNamespaces permits nothing")
        );
        assert!(permit_source_namespace("default", &none, None, Some("shop")).is_ok());
    }
}

//! The check against the server before anything is written (Argo CD's dry run before a sync):
//! every object's apiVersion and kind must be served. An object whose kind is not served yet is
//! accepted when a CustomResourceDefinition of this sync (not a hook) defines it, or when it
//! carries `SkipDryRunOnMissingResource=true` (its CRD comes from a hook, another Application or
//! an operator); any other such object fails the sync before the first write, by name.

use std::collections::BTreeSet;
use std::fmt;

use super::options::{SyncOptionKey, SyncOptions};
use super::plan::SyncPlan;
use super::task::SyncTask;

/// Why an object of a kind the server does not serve yet is synced anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingKindExcuse {
    /// A CustomResourceDefinition of this sync defines the kind.
    CreatedBySync,
    /// The object carries `SkipDryRunOnMissingResource=true`.
    SkipDryRun,
}

impl fmt::Display for MissingKindExcuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CreatedBySync => "its CustomResourceDefinition is created by this sync",
            Self::SkipDryRun => "SkipDryRunOnMissingResource=true",
        })
    }
}

/// The kinds a plan's own CustomResourceDefinitions define, by (group, kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannedKinds(BTreeSet<(String, String)>);

impl PlannedKinds {
    /// The kinds defined by the plan's CRDs that are not hooks.
    #[must_use]
    pub fn of(plan: &SyncPlan) -> Self {
        let kinds = plan
            .tasks
            .iter()
            .filter(|task| task.hook.is_none())
            .filter(|task| {
                task.key.group == "apiextensions.k8s.io"
                    && task.key.kind == "CustomResourceDefinition"
            })
            .filter_map(|task| {
                let spec = task.resource.body.get("spec")?;
                let group = spec.get("group")?.as_str()?;
                let kind = spec.pointer("/names/kind")?.as_str()?;
                Some((group.to_owned(), kind.to_owned()))
            })
            .collect();
        Self(kinds)
    }

    /// Why `task`, whose kind the server does not serve, may still be synced; None when it may
    /// not. `application` holds the Application-wide options.
    #[must_use]
    pub fn excuse(&self, task: &SyncTask, application: &SyncOptions) -> Option<MissingKindExcuse> {
        if self
            .0
            .contains(&(task.key.group.clone(), task.key.kind.clone()))
        {
            Some(MissingKindExcuse::CreatedBySync)
        } else if task
            .options
            .over(application)
            .get(SyncOptionKey::SkipDryRunOnMissingResource)
        {
            Some(MissingKindExcuse::SkipDryRun)
        } else {
            None
        }
    }
}

/// The objects that fail the check, each with its error, given the (apiVersion, kind) pairs the
/// server does not serve.
#[must_use]
pub fn preflight_failures<'p>(
    plan: &'p SyncPlan,
    unserved: &BTreeSet<(String, String)>,
    application: &SyncOptions,
) -> Vec<(&'p SyncTask, String)> {
    let planned = PlannedKinds::of(plan);
    plan.tasks
        .iter()
        .filter(|task| {
            unserved.contains(&(
                task.resource.api_version.clone(),
                task.resource.kind.clone(),
            ))
        })
        .filter(|task| planned.excuse(task, application).is_none())
        .map(|task| {
            let message = format!(
                "the server has no resource type {} in {} and no CustomResourceDefinition of this \
                 sync defines it (add the sync option SkipDryRunOnMissingResource=true if \
                 something else creates it)",
                task.resource.kind, task.resource.api_version
            );
            (task, message)
        })
        .collect()
}

/// The distinct (apiVersion, kind) pairs of a plan, to ask the server about.
#[must_use]
pub fn planned_types(plan: &SyncPlan) -> BTreeSet<(String, String)> {
    plan.tasks
        .iter()
        .map(|task| {
            (
                task.resource.api_version.clone(),
                task.resource.kind.clone(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manifest::{ScopeTable, assign_namespaces, parse_documents};

    const CRD: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets}}
";

    fn plan(yaml: &str) -> SyncPlan {
        let (mut resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        assign_namespaces(&mut resources, &ScopeTable::default(), Some("dest"));
        SyncPlan::build(resources, "op").unwrap()
    }

    fn object(kind: &str, name: &str, options: Option<&str>) -> String {
        let annotations = options.map_or(String::new(), |o| {
            format!(", annotations: {{argocd.argoproj.io/sync-options: \"{o}\"}}")
        });
        format!(
            "---\napiVersion: example.com/v1\nkind: {kind}\nmetadata: {{name: {name}{annotations}}}\n"
        )
    }

    fn failures(yaml: &str, application: &str) -> Vec<String> {
        let plan = plan(yaml);
        let unserved = BTreeSet::from([
            ("example.com/v1".to_owned(), "Widget".to_owned()),
            ("example.com/v1".to_owned(), "Gadget".to_owned()),
        ]);
        preflight_failures(&plan, &unserved, &application.parse().unwrap())
            .into_iter()
            .map(|(task, message)| format!("{}: {message}", task.key))
            .collect()
    }

    #[test]
    fn unserved_kinds_fail_unless_created_by_the_sync_or_skipped() {
        let gadget = object("Gadget", "g", None);
        let cases: [(String, &str, &[&str]); 5] = [
            (format!("{CRD}{}", object("Widget", "w", None)), "", &[]),
            (
                object("Widget", "w", Some("SkipDryRunOnMissingResource=true")),
                "",
                &[],
            ),
            (
                object("Widget", "w", None),
                "SkipDryRunOnMissingResource=true",
                &[],
            ),
            (format!("{CRD}{gadget}"), "", &["Gadget dest/g"]),
            (
                object("Widget", "w", Some("SkipDryRunOnMissingResource=false")),
                "SkipDryRunOnMissingResource=true",
                &["Widget dest/w"],
            ),
        ];
        for (yaml, application, expected) in cases {
            let found = failures(&yaml, application);
            let names: Vec<&str> = found
                .iter()
                .map(|f| f.split(": ").next().unwrap_or(""))
                .collect();
            assert_eq!(names, expected, "{yaml}");
        }
        assert_eq!(
            failures(&object("Gadget", "g", None), ""),
            [
                "Gadget dest/g: the server has no resource type Gadget in example.com/v1 and no \
              CustomResourceDefinition of this sync defines it (add the sync option \
              SkipDryRunOnMissingResource=true if something else creates it)"
            ]
        );
    }

    #[test]
    fn a_crd_hook_does_not_excuse_its_kind() {
        let hook = CRD.replace(
            "metadata: {name: widgets.example.com}",
            "metadata: {name: widgets.example.com, annotations: {argocd.argoproj.io/hook: PreSync}}",
        );
        let plan = plan(&format!("{hook}{}", object("Widget", "w", None)));
        assert_eq!(
            planned_types(&plan),
            BTreeSet::from([
                (
                    "apiextensions.k8s.io/v1".to_owned(),
                    "CustomResourceDefinition".to_owned()
                ),
                ("example.com/v1".to_owned(), "Widget".to_owned()),
            ])
        );
        let widget = plan.tasks.iter().find(|t| t.key.kind == "Widget").unwrap();
        assert_eq!(
            PlannedKinds::of(&plan).excuse(widget, &SyncOptions::default()),
            None
        );
    }
}

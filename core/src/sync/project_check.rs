//! The project's verdict on a plan before its first write: every object (hooks included) and
//! the Namespace `CreateNamespace=true` would create must be permitted by the Application's
//! project, or nothing is written.

use crate::manifest::ObjectKey;
use crate::project::{Admission, Deployed};

use super::plan::SyncPlan;

/// The objects of `plan` (and `namespace_to_create`) the project refuses, each with the
/// refusal, in plan order.
#[must_use]
pub fn refused_by_project(
    plan: &SyncPlan,
    namespace_to_create: Option<&ObjectKey>,
    admission: &Admission,
) -> Vec<(ObjectKey, String)> {
    plan.tasks
        .iter()
        .map(|task| &task.key)
        .chain(namespace_to_create)
        .filter_map(|key| {
            let object = Deployed {
                group: &key.group,
                kind: &key.kind,
                name: &key.name,
                namespace: key.namespace.as_deref(),
            };
            admission
                .permit(object)
                .err()
                .map(|refusal| (key.clone(), refusal.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::api::app_project::{AppProjectSpec, GroupKind, ProjectDestination};
    use crate::manifest::{ScopeTable, assign_namespaces, parse_documents};

    #[test]
    fn hooks_objects_and_the_created_namespace_are_judged() {
        let yaml = "
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {argocd.argoproj.io/hook: PreSync}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
";
        let (mut resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        assign_namespaces(&mut resources, &ScopeTable::default(), Some("shop"));
        let plan = SyncPlan::build(resources, "op").unwrap();
        let admission = Admission {
            project: "team".to_owned(),
            spec: AppProjectSpec {
                destinations: vec![ProjectDestination {
                    server: "*".to_owned(),
                    name: String::new(),
                    namespace: "shop".to_owned(),
                }],
                namespace_resource_blacklist: vec![GroupKind {
                    group: "batch".to_owned(),
                    kind: "Job".to_owned(),
                    name: String::new(),
                }],
                ..AppProjectSpec::default()
            },
            ..Admission::default()
        };
        let namespace = ObjectKey {
            group: String::new(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: "shop".to_owned(),
        };
        let refused: Vec<String> = refused_by_project(&plan, Some(&namespace), &admission)
            .into_iter()
            .map(|(key, _)| key.to_string())
            .collect();
        assert_eq!(
            refused,
            ["Job shop/migrate", "ClusterRole reader", "Namespace shop"]
        );
        assert!(refused_by_project(&plan, Some(&namespace), &Admission::default()).is_empty());
    }
}

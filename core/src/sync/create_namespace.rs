//! `CreateNamespace=true` (Application-wide): the destination namespace is created before
//! anything else when it is missing. It is not tracked (no tracking annotation), so pruning
//! never deletes it, and a Namespace of the manifests of the same name takes precedence. With
//! `syncPolicy.managedNamespaceMetadata` it is written at every sync, existing or not, with those
//! labels and annotations (as Argo CD does): being server-side applied under our field manager, a
//! label or annotation removed from the Application is removed from the namespace, and what
//! others set on it is kept.

use serde_json::{Map, Value, json};

use crate::api::application::ManagedNamespaceMetadata;
use crate::manifest::ObjectKey;

use super::options::{SyncOptionKey, SyncOptions};
use super::plan::SyncPlan;

/// The namespace to create if it does not exist: the destination, when the Application's options
/// say `CreateNamespace=true` and the plan does not declare that Namespace itself.
#[must_use]
pub fn namespace_to_create(
    plan: &SyncPlan,
    application: &SyncOptions,
    destination: Option<&str>,
) -> Option<ObjectKey> {
    let name = destination.filter(|_| application.get(SyncOptionKey::CreateNamespace))?;
    let key = ObjectKey {
        group: String::new(),
        kind: "Namespace".to_owned(),
        namespace: None,
        name: name.to_owned(),
    };
    let declared = plan.tasks.iter().any(|task| task.key == key);
    (!declared).then_some(key)
}

/// Whether the namespace of [`namespace_to_create`] is written, given whether it `exists`: when
/// it is missing, or always with `managedNamespaceMetadata` (Argo CD's rule).
#[must_use]
pub fn namespace_written(exists: bool, metadata: Option<&ManagedNamespaceMetadata>) -> bool {
    !exists || metadata.is_some()
}

/// The Namespace object written for [`namespace_to_create`], with the labels and annotations
/// of `managedNamespaceMetadata`.
#[must_use]
pub fn namespace_object(key: &ObjectKey, metadata: Option<&ManagedNamespaceMetadata>) -> Value {
    let mut object = Map::from_iter([("name".to_owned(), json!(key.name))]);
    if let Some(metadata) = metadata {
        if !metadata.labels.is_empty() {
            object.insert("labels".to_owned(), json!(metadata.labels));
        }
        if !metadata.annotations.is_empty() {
            object.insert("annotations".to_owned(), json!(metadata.annotations));
        }
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": object})
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manifest::{ScopeTable, assign_namespaces, parse_documents};

    fn plan(yaml: &str) -> SyncPlan {
        let (mut resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        assign_namespaces(&mut resources, &ScopeTable::default(), Some("dest"));
        SyncPlan::build(resources, "op").unwrap()
    }

    #[test]
    fn creates_the_destination_only_when_asked_and_not_declared() {
        let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
        let namespace = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: dest}\n";
        let create: SyncOptions = "CreateNamespace=true".parse().unwrap();
        let cases = [
            (config_map.to_owned(), &create, Some("dest"), Some("dest")),
            (
                config_map.to_owned(),
                &SyncOptions::default(),
                Some("dest"),
                None,
            ),
            (config_map.to_owned(), &create, None, None),
            (
                format!("{config_map}{namespace}"),
                &create,
                Some("dest"),
                None,
            ),
            (
                format!("{config_map}{namespace}"),
                &create,
                Some("other"),
                Some("other"),
            ),
        ];
        for (yaml, options, destination, expected) in cases {
            let found = namespace_to_create(&plan(&yaml), options, destination);
            assert_eq!(
                found.as_ref().map(|k| k.name.as_str()),
                expected,
                "{yaml} {destination:?}"
            );
            if let Some(key) = found {
                assert_eq!(key.to_string(), format!("Namespace {}", key.name));
                assert_eq!(
                    namespace_object(&key, None),
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": key.name}})
                );
            }
        }
    }

    #[test]
    fn managed_metadata_is_written_on_every_sync() {
        let key = ObjectKey {
            group: String::new(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: "dest".to_owned(),
        };
        let metadata = ManagedNamespaceMetadata {
            labels: [("team".to_owned(), "shop".to_owned())].into(),
            annotations: [("owner".to_owned(), "ops".to_owned())].into(),
        };
        assert_eq!(
            namespace_object(&key, Some(&metadata)),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": "dest", "labels": {"team": "shop"}, "annotations": {"owner": "ops"}}})
        );
        assert_eq!(
            namespace_object(&key, Some(&ManagedNamespaceMetadata::default())),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dest"}}),
            "empty metadata: every label and annotation it set before is removed"
        );
        let cases = [
            (false, None, true),
            (true, None, false),
            (false, Some(&metadata), true),
            (true, Some(&metadata), true),
        ];
        for (exists, metadata, expected) in cases {
            assert_eq!(
                namespace_written(exists, metadata),
                expected,
                "{exists} {metadata:?}"
            );
        }
    }
}

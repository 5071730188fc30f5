//! The object the engine applies for a task: its body normalised, in the namespace its key says,
//! and (for the apply itself and the compare) with the tracking annotation.

use serde_json::Value;

use crate::sync::{SyncTask, TRACKING_ANNOTATION, normalize, tracking_id};

/// The object to apply: the task's body in the namespace of its key (assigned from the
/// destination, or removed for cluster-scoped kinds), with the tracking annotation.
#[must_use]
pub fn tracked(task: &SyncTask, app: &str) -> Value {
    let mut object = desired(task);
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(serde_json::Map::new());
        }
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(
                TRACKING_ANNOTATION.to_owned(),
                Value::String(tracking_id(app, &task.key)),
            );
        }
    }
    object
}

/// The task's body with `metadata.namespace` as its key says, normalised (see
/// [`crate::sync::normalize`]).
#[must_use]
pub fn desired(task: &SyncTask) -> Value {
    let mut object = task.resource.body.clone();
    normalize(&mut object);
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        match &task.key.namespace {
            Some(namespace) => {
                metadata.insert("namespace".to_owned(), Value::String(namespace.clone()));
            }
            None => {
                metadata.remove("namespace");
            }
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::manifest::{ScopeTable, assign_namespaces, parse_documents};
    use crate::sync::SyncPlan;

    #[test]
    fn applied_objects_carry_namespace_and_tracking_id() {
        let yaml = [
            "apiVersion: v1",
            "kind: ConfigMap",
            "metadata: {name: c, annotations: {a: b}}",
            "---",
            "apiVersion: v1",
            "kind: Namespace",
            "metadata: {name: shop, namespace: ignored}",
        ]
        .join("\n");
        let (mut resources, errors) = parse_documents(Path::new("t.yaml"), &yaml);
        assert_eq!(errors, vec![]);
        assign_namespaces(&mut resources, &ScopeTable::default(), Some("dest"));
        let plan = SyncPlan::build(resources, "op").unwrap();
        let objects: Vec<Value> = plan.tasks.iter().map(|t| tracked(t, "app")).collect();
        assert_eq!(
            objects[0]["metadata"],
            json!({"name": "shop", "annotations": {TRACKING_ANNOTATION: "app:/Namespace:/shop"}})
        );
        assert_eq!(
            objects[1]["metadata"],
            json!({"name": "c", "namespace": "dest",
                   "annotations": {"a": "b", TRACKING_ANNOTATION: "app:/ConfigMap:dest/c"}})
        );
    }
}

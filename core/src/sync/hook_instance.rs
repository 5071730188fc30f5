//! Which operation created a hook's live instance: every hook is written with the annotation
//! `flotilla.dev/sync-operation: <operation id>`, so an operation resumed after a crash between
//! creating a hook and recording it adopts that instance instead of deleting it and running the
//! hook a second time.

use serde_json::Value;

use super::live::LiveObject;

/// The annotation naming the operation that created a hook instance.
pub const HOOK_OPERATION_ANNOTATION: &str = "flotilla.dev/sync-operation";

/// Marks a hook object (as it will be written) as created by `operation_id`.
pub fn mark_hook(object: &mut Value, operation_id: &str) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(
            HOOK_OPERATION_ANNOTATION.to_owned(),
            Value::String(operation_id.to_owned()),
        );
    }
}

/// Whether this live instance was created by the operation `operation_id` (and is not being
/// deleted).
#[must_use]
pub fn created_by(live: &LiveObject, operation_id: &str) -> bool {
    !live.deleting
        && live
            .annotations
            .get(HOOK_OPERATION_ANNOTATION)
            .is_some_and(|id| id == operation_id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::health::HealthChecks;

    fn live(object: &Value) -> LiveObject {
        LiveObject::from_object(object, &HealthChecks::default()).expect("a live object")
    }

    #[test]
    fn a_marked_instance_belongs_to_its_operation_only() {
        let mut job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "shop"},
        });
        assert!(
            !created_by(&live(&job), "op-1"),
            "unmarked: a previous instance"
        );
        mark_hook(&mut job, "op-1");
        assert_eq!(
            job["metadata"]["annotations"][HOOK_OPERATION_ANNOTATION],
            "op-1"
        );
        assert!(created_by(&live(&job), "op-1"));
        assert!(
            !created_by(&live(&job), "op-2"),
            "another operation's instance"
        );
        job["metadata"]["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
        assert!(
            !created_by(&live(&job), "op-1"),
            "one being deleted is gone"
        );
    }
}

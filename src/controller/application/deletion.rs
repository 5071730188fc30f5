//! Deleting a deleted Application's resources before its finalizer goes: the objects it tracks
//! are deleted highest wave first, each wave only once the higher ones are gone (the reverse of
//! the sync order). Objects marked `argocd.argoproj.io/sync-options: Delete=false` are left in
//! place, as in Argo CD. Pure: one step per call.

use crate::manifest::ObjectKey;
use crate::sync::{LiveObject, SyncAnnotations, SyncOptionKey, is_managed_by};

/// Finalizers that ask for an Application's resources to be deleted with it: Flotilla's, and
/// Argo CD's (with its `/foreground` and `/background` forms, which ApplicationSet templates set)
/// so existing Applications work unchanged.
pub const RESOURCE_FINALIZERS: [&str; 4] = [
    crate::controller::appset::ownership::RESOURCES_FINALIZER,
    "resources-finalizer.argocd.argoproj.io",
    "resources-finalizer.argocd.argoproj.io/foreground",
    "resources-finalizer.argocd.argoproj.io/background",
];

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletionStep {
    /// Request deletion of these objects (the highest remaining wave).
    Delete(Vec<ObjectKey>),
    /// The highest remaining wave is being deleted: wait.
    Wait,
    /// Nothing the Application manages remains: remove the finalizer.
    Done,
}

/// The next step for `app`, given live objects (of any Application).
#[must_use]
pub fn deletion_step(app: &str, objects: &[LiveObject]) -> DeletionStep {
    let managed: Vec<(i32, &LiveObject)> = objects
        .iter()
        .filter(|o| is_managed_by(app, &o.key, &o.annotations))
        .filter_map(|o| {
            let annotations = SyncAnnotations::parse(&o.annotations).0;
            let kept = annotations
                .as_ref()
                .is_some_and(|a| !a.options.get(SyncOptionKey::Delete));
            (!kept).then(|| (annotations.map_or(0, |a| a.wave), o))
        })
        .collect();
    let Some(highest) = managed.iter().map(|(wave, _)| *wave).max() else {
        return DeletionStep::Done;
    };
    let keys: Vec<ObjectKey> = managed
        .iter()
        .filter(|(wave, object)| *wave == highest && !object.deleting)
        .map(|(_, object)| object.key.clone())
        .collect();
    if keys.is_empty() {
        DeletionStep::Wait
    } else {
        DeletionStep::Delete(keys)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sync::TRACKING_ANNOTATION;

    fn object(app: &str, name: &str, wave: i32, deleting: bool) -> LiveObject {
        with_options(app, name, wave, deleting, "")
    }

    fn with_options(app: &str, name: &str, wave: i32, deleting: bool, options: &str) -> LiveObject {
        let mut value = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "n", "annotations": {
                TRACKING_ANNOTATION: format!("{app}:/ConfigMap:n/{name}"),
                "argocd.argoproj.io/sync-wave": wave.to_string()}}});
        if !options.is_empty() {
            value["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] = json!(options);
        }
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        LiveObject::from_object(&value).unwrap()
    }

    fn names(step: &DeletionStep) -> Vec<&str> {
        match step {
            DeletionStep::Delete(keys) => keys.iter().map(|k| k.name.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn highest_wave_first_waiting_for_it_to_go() {
        let objects = [
            object("app", "early", -1, false),
            object("app", "late-a", 2, false),
            object("app", "late-b", 2, false),
            object("other", "foreign", 5, false),
        ];
        assert_eq!(names(&deletion_step("app", &objects)), ["late-a", "late-b"]);
        let deleting = [
            object("app", "early", -1, false),
            object("app", "late-a", 2, true),
        ];
        assert_eq!(deletion_step("app", &deleting), DeletionStep::Wait);
        assert_eq!(names(&deletion_step("app", &deleting[..1])), ["early"]);
        assert_eq!(deletion_step("app", &objects[3..]), DeletionStep::Done);
    }

    #[test]
    fn delete_false_objects_stay() {
        let objects = [
            with_options("app", "kept", 3, false, "Prune=false,Delete=false"),
            object("app", "gone", 1, false),
        ];
        assert_eq!(names(&deletion_step("app", &objects)), ["gone"]);
        assert_eq!(deletion_step("app", &objects[..1]), DeletionStep::Done);
    }
}

//! Deleting a deleted Application's resources before its finalizer goes: the objects it tracks
//! are deleted highest wave first, each wave only once the higher ones are gone (the reverse of
//! the sync order). Objects marked `argocd.argoproj.io/sync-options: Delete=false` are left in
//! place, as in Argo CD; while any object is marked `Delete=confirm`, nothing is deleted until
//! the deletion is approved (`argocd.argoproj.io/deletion-approved` at or after the deletion,
//! `flotilla app confirm-prune`). Once the resources are gone, the PostDelete hooks its last
//! comparison found (`status.postDeleteHooks`; with none, the finalizer goes at once and the
//! source is not read) run as an operation of their own, recorded in `status.operationState`
//! under [`post_delete_id`]: so a
//! restarted controller resumes it (never creating a hook twice) and, once it ended, reads its
//! outcome. The finalizer goes when it Succeeded; a failed (or timed-out) one keeps the
//! Application, as Argo CD does, until the finalizer is removed by hand. Pure: one step per call.

use crate::manifest::ObjectKey;
use crate::sync::is_managed_by;
use crate::sync::{LiveObject, OperationPhase, OperationState, SyncAnnotations, SyncOptionKey};

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
    /// These `Delete=confirm` objects hold the deletion (nothing is deleted) until it is
    /// approved.
    AwaitConfirmation(Vec<ObjectKey>),
    /// Nothing the Application manages remains: run its PostDelete hooks (resuming the
    /// operation when it is recorded Running).
    RunPostDelete,
    /// The PostDelete operation ended without success: report it and keep the finalizer.
    PostDeleteFailed(String),
    /// Nothing remains and no PostDelete hook is left to run (none, or they succeeded): remove
    /// the finalizer.
    Done,
}

/// What a deletion step is decided from.
#[derive(Clone, Copy, Debug)]
pub struct DeletionState<'a> {
    /// The Application's name.
    pub name: &'a str,
    /// The name its objects are tracked under.
    pub app: &'a str,
    /// Live objects (of any Application).
    pub objects: &'a [LiveObject],
    /// Whether the deletion is approved (for `Delete=confirm` objects).
    pub approved: bool,
    /// The Application's `status.operationState`.
    pub operation: Option<&'a OperationState>,
    /// Whether its source has PostDelete hooks (`status.postDeleteHooks`).
    pub has_post_delete_hooks: bool,
}

/// The operation id of the PostDelete hooks of Application `name` (fixed, so generated hook
/// names are the same after a restart).
#[must_use]
pub fn post_delete_id(name: &str) -> String {
    format!("{name}-post-delete")
}

/// The next step of the deletion.
#[must_use]
pub fn deletion_step(state: &DeletionState<'_>) -> DeletionStep {
    let post_delete = state
        .operation
        .filter(|operation| operation.operation_id == post_delete_id(state.name));
    if let Some(operation) = post_delete {
        return match operation.phase {
            OperationPhase::Running | OperationPhase::Terminating => DeletionStep::RunPostDelete,
            OperationPhase::Succeeded => DeletionStep::Done,
            OperationPhase::Failed | OperationPhase::Error | OperationPhase::Terminated => {
                DeletionStep::PostDeleteFailed(format!(
                    "PostDelete hooks {:?}: {}",
                    operation.phase, operation.message
                ))
            }
        };
    }
    let managed: Vec<(i32, bool, &LiveObject)> = state
        .objects
        .iter()
        .filter(|o| is_managed_by(state.app, &o.key, &o.annotations))
        .filter_map(|o| {
            let annotations = SyncAnnotations::parse(&o.annotations).0;
            let options = annotations.as_ref().map(|a| &a.options);
            let kept = options.is_some_and(|options| !options.get(SyncOptionKey::Delete));
            let confirm = options.is_some_and(|options| options.confirms(SyncOptionKey::Delete));
            (!kept).then(|| (annotations.map_or(0, |a| a.wave), confirm, o))
        })
        .collect();
    let unconfirmed: Vec<ObjectKey> = managed
        .iter()
        .filter(|(_, confirm, _)| *confirm && !state.approved)
        .map(|(_, _, object)| object.key.clone())
        .collect();
    if !unconfirmed.is_empty() {
        return DeletionStep::AwaitConfirmation(unconfirmed);
    }
    let Some(highest) = managed.iter().map(|(wave, _, _)| *wave).max() else {
        return if state.has_post_delete_hooks {
            DeletionStep::RunPostDelete
        } else {
            DeletionStep::Done
        };
    };
    let keys: Vec<ObjectKey> = managed
        .iter()
        .filter(|(wave, _, object)| *wave == highest && !object.deleting)
        .map(|(_, _, object)| object.key.clone())
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
        LiveObject::from_object(&value, &crate::health::HealthChecks::default()).unwrap()
    }

    fn names(step: &DeletionStep) -> Vec<&str> {
        match step {
            DeletionStep::Delete(keys) | DeletionStep::AwaitConfirmation(keys) => {
                keys.iter().map(|k| k.name.as_str()).collect()
            }
            _ => Vec::new(),
        }
    }

    fn deletion_step(app: &str, objects: &[LiveObject]) -> DeletionStep {
        super::deletion_step(&DeletionState {
            name: "web",
            app,
            objects,
            approved: false,
            operation: None,
            has_post_delete_hooks: true,
        })
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
        assert_eq!(
            deletion_step("app", &objects[3..]),
            DeletionStep::RunPostDelete
        );
        let without_hooks = super::deletion_step(&DeletionState {
            name: "web",
            app: "app",
            objects: &objects[3..],
            approved: false,
            operation: None,
            has_post_delete_hooks: false,
        });
        assert_eq!(without_hooks, DeletionStep::Done, "the source is not read");
    }

    #[test]
    fn delete_false_objects_stay() {
        let objects = [
            with_options("app", "kept", 3, false, "Prune=false,Delete=false"),
            object("app", "gone", 1, false),
        ];
        let mut helm_kept = object("app", "helm-kept", 5, false);
        helm_kept
            .annotations
            .insert("helm.sh/resource-policy".into(), "keep".into());
        assert_eq!(
            names(&deletion_step("app", &[helm_kept, objects[1].clone()])),
            ["gone"]
        );
        assert_eq!(names(&deletion_step("app", &objects)), ["gone"]);
        assert_eq!(
            deletion_step("app", &objects[..1]),
            DeletionStep::RunPostDelete
        );
    }

    #[test]
    fn delete_confirm_holds_every_deletion_until_approved() {
        let objects = [
            with_options("app", "namespace-ish", 0, false, "Delete=confirm"),
            object("app", "plain", 3, false),
        ];
        let step = |approved| {
            super::deletion_step(&DeletionState {
                name: "web",
                app: "app",
                objects: &objects,
                approved,
                operation: None,
                has_post_delete_hooks: false,
            })
        };
        assert_eq!(
            step(false),
            DeletionStep::AwaitConfirmation(vec![objects[0].key.clone()])
        );
        assert_eq!(names(&step(true)), ["plain"]);
    }

    #[test]
    fn the_recorded_post_delete_operation_decides_once_it_exists() {
        let operation = |id: &str, phase: OperationPhase, message: &str| {
            let (mut state, _) = crate::sync::begin(
                None,
                Some("abc"),
                id,
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ),
            );
            state.phase = phase;
            state.message = message.to_owned();
            state
        };
        let remaining = [object("app", "left", 0, false)];
        let cases = [
            (
                operation("web-post-delete", OperationPhase::Running, ""),
                DeletionStep::RunPostDelete,
            ),
            (
                operation("web-post-delete", OperationPhase::Succeeded, "done"),
                DeletionStep::Done,
            ),
            (
                operation(
                    "web-post-delete",
                    OperationPhase::Failed,
                    "PostDelete wave 0: Job n/cleanup hook failed: BackoffLimitExceeded",
                ),
                DeletionStep::PostDeleteFailed(
                    "PostDelete hooks Failed: PostDelete wave 0: Job n/cleanup hook failed: BackoffLimitExceeded"
                        .to_owned(),
                ),
            ),
            // A sync of the Application interrupted by its deletion is not the PostDelete one.
            (
                operation("web-1700000000000", OperationPhase::Running, ""),
                DeletionStep::Delete(vec![remaining[0].key.clone()]),
            ),
        ];
        for (stored, expected) in cases {
            let step = super::deletion_step(&DeletionState {
                name: "web",
                app: "app",
                objects: &remaining,
                approved: false,
                operation: Some(&stored),
                has_post_delete_hooks: true,
            });
            assert_eq!(step, expected, "{} {:?}", stored.operation_id, stored.phase);
        }
    }
}

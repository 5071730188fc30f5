//! Deleting a deleted Application's resources before its finalizer goes: first its PreDelete
//! hooks (`status.preDeleteHooks`) run as an operation of their own, recorded in
//! `status.operationState` under [`deletion_hooks_id`]; only once it Succeeded is anything
//! deleted, and a failed one holds the deletion (reported) with every object in place. Then the
//! objects it tracks are deleted highest wave first, each wave only once the higher ones are gone (the reverse of
//! the sync order). Objects marked `argocd.argoproj.io/sync-options: Delete=false` are left in
//! place, as in Argo CD; while any object is marked `Delete=confirm`, nothing is deleted until
//! the deletion is approved (`argocd.argoproj.io/deletion-approved` at or after the deletion,
//! `flotilla app confirm-prune`). Once the resources are gone, the PostDelete hooks its last
//! comparison found (`status.postDeleteHooks`; with none, the finalizer goes at once and the
//! source is not read) run as an operation of their own, recorded in `status.operationState`
//! under [`deletion_hooks_id`]: so a
//! restarted controller resumes either operation (never creating a hook twice) and, once it
//! ended, reads its outcome. The finalizer goes when it Succeeded; a failed (or timed-out) one keeps the
//! Application, as Argo CD does, until the finalizer is removed by hand. Pure: one step per call.

use crate::api::sync_phase::SyncPhase;
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
    /// Run the deletion hooks of this phase (resuming the operation when it is recorded
    /// Running): PreDelete before anything is deleted, PostDelete once nothing the Application
    /// manages remains.
    RunHooks(SyncPhase),
    /// The operation of the deletion hooks ended without success: report it and keep the
    /// finalizer (and, for PreDelete hooks, every object).
    HooksFailed(String),
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
    /// Whether its source has PreDelete hooks (`status.preDeleteHooks`).
    pub has_pre_delete_hooks: bool,
    /// Whether its source has PostDelete hooks (`status.postDeleteHooks`).
    pub has_post_delete_hooks: bool,
}

/// The operation id of the PreDelete or PostDelete hooks of Application `name` (fixed, so
/// generated hook names are the same after a restart): `NAME-pre-delete`, `NAME-post-delete`.
#[must_use]
pub fn deletion_hooks_id(name: &str, phase: SyncPhase) -> String {
    let suffix = if phase == SyncPhase::PreDelete {
        "pre-delete"
    } else {
        "post-delete"
    };
    format!("{name}-{suffix}")
}

/// The step the recorded operation of `phase`'s hooks decides, when it is the one recorded:
/// resume it while it runs, report it when it failed; `None` once it Succeeded.
fn recorded_hooks(state: &DeletionState<'_>, phase: SyncPhase) -> Option<Option<DeletionStep>> {
    let operation = state
        .operation
        .filter(|operation| operation.operation_id == deletion_hooks_id(state.name, phase))?;
    Some(match operation.phase {
        OperationPhase::Running | OperationPhase::Terminating => {
            Some(DeletionStep::RunHooks(phase))
        }
        OperationPhase::Succeeded => None,
        OperationPhase::Failed | OperationPhase::Error | OperationPhase::Terminated => {
            Some(DeletionStep::HooksFailed(format!(
                "{phase} hooks {:?}: {}",
                operation.phase, operation.message
            )))
        }
    })
}

/// The next step of the deletion.
#[must_use]
pub fn deletion_step(state: &DeletionState<'_>) -> DeletionStep {
    if let Some(post_delete) = recorded_hooks(state, SyncPhase::PostDelete) {
        return post_delete.unwrap_or(DeletionStep::Done);
    }
    let pre_delete = recorded_hooks(state, SyncPhase::PreDelete);
    if let Some(Some(step)) = pre_delete {
        return step;
    }
    let pre_delete_done = pre_delete.is_some() || !state.has_pre_delete_hooks;
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
    if !pre_delete_done {
        return DeletionStep::RunHooks(SyncPhase::PreDelete);
    }
    let Some(highest) = managed.iter().map(|(wave, _, _)| *wave).max() else {
        return if state.has_post_delete_hooks {
            DeletionStep::RunHooks(SyncPhase::PostDelete)
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

/// How one deletion pass ended, as far as its `DeletionError` condition goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletionEnd<'a> {
    /// It waits for someone (a confirmation, or a fix of failed deletion hooks): why.
    Held(&'a str),
    /// The step failed: why.
    Failed(&'a str),
    /// It went on; `shown` when the Application shows a `DeletionError` condition that this
    /// step settled (not when it only started the PreDelete hooks).
    WentOn { shown: bool },
}

/// What a deletion pass writes to the `DeletionError` condition, and whether it announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeletionReport {
    /// Set the condition with this message; announce it (an Event) always, or only when the
    /// condition changed.
    Set { message: String, always: bool },
    /// Clear the condition.
    Clear,
    /// Leave it as it is.
    Keep,
}

impl DeletionReport {
    /// The condition's message to write (`None`: cleared), when anything is written.
    #[must_use]
    pub fn condition(&self) -> Option<Option<&str>> {
        match self {
            Self::Set { message, .. } => Some(Some(message)),
            Self::Clear => Some(None),
            Self::Keep => None,
        }
    }
}

/// The one status write of a deletion pass: a hold or a failure sets the `DeletionError`
/// condition (a failure announced each time, a hold when it is new), a step that went on clears
/// the condition it settled.
#[must_use]
pub fn deletion_report(end: DeletionEnd<'_>) -> DeletionReport {
    match end {
        DeletionEnd::Held(message) => DeletionReport::Set {
            message: message.to_owned(),
            always: false,
        },
        DeletionEnd::Failed(message) => DeletionReport::Set {
            message: message.to_owned(),
            always: true,
        },
        DeletionEnd::WentOn { shown: true } => DeletionReport::Clear,
        DeletionEnd::WentOn { shown: false } => DeletionReport::Keep,
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

    /// An operation record of `id` in `phase`.
    fn operation(id: &str, phase: OperationPhase, message: &str) -> OperationState {
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
            has_pre_delete_hooks: false,
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
            DeletionStep::RunHooks(SyncPhase::PostDelete)
        );
        let without_hooks = super::deletion_step(&DeletionState {
            name: "web",
            app: "app",
            objects: &objects[3..],
            approved: false,
            operation: None,
            has_pre_delete_hooks: false,
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
            DeletionStep::RunHooks(SyncPhase::PostDelete)
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
                has_pre_delete_hooks: false,
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
        let remaining = [object("app", "left", 0, false)];
        let cases = [
            (
                operation("web-post-delete", OperationPhase::Running, ""),
                DeletionStep::RunHooks(SyncPhase::PostDelete),
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
                DeletionStep::HooksFailed(
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
                has_pre_delete_hooks: false,
                has_post_delete_hooks: true,
            });
            assert_eq!(step, expected, "{} {:?}", stored.operation_id, stored.phase);
        }
    }

    #[test]
    fn pre_delete_hooks_run_first_and_hold_everything_until_they_succeed() {
        let objects = [
            object("app", "db", 0, false),
            with_options("app", "ns", -1, false, "Delete=confirm"),
        ];
        let step = |stored: Option<&OperationState>, objects: &[LiveObject], approved| {
            super::deletion_step(&DeletionState {
                name: "web",
                app: "app",
                objects,
                approved,
                operation: stored,
                has_pre_delete_hooks: true,
                has_post_delete_hooks: true,
            })
        };
        // A confirmation first, then the hooks, then the waves: nothing deleted meanwhile.
        assert!(matches!(
            step(None, &objects, false),
            DeletionStep::AwaitConfirmation(_)
        ));
        let hooks = DeletionStep::RunHooks(SyncPhase::PreDelete);
        assert_eq!(step(None, &objects, true), hooks);
        // An interrupted sync's record is not the hooks' one.
        let sync = operation("web-1700000000000", OperationPhase::Terminated, "");
        assert_eq!(step(Some(&sync), &objects, true), hooks);
        let running = operation("web-pre-delete", OperationPhase::Running, "");
        assert_eq!(step(Some(&running), &objects, true), hooks, "resumed");
        let failed = operation(
            "web-pre-delete",
            OperationPhase::Failed,
            "PreDelete wave 0: Job n/backup hook failed: BackoffLimitExceeded",
        );
        assert_eq!(
            step(Some(&failed), &objects, true),
            DeletionStep::HooksFailed(
                "PreDelete hooks Failed: PreDelete wave 0: Job n/backup hook failed: BackoffLimitExceeded"
                    .to_owned()
            ),
            "the objects stay"
        );
        let succeeded = operation("web-pre-delete", OperationPhase::Succeeded, "");
        assert_eq!(names(&step(Some(&succeeded), &objects, true)), ["db"]);
        assert_eq!(
            step(Some(&succeeded), &[], true),
            DeletionStep::RunHooks(SyncPhase::PostDelete)
        );
        let post = operation("web-post-delete", OperationPhase::Succeeded, "");
        assert_eq!(step(Some(&post), &[], true), DeletionStep::Done);
        assert_eq!(
            deletion_hooks_id("web", SyncPhase::PreDelete),
            "web-pre-delete"
        );
        assert_eq!(
            deletion_hooks_id("web", SyncPhase::PostDelete),
            "web-post-delete"
        );
    }

    #[test]
    fn a_pass_sets_the_condition_when_held_or_failed_and_clears_what_it_settled() {
        let set = |message: &str, always| DeletionReport::Set {
            message: message.to_owned(),
            always,
        };
        assert_eq!(
            deletion_report(DeletionEnd::Held("confirm")),
            set("confirm", false)
        );
        assert_eq!(
            deletion_report(DeletionEnd::Failed("denied")),
            set("denied", true)
        );
        assert_eq!(
            deletion_report(DeletionEnd::WentOn { shown: true }),
            DeletionReport::Clear
        );
        assert_eq!(
            deletion_report(DeletionEnd::WentOn { shown: false }),
            DeletionReport::Keep
        );
        assert_eq!(set("confirm", false).condition(), Some(Some("confirm")));
        assert_eq!(DeletionReport::Clear.condition(), Some(None));
        assert_eq!(DeletionReport::Keep.condition(), None);
    }
}

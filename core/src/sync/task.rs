//! A sync task: one desired object in one phase, with its wave, hook policy and options.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::manifest::{ObjectKey, Resource};

use super::hook::{DeletePolicy, HookType};
use super::options::{CompareOptions, SyncOptions};
use crate::api::sync_phase::SyncPhase;

/// Hook details of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hook {
    /// The hook type this task runs as.
    pub hook_type: HookType,
    /// When the hook object is deleted.
    pub delete_policies: BTreeSet<DeletePolicy>,
}

impl Hook {
    /// Whether a previous instance must be deleted before this hook is created: with
    /// `BeforeHookCreation`, and always for Jobs and Pods, whose templates are immutable (so a
    /// fixed-name hook never fails with "field is immutable").
    #[must_use]
    pub fn replaces_previous(&self, key: &ObjectKey) -> bool {
        self.delete_policies
            .contains(&DeletePolicy::BeforeHookCreation)
            || matches!(
                (key.group.as_str(), key.kind.as_str()),
                ("batch", "Job") | ("", "Pod")
            )
    }

    /// Whether the finished hook is deleted, given its outcome.
    #[must_use]
    pub fn deleted_after(&self, succeeded: bool) -> bool {
        let policy = if succeeded {
            DeletePolicy::HookSucceeded
        } else {
            DeletePolicy::HookFailed
        };
        self.delete_policies.contains(&policy)
    }
}

/// Why a Namespace or CRD runs earlier than its own phase and wave say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Promotion {
    /// The first object that needs it.
    pub ahead_of: ObjectKey,
    /// The phase it declared.
    pub declared_phase: SyncPhase,
    /// The wave it declared.
    pub declared_wave: i32,
}

/// One object to apply in one phase. `phase` and `wave` are where it runs (after promotion).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncTask {
    /// Identity, with a generated hook name resolved.
    pub key: ObjectKey,
    /// The phase it runs in.
    pub phase: SyncPhase,
    /// The wave it runs in.
    pub wave: i32,
    /// Set when the object is a hook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<Hook>,
    /// Set when a Namespace or CRD was moved ahead of its declared phase/wave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promotion: Option<Promotion>,
    /// Sync options.
    pub options: SyncOptions,
    /// Compare options.
    pub compare: CompareOptions,
    /// The desired object; for a generated hook name, `metadata.name` is set to it.
    pub resource: Resource,
}

impl SyncTask {
    /// Namespaces and CRDs are applied (and must be Healthy) before the rest of their wave.
    #[must_use]
    pub fn is_prerequisite(&self) -> bool {
        is_prerequisite_kind(&self.key)
    }

    /// The batch the task is applied in: objects of one batch are independent of each other.
    #[must_use]
    pub fn batch(&self) -> Batch {
        Batch {
            phase: self.phase,
            wave: self.wave,
            prerequisites: self.is_prerequisite(),
        }
    }
}

pub(super) fn is_prerequisite_kind(key: &ObjectKey) -> bool {
    matches!(
        (key.group.as_str(), key.kind.as_str()),
        ("", "Namespace") | ("apiextensions.k8s.io", "CustomResourceDefinition")
    )
}

/// A task of a plan with its place in the plan's task list, which does not change during an
/// attempt: an executor keeps the index, owned, across the steps it carries out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedTask<'a> {
    /// Its index in [`super::SyncPlan::tasks`].
    pub index: usize,
    /// The task.
    pub task: &'a SyncTask,
}

impl std::ops::Deref for PlannedTask<'_> {
    type Target = SyncTask;

    fn deref(&self) -> &SyncTask {
        self.task
    }
}

/// A set of tasks applied together: one phase, one wave, and either its Namespaces and CRDs or
/// the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// Phase.
    pub phase: SyncPhase,
    /// Wave.
    pub wave: i32,
    /// Whether this is the Namespace/CRD batch that precedes the rest of the wave.
    pub prerequisites: bool,
}

impl std::fmt::Display for Batch {
    /// `wave 1` for the Sync phase, `PreSync wave 0` otherwise.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.phase {
            SyncPhase::Sync => write!(f, "wave {}", self.wave),
            phase => write!(f, "{phase} wave {}", self.wave),
        }
    }
}

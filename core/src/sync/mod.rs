//! The per-Application sync engine's pure core: the annotation vocabulary, the plan of a source's
//! manifests, task ordering, prune planning, operation results and the [`plan_step`] decision
//! function. No Kubernetes client: an executor (`flotilla::sync::execute`) carries out what
//! [`plan_step`] decides and records the results.

mod annotations;
mod applied;
mod begin;
mod create_namespace;
pub mod diff;
mod empty_target;
mod hook;
mod hook_instance;
mod hook_name;
mod ignore_customizations;
mod ignore_differences;
mod jq_path;
mod kind_order;
mod live;
mod normalize;
mod options;
mod order;
mod plan;
mod preflight;
mod prepare;
mod project_check;
mod prune;
mod result;
mod shared_resource;
mod step;
mod task;
mod tracking;
mod write;

pub use crate::api::operation_state::{
    HookPhase, OperationPhase, OperationState, ResourceAction, ResourceResult, ResultStatus,
};
pub use crate::api::sync_phase::{SyncPhase, UnknownPhase};
pub use annotations::{HELM_WEIGHT_ANNOTATION, SYNC_WAVE_ANNOTATION, SyncAnnotations};
pub use applied::{desired, tracked};
pub use begin::begin;
pub use create_namespace::{namespace_object, namespace_to_create, namespace_written};
pub use empty_target::refuse_empty_target;
pub use hook::{
    DELETE_POLICY_ANNOTATION, DeletePolicy, HELM_DELETE_POLICY_ANNOTATION, HELM_HOOK_ANNOTATION,
    HOOK_ANNOTATION, HookError, HookType, parse_delete_policies, parse_helm_hooks,
    parse_hook_types,
};
pub use hook_instance::{HOOK_OPERATION_ANNOTATION, created_by, mark_hook};
pub use hook_name::hook_name;
pub use ignore_customizations::{IGNORE_KEY_PREFIX, IgnoreConfigError, system_ignore_differences};
pub use ignore_differences::{IgnoreDifferences, IgnoreError};
pub use jq_path::{JqError, JqFilters, JqPath};
pub use kind_order::kind_rank;
pub use live::LiveObject;
pub use normalize::normalize;
pub use options::{
    COMPARE_OPTIONS_ANNOTATION, CompareOptions, OptionError, OptionValue, SYNC_OPTIONS_ANNOTATION,
    SyncOptionKey, SyncOptions,
};
pub use order::order_tasks;
pub use plan::SyncPlan;
pub use preflight::{MissingKindExcuse, PlannedKinds, planned_types, preflight_failures};
pub use prepare::{PROJECT_REFUSAL, PrepareInput, Prepared, prepare};
pub use project_check::refused_by_project;
pub use prune::{KeptObject, PrunePlan, PruneTask, plan_prune};
pub use result::{
    PruneOutcome, WriteOutcome, Written, adopted_record, applied_record, created_namespace_record,
    finish_hook_record, pruned_record, refused_record, rejected_records, task_record,
};
pub use shared_resource::{
    ARGO_CD_TRACKING_ANNOTATION, SharedObject, shared_message, tracked_elsewhere,
};
pub use step::{
    Blocker, FinishedHook, Outcome, SUCCESS_MESSAGE, SyncState, SyncStep, Waiting, plan_step,
};
pub use task::{Batch, Hook, PlannedTask, Promotion, SyncTask};
pub use tracking::{FIELD_MANAGER, TRACKING_ANNOTATION, is_managed_by, tracking_id};
pub use write::{FieldValidation, Write, WritePolicy};

#[cfg(test)]
mod step_tests;

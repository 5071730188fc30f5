//! Flotilla's custom resources (`flotilla.dev/v1alpha1`): ApplicationSet, Application and AppProject, their
//! CRDs, and reading user documents that may use Argo CD's `argoproj.io/v1alpha1` instead.

pub mod app_project;
pub mod application;
pub mod application_set;
pub mod application_set_status;
pub mod argocd_parity;
pub mod crd;
pub mod document;
pub mod helm_source;
pub mod hook_type;
pub mod kustomize_source;
pub mod merge_patch;
pub mod operation_state;
pub mod plugin_source;
pub mod retry_policy;
pub mod revisions;
pub mod sync_phase;
pub mod sync_window;
pub mod template_merge;
pub mod unrendered_fields;

pub use app_project::{AppProject, AppProjectSpec};
pub use application::{Application, ApplicationSpec};
pub use application_set::{ApplicationSet, ApplicationSetSpec};

/// Our API group.
pub const GROUP: &str = "flotilla.dev";
/// Our API version for both kinds.
pub const API_VERSION: &str = "flotilla.dev/v1alpha1";
/// Argo CD's API version, accepted on input so existing files work unchanged.
pub const ARGO_CD_API_VERSION: &str = "argoproj.io/v1alpha1";
/// Label on every generated Application naming the ApplicationSet that owns it.
pub const APPLICATION_SET_LABEL: &str = "flotilla.dev/application-set";
/// Annotation asking for an immediate regeneration of an ApplicationSet or a fresh compare of an
/// Application (a git webhook or a person sets it); removed once done.
pub const REFRESH_ANNOTATION: &str = "flotilla.dev/refresh";
/// Label naming the RollingSync step (1-based) of an analysis Job.
pub const STEP_LABEL: &str = "flotilla.dev/rollout-step";

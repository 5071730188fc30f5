//! RollingSync, the pure core: validating a strategy into steps, the step function that moves
//! each generated Application through Waiting → Pending → Progressing → Healthy (a step's bake,
//! approval and analysis kept in its record), the offline state file, explaining a decision, the
//! layout of its drawing as a pipeline, and the order a deleted ApplicationSet's Applications go
//! in (`deletionOrder: Reverse`). No Kubernetes client and no clock live here; the controller
//! observes, calls [`step`], and writes what it returns.

mod advance;
pub mod analysis;
mod approval;
mod bake;
pub mod condition;
pub mod conditions;
pub mod config;
pub mod decision;
pub mod explain;
pub mod external;
pub mod graph;
pub mod input;
pub mod json_path;
pub mod metric;
pub mod pipeline_layout;
pub mod reverse_deletion;
pub mod rollback;
pub mod state_file;
mod step_record;

pub use advance::advance;
pub use conditions::merge_conditions;
pub use config::{MaxUpdate, RolloutConfig, RolloutConfigError};
pub use decision::{RolloutDecision, StepReport, StepState};
pub use input::{ApplicationState, ObservedStatus, OperationState, RolloutInput};
pub use rollback::RollbackSync;

#[cfg(test)]
mod external_tests;
#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod tests;

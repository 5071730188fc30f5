//! The per-Application sync engine: its pure core (flotilla-core's `sync`, re-exported here so
//! `crate::sync::plan_step` reads the same everywhere), the plan of a generated source, the
//! settings an Application asks for and the executor that carries out the decisions.

pub use flotilla_core::sync::*;

pub mod application_settings;
pub mod execute;
mod load;

pub use load::load_plan;

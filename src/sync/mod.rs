//! The per-Application sync engine's shell (its pure core is [`flotilla_core::sync`]): the plan
//! of a generated source, the settings an Application asks for and the executor that carries
//! out the decisions.

pub mod application_settings;
pub mod execute;
mod load;

pub use load::load_plan;

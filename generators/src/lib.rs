//! Flotilla's generators and templating: expand an ApplicationSet's generators into ordered
//! parameter sets and render templates with them, field by field. Pure: data sources (git trees,
//! cluster inventories, namespace objects, plugin services, SCM providers' APIs) are injected through traits, and no Kubernetes client is linked.

pub mod cause;
mod cluster_decision;
mod clusters;
pub mod duration;
pub mod generator;
mod git;
mod list;
mod matrix;
mod merge;
pub mod params;
pub mod plugin;
pub mod scm;
pub mod scm_api;
pub mod selector;
pub mod source;
pub mod spec;
pub mod strict;
pub mod template;
#[cfg(test)]
mod testing;

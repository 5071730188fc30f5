//! Flotilla's generators and templating: expand an ApplicationSet's generators into ordered
//! parameter sets and render templates with them, field by field. Pure: data sources (git trees,
//! cluster inventories) are injected through traits, and no Kubernetes client is linked.

pub mod clusters;
pub mod generator;
pub mod git;
pub mod git_directories;
pub mod git_files;
pub mod list;
pub mod matrix;
pub mod merge;
pub mod params;
pub mod selector;
pub mod source;
pub mod spec;
pub mod template;
#[cfg(test)]
mod testing;

//! Flotilla's generators and templating: expand an ApplicationSet's generators into ordered
//! parameter sets and render templates with them, field by field. Pure: data sources (git trees,
//! cluster inventories) are injected through traits, and no Kubernetes client is linked.

pub mod params;
pub mod selector;
pub mod source;
pub mod spec;
pub mod template;

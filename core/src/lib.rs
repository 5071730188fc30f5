//! Flotilla's pure core: the CRD types and the records stored in them, manifests, health,
//! projects and sync windows, Config Management Plugins' files and environment, the RollingSync
//! decisions, the sync engine's plan and steps and the controllers' decisions. No Kubernetes
//! client, no processes:
//! the crate does not depend on kube's client, so the compiler proves these stay pure.

pub mod api;
pub mod cmp;
pub mod controller;
pub mod health;
pub mod hex;
pub mod html;
pub mod import;
pub mod manifest;
pub mod memo;
pub mod notify;
pub mod project;
pub mod resource_tree;
pub mod rollout;
pub mod secrets;
pub mod simulated_pod;
pub mod stable_hash;
pub mod sync;
pub mod table;
pub mod yaml;

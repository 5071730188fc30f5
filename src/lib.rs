//! Flotilla: ApplicationSets, RollingSync and a wave/hook sync engine for Kubernetes.

// The pure core, re-exported so `crate::api` and friends read the same in every layer.
pub use flotilla_core::{
    api, duration, health, hex, html, import, manifest, notify, project, rollout, secrets,
    stable_hash, table, yaml,
};

pub mod actions;
pub mod cli;
pub mod cluster;
pub mod controller;
pub mod customizations;
pub mod httpd;
pub mod notifier;
pub mod render;
pub mod repo;
pub mod simulate;
pub mod source;
pub mod sync;
pub mod ui;
pub mod webhook;

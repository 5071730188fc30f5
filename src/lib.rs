//! Flotilla: ApplicationSets, RollingSync and a wave/hook sync engine for Kubernetes.

pub mod api;
pub mod cli;
pub mod health;
pub mod manifest;
pub mod sync;

//! Flotilla: ApplicationSets, RollingSync and a wave/hook sync engine for Kubernetes.

pub mod api;
pub mod cli;
pub mod cluster;
pub mod controller;
pub mod customizations;
pub use flotilla_generators::duration;
pub mod health;
pub mod html;
pub mod httpd;
pub mod manifest;
pub mod nodesim;
pub mod project;
pub mod render;
pub mod repo;
pub mod rollout;
pub mod secrets;
pub mod simulate;
pub mod source;
pub mod sync;
pub mod table;
pub mod ui;
pub mod yaml;

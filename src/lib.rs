//! Flotilla: ApplicationSets, RollingSync and a wave/hook sync engine for Kubernetes.

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
pub mod web;
pub mod webhook;

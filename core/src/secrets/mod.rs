//! Argo CD's declarative Secrets, read purely: cluster registrations ([`cluster`]), what a
//! cluster lets the controller manage ([`cluster_scope`]) and repository credentials
//! ([`repository`]). Below every module that connects to a cluster or a repository.

pub mod cluster;
pub mod cluster_scope;
pub mod repository;

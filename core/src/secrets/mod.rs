//! Argo CD's declarative Secrets, read purely: cluster registrations ([`cluster`]) and repository
//! credentials ([`repository`]). Below every module that connects to a cluster or a repository.

pub mod cluster;
pub mod repository;

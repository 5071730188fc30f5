//! The controllers' pure cores: what the ApplicationSet controller writes and requests
//! ([`appset`]), what the Application controller compares, decides and records
//! ([`application`]), why either publishes an Event ([`event_reason`]) and how many routine ones
//! ([`event_budget`]), which namespaces hold Applications ([`application_namespaces`]), who leads
//! ([`leader`]) and which replica owns which Application ([`shard`]). The I/O shells that
//! carry these out live in flotilla's `controller`.

pub mod application;
pub mod application_namespaces;
pub mod appset;
pub mod event_budget;
pub mod event_reason;
pub mod leader;
pub mod shard;

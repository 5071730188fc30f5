//! What every controller of the process runs on: one controller per managed namespace
//! ([`namespace_controllers`]), Events ([`events`]), metrics and the operations endpoint
//! ([`metrics`], with what is read when scraped in [`observed`], [`rollout_metrics`] and
//! [`process_metrics`], Argo CD's names in [`argocd_metrics`];
//! [`endpoint`]), the fair limit on the reconciles running at once ([`admission`]), the CPU time a reconcile spends ([`cpu_time`]), what a controller yields besides reconciles ([`controller_errors`]), the retry backoff of the error policies ([`failure_backoff`]),
//! graceful shutdown ([`graceful_shutdown`]), the wait for a watch's first list ([`store_ready`])
//! and slow reconciles reported ([`slow_reconcile`]).

pub mod admission;
pub mod argocd_metrics;
pub mod controller_errors;
pub mod cpu_time;
pub mod endpoint;
pub mod events;
pub mod failure_backoff;
pub mod graceful_shutdown;
pub mod metrics;
pub mod namespace_controllers;
pub mod observed;
pub mod process_metrics;
pub mod rollout_metrics;
pub mod slow_reconcile;
pub mod store_ready;

//! The engine's [`ClusterApi`](crate::sync::execute::cluster_api::ClusterApi) on a real API
//! server ([`kube_cluster`]): its resource types ([`resource_types`]), the requests it counts
//! ([`request_count`]), how an API error reads ([`api_error`]), and the CLI's operation store
//! ([`operation_configmap`]); the controller's clients, rate-limited ([`token_bucket`]) and
//! retrying when throttled ([`throttled_retry`]) as [`api_limits`] assembles them, every request
//! counted ([`k8s_requests`]).

pub mod api_error;
pub mod api_limits;
pub mod k8s_requests;
pub mod kube_cluster;
pub mod operation_configmap;
pub mod request_count;
pub mod resource_types;
pub mod throttled_retry;
pub mod token_bucket;

//! Clusters Flotilla deploys to: Argo CD-style cluster Secrets and the inventories built from them,
//! and the operations a sync performs on one cluster.

pub mod api_error;
pub mod clients;
pub mod connection;
pub mod decision_watches;
pub mod destination;
pub mod inventory;
pub mod kube_cluster;
pub mod listed_watch;
pub mod live_inventory;
pub mod namespace_objects;
pub mod operation_configmap;
pub mod request_count;
pub mod resource_types;
pub mod tracked_cache;
mod tracked_objects;
pub mod watched_customizations;
pub mod watched_namespaces;
pub mod watched_object;
pub mod watched_projects;
pub mod watched_secrets;

//! Clusters Flotilla deploys to: Argo CD-style cluster Secrets and the inventories built from them.

pub mod inventory;
pub mod live_inventory;
pub mod secret;

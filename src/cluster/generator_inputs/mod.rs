//! What generators read from the cluster: cluster inventories ([`inventory`],
//! [`live_inventory`]), the objects of an ApplicationSet's namespace ([`namespace_objects`]) and
//! the watches on the kinds clusterDecisionResource generators read ([`decision_watches`]).

pub mod decision_watches;
pub mod inventory;
pub mod live_inventory;
pub mod namespace_objects;

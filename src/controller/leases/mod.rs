//! When and on what this replica acts: the leader Lease's loop ([`lease_lock`]) and the deadline
//! it establishes ([`leadership`], with the write gate on the controller's clients), a sharded
//! replica's member Lease ([`member_lease`]) and the slots it owns ([`ownership`]), and whether
//! the replica is ready ([`readiness`]).

pub mod leadership;
pub mod lease_lock;
pub mod member_lease;
pub mod ownership;
pub mod readiness;

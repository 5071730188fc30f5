//! Sharding the Applications between `flotilla controller` replicas, decided purely: which slot
//! an Application falls in and how slots are written in a Lease ([`slots`]), which live member
//! owns each slot ([`assignment`]: consistent hashing with bounded loads), and the membership
//! protocol as a step function ([`membership`]: when a replica may start and must stop acting
//! on a slot, so that no Application is ever synced by two replicas at once). flotilla's
//! `controller::member_lease` does the I/O.

pub mod assignment;
pub mod membership;
pub mod slots;

//! The objects of a cluster that carry the tracking annotation, kept by watches
//! ([`tracked_cache`]) and indexed by Application.

pub mod tracked_cache;
mod tracked_objects;

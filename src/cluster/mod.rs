//! Clusters Flotilla deploys to: the operations a sync performs on one cluster through its API
//! server ([`api_server`]) and the objects it tracks there ([`tracked`]); how a destination is
//! reached ([`destinations`]); the objects of the control plane kept by watches ([`watches`]);
//! and what generators read from the cluster ([`generator_inputs`]).

pub mod api_server;
pub mod destinations;
pub mod generator_inputs;
pub mod tracked;
pub mod watches;

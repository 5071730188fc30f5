//! What an operator does to a running fleet, one implementation per action, shared by the
//! command line (`flotilla app sync|terminate`, `flotilla rollout pause|resume|promote`) and the
//! web view: [`action`] names them and the access each needs (pure); [`application`] requests
//! and terminates an Application's sync, [`rollout`] pauses, resumes and promotes an
//! ApplicationSet's rollout, each as one merge patch through the client it is given;
//! [`application_plan`] reads what an Application would apply and [`compare`] compares one
//! object with it ([`unified_diff`] prints the difference).

pub mod action;
pub mod application;
pub mod application_plan;
pub mod compare;
pub mod error;
mod object;
pub mod rollout;
pub mod unified_diff;

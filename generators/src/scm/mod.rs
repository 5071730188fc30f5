//! The `pullRequest` generator ([`pull_request`]) and what it needs beyond reading pages
//! ([`crate::scm_api`]): where each provider's API is and how it authenticates ([`endpoint`]),
//! and branch slugs ([`slug`]).

pub mod endpoint;
mod pull_request;
pub mod slug;

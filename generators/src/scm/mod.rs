//! The generators that read SCM providers' REST APIs — `pullRequest` ([`pull_request`]) and
//! `scmProvider` ([`scm_provider`], over an organisation's [`repositories`]) — and what they
//! share beyond reading pages ([`crate::scm_api`]): where each provider's API is and how it
//! authenticates ([`endpoint`]), filters' regular expressions ([`pattern`]) and branch slugs
//! ([`slug`]).

pub mod endpoint;
mod pattern;
mod pull_request;
mod repositories;
mod scm_provider;
pub mod slug;

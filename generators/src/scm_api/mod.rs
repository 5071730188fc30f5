//! Reading SCM providers' REST APIs, whatever the generator: lists page by page ([`paging`])
//! and "rate limited" answers ([`rate_limit`]). The GETs go through
//! [`crate::source::ScmApi`].

pub mod paging;
pub mod rate_limit;

//! The pure core of the ApplicationSet controller: which Applications to write ([`diff`]), how
//! they are marked as owned ([`ownership`]), what is checked before writing ([`validate`]), when
//! to regenerate ([`requeue`]) and what status results ([`status`]). No API client here.

pub mod diff;
pub mod ownership;
pub mod requeue;
pub mod status;
pub mod validate;

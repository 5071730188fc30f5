//! Notifications' decisions: the configuration ([`config`]), the events of the triggers read
//! from status ([`trigger`], [`occurrence`]), which deliveries are due and which were made
//! ([`ledger`]), and what each sends ([`message`]). The controller's notifier
//! (`notifier` of the flotilla crate) reads and writes; everything here is pure.

pub mod argo;
pub mod config;
pub mod ledger;
pub mod message;
pub mod occurrence;
pub mod trigger;

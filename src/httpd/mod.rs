//! The controller's one HTTP stack (hyper 1, HTTP/1.1): [`server`] accepts connections within
//! [`server::Limits`] (concurrent connections, a bounded wait for a slot, header-read and idle
//! timeouts; refusals counted by [`listener_counters`]) and answers only
//! the methods a handler takes (GET and HEAD unless it says otherwise); [`idle`] closes a
//! connection on which nothing moved for too long; [`response`] is the body type and the plain
//! answers every handler shares. It knows no routes: the `/metrics` endpoint, the web view and
//! the git webhook receiver ([`crate::webhook`]) are handlers given to [`server::serve`].
//! [`client`] sends one request and reads its answer (generator plugins, notifications).

pub mod client;
pub mod idle;
pub mod listener_counters;
pub mod response;
pub mod server;

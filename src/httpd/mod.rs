//! The controller's one HTTP stack (hyper 1, HTTP/1.1): [`server`] accepts connections within
//! [`server::Limits`] (concurrent connections, header-read and idle timeouts) and answers only
//! GET and HEAD; [`idle`] closes a connection on which nothing moved for too long; [`response`]
//! is the body type and the plain answers every handler shares. It knows no routes: the
//! `/metrics` endpoint and the web view are handlers given to [`server::serve`].

pub mod idle;
pub mod response;
pub mod server;

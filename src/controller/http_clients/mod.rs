//! The controller's HTTP clients: generator plugins ([`plugin_client`]), SCM providers' APIs
//! ([`scm_client`]), one request to a URL (notifications, analysis GETs; [`url_request`]), and
//! TLS for all of them ([`plugin_tls`]).

pub mod plugin_client;
pub mod plugin_tls;
pub mod scm_client;
pub mod url_request;

//! TLS for generator plugins (and notification services) served over `https://`: rustls (with
//! ring, as kube's client uses), verifying the plugin's certificate and host name against the
//! system's trusted roots, as Argo CD's HTTP client does; a caller may give other roots instead
//! (tests, a private CA).

use std::sync::{Arc, LazyLock};

use rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// The system's roots, read once per process.
static SYSTEM: LazyLock<Result<PluginTls, String>> = LazyLock::new(|| {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::warn!("reading the system's trusted certificates for plugins: {error}");
    }
    let mut roots = RootCertStore::empty();
    let (_, unusable) = roots.add_parsable_certificates(found.certs);
    if unusable > 0 {
        tracing::warn!("{unusable} of the system's trusted certificates could not be used");
    }
    PluginTls::trusting(roots)
});

/// How `https://` plugins are connected to: the roots their certificates must chain to.
#[derive(Clone)]
pub struct PluginTls {
    connector: TlsConnector,
}

impl PluginTls {
    /// Trusting the system's roots.
    ///
    /// # Errors
    /// The TLS configuration could not be made.
    pub fn system() -> Result<Self, String> {
        SYSTEM.clone()
    }

    /// Trusting only `roots`.
    ///
    /// # Errors
    /// The TLS configuration could not be made.
    pub fn trusting(roots: RootCertStore) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| format!("no TLS configuration for plugins: {error}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// The connector that opens TLS connections with these roots.
    #[must_use]
    pub fn connector(&self) -> &TlsConnector {
        &self.connector
    }
}

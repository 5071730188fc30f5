//! TLS for generator plugins (and notification services, SCM providers' APIs) served over
//! `https://`: rustls (with ring, as kube's client uses), verifying the server's certificate and
//! host name against the system's trusted roots, as Argo CD's HTTP client does; a caller may give
//! other roots instead (tests, a private CA), or, for an SCM provider with `insecure: true`,
//! accept any certificate as Argo CD then does.

use std::sync::{Arc, LazyLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
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

    /// Accepting any certificate for any host name (still checking the handshake's
    /// signatures): Argo CD's `insecure: true` of an SCM provider.
    ///
    /// # Errors
    /// The TLS configuration could not be made.
    pub fn accepting_any() -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|error| format!("no TLS configuration: {error}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
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

/// Accepts every server certificate; verifies the handshake signatures with the provider's
/// algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

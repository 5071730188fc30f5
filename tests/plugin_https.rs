//! Generator plugins over `https://`: the plugin client against a TLS plugin service on loopback
//! whose certificate, for `localhost`, is signed by a CA the test makes. Trusting that CA the call
//! succeeds over real TLS; with the system's roots it fails, saying so.

mod support;

use std::sync::Arc;
use std::time::Duration;

use flotilla::controller::http_clients::plugin_client::HttpPlugins;
use flotilla::controller::http_clients::plugin_tls::PluginTls;
use flotilla_generators::source::{PluginCallError, PluginService};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use support::plugin_service;
use tokio_rustls::TlsAcceptor;

/// A CA certificate, and a server certificate for `localhost` signed by it with its key.
fn certificates() -> (
    CertificateDer<'static>,
    CertificateDer<'static>,
    PrivateKeyDer<'static>,
) {
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca_params = CertificateParams::new(Vec::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("a CA certificate");
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().expect("a server key");
    let server = CertificateParams::new(vec!["localhost".to_string()])
        .expect("server parameters")
        .signed_by(&server_key, &issuer)
        .expect("a server certificate");
    let key = PrivatePkcs8KeyDer::from(server_key.serialize_der()).into();
    (ca.der().clone(), server.der().clone(), key)
}

fn acceptor(certificate: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> TlsAcceptor {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key)
        .expect("a server configuration");
    TlsAcceptor::from(Arc::new(config))
}

/// Calls the plugin at `base` from a blocking thread, as generation does.
async fn call(tls: Result<PluginTls, String>, base: &str) -> Result<Value, PluginCallError> {
    let plugins = HttpPlugins::with_tls(
        tokio::runtime::Handle::current(),
        Duration::from_secs(30),
        tls,
    );
    let url = format!("{base}/api/v1/getparams.execute");
    let body = json!({"applicationSetName": "over-tls", "input": {"parameters": {"apps": ["a"]}}});
    tokio::task::spawn_blocking(move || plugins.call(&url, "s3cret", &body))
        .await
        .expect("the call ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_plugin_is_called_over_tls_verified_against_the_trusted_roots() {
    let (ca, server, key) = certificates();
    let base = plugin_service::start_tls("s3cret", acceptor(server, key)).await;
    assert!(base.starts_with("https://localhost:"), "{base}");

    let mut roots = RootCertStore::empty();
    roots.add(ca).expect("the CA is a valid root");
    let answer = call(PluginTls::trusting(roots), &base)
        .await
        .expect("answers");
    assert_eq!(
        answer,
        json!({"output": {"parameters": [{"app": "a", "appset": "over-tls"}]}})
    );

    let refused = call(PluginTls::system(), &base).await.unwrap_err();
    let PluginCallError::Unreachable { context, .. } = &refused else {
        panic!("expected a connection error, got {refused:?}");
    };
    assert_eq!(context, "TLS");
    let message = refused.to_string();
    assert!(
        message.starts_with("cannot connect: TLS: ") && message.contains("UnknownIssuer"),
        "{message}"
    );
    let cause = std::error::Error::source(&refused).expect("the TLS error is kept as the source");
    assert!(cause.to_string().contains("UnknownIssuer"), "{cause}");
}

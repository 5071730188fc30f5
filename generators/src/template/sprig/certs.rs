//! sprig's key and certificate functions: `genPrivateKey`, `genCA`, `genCAWithKey`,
//! `genSelfSignedCert`, `genSelfSignedCertWithKey`, `genSignedCert`, `genSignedCertWithKey` and
//! `buildCustomCert`. A certificate is sprig's `certificate` struct: `.Cert` and `.Key` are PEM
//! text, and it is what `genSignedCert` takes as its CA. Certificates are made as sprig's
//! `getBaseCertTemplate` makes them: a random 128-bit serial, the subject's common name only,
//! valid from now for the given days, key usage digital signature and key encipherment
//! (certificate signing too for a CA), extended key usage server and client authentication,
//! basic constraints; their own keys are RSA 2048. Key formats live in [`super::keys`].

use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine as _;
use minijinja::value::{Object, ObjectRepr, Rest, Value};
use minijinja::{Environment, Error};
use rcgen::string::PrintableString;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, RsaKeySize, SanType,
    SerialNumber,
};
use x509_parser::prelude::{FromDer as _, X509Certificate};

use super::keys::{self, KeyError};
use super::{fail, int_arg, list_arg, string_arg};

/// Seconds in one day of validity (sprig adds `24h` per day).
const DAY_SECONDS: i64 = 24 * 60 * 60;

/// sprig's `certificate`: a PEM certificate and its PEM private key.
#[derive(Debug)]
pub(super) struct Certificate {
    cert: String,
    key: String,
}

impl Object for Certificate {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, field: &Value) -> Option<Value> {
        match field.as_str()? {
            "Cert" => Some(Value::from(self.cert.as_str())),
            "Key" => Some(Value::from(self.key.as_str())),
            _ => None,
        }
    }

    /// Go's `%v` of a struct: its fields' values in braces.
    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{{} {}}}", self.cert, self.key)
    }
}

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
enum CertError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("error parsing ip: {0} is not a string")]
    IpNotString(String),
    #[error("error parsing ip: {0}")]
    Ip(String),
    #[error("error processing alternate dns name: {0} is not a string")]
    DnsNotString(String),
    #[error("invalid certificate field: {0}")]
    Field(#[source] rcgen::Error),
    #[error("error creating certificate: {0}")]
    Create(#[source] rcgen::Error),
    #[error("no random source: {0}")]
    Random(#[source] getrandom::Error),
    #[error("unable to decode base64 certificate")]
    CertBase64,
    #[error("unable to decode base64 private key")]
    KeyBase64,
    #[error("unable to decode certificate")]
    CertPem,
    #[error("error parsing certificate: {0}")]
    CertDer(String),
    #[error("error parsing private key: {0}")]
    SignerKey(#[source] KeyError),
    #[error("x509: provided PrivateKey doesn't match parent's PublicKey")]
    KeyMismatch,
    #[error(
        "the CA's subject cannot be written back exactly (it has an attribute type twice or \
         several in one RDN), so the certificate would not chain to it"
    )]
    IssuerName,
}

/// The certificate to make: sprig's arguments.
struct Request {
    cn: String,
    ips: Vec<IpAddr>,
    dns_names: Vec<String>,
    days: i64,
    is_ca: bool,
}

impl Request {
    /// The certificate fields sprig's `getBaseCertTemplate` sets (and a CA's overrides).
    fn params(&self) -> Result<CertificateParams, CertError> {
        let mut serial = [0u8; 16];
        getrandom::fill(&mut serial).map_err(CertError::Random)?;
        let mut params = CertificateParams::default();
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        params.distinguished_name = DistinguishedName::new();
        if !self.cn.is_empty() {
            // Go writes a PrintableString when it can, a UTF8String otherwise.
            let value = match PrintableString::try_from(self.cn.as_str()) {
                Ok(printable) => DnValue::PrintableString(printable),
                Err(_) => DnValue::Utf8String(self.cn.clone()),
            };
            params.distinguished_name.push(DnType::CommonName, value);
        }
        // Go writes the DNS names first, then the IP addresses.
        for name in &self.dns_names {
            let name = name.as_str().try_into().map_err(CertError::Field)?;
            params.subject_alt_names.push(SanType::DnsName(name));
        }
        params
            .subject_alt_names
            .extend(self.ips.iter().map(|ip| SanType::IpAddress(*ip)));
        let now = time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap_or(params.not_before);
        params.not_before = now;
        params.not_after = now + time::Duration::seconds(self.days.saturating_mul(DAY_SECONDS));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.is_ca = if self.is_ca {
            params.key_usages.push(KeyUsagePurpose::KeyCertSign);
            IsCa::Ca(BasicConstraints::Unconstrained)
        } else {
            IsCa::ExplicitNoCa
        };
        Ok(params)
    }

    /// Makes the certificate for `key` (a new RSA 2048 key when `None`), self-signed or signed
    /// by `ca`.
    fn issue(
        &self,
        key: Option<KeyPair>,
        ca: Option<&Certificate>,
    ) -> Result<Certificate, CertError> {
        let key = match key {
            Some(key) => key,
            None => keys::generate_rsa(RsaKeySize::_2048)?,
        };
        let mut params = self.params()?;
        let der = match ca {
            None => params
                .self_signed(&key)
                .map_err(CertError::Create)?
                .der()
                .to_vec(),
            Some(ca) => {
                let signer = keys::from_pem(&ca.key).map_err(CertError::SignerKey)?;
                let ca_der = pem::parse(&ca.cert)
                    .map_err(|_| CertError::CertPem)?
                    .into_contents();
                let (_, ca_cert) = X509Certificate::from_der(&ca_der)
                    .map_err(|error| CertError::CertDer(error.to_string()))?;
                if ca_cert.public_key().raw
                    != rcgen::PublicKeyData::subject_public_key_info(&signer)
                {
                    return Err(CertError::KeyMismatch);
                }
                // Go names the CA's key identifier when the CA has one.
                params.use_authority_key_identifier_extension =
                    ca_cert.extensions().iter().any(|extension| {
                        extension.oid
                            == x509_parser::oid_registry::OID_X509_EXT_SUBJECT_KEY_IDENTIFIER
                    });
                let issuer = Issuer::from_ca_cert_der(&ca_der.as_slice().into(), signer)
                    .map_err(|_| CertError::IssuerName)?;
                let der = params
                    .signed_by(&key, &issuer)
                    .map_err(CertError::Create)?
                    .der()
                    .to_vec();
                let (_, made) = X509Certificate::from_der(&der)
                    .map_err(|error| CertError::CertDer(error.to_string()))?;
                if made.issuer().as_raw() != ca_cert.subject().as_raw() {
                    return Err(CertError::IssuerName);
                }
                der
            }
        };
        Ok(Certificate {
            cert: keys::pem_text("CERTIFICATE", der),
            key: keys::to_pem(&key)?,
        })
    }
}

/// `buildCustomCert`: a certificate from a base64 PEM certificate and a base64 PEM key, both
/// checked as sprig checks them and kept as given.
fn build_custom(b64_cert: &str, b64_key: &str) -> Result<Certificate, CertError> {
    let base64 = base64::engine::general_purpose::STANDARD;
    let cert = base64.decode(b64_cert).map_err(|_| CertError::CertBase64)?;
    let key = base64.decode(b64_key).map_err(|_| CertError::KeyBase64)?;
    let block = pem::parse(&cert).map_err(|_| CertError::CertPem)?;
    X509Certificate::from_der(block.contents())
        .map_err(|error| CertError::CertDer(error.to_string()))?;
    let key = String::from_utf8_lossy(&key).into_owned();
    keys::check_pem(&key).map_err(CertError::SignerKey)?;
    Ok(Certificate {
        cert: String::from_utf8_lossy(&cert).into_owned(),
        key,
    })
}

/// The IP addresses of a list argument (nil is none); an IPv4-mapped IPv6 address is IPv4, as
/// Go writes it.
fn ip_list(function: &str, value: &Value) -> Result<Vec<IpAddr>, Error> {
    list_arg(function, value)?
        .iter()
        .map(|item| {
            let text = item
                .as_str()
                .ok_or_else(|| CertError::IpNotString(super::strval(item)))?;
            let ip: IpAddr = text.parse().map_err(|_| CertError::Ip(text.to_string()))?;
            Ok(ip.to_canonical())
        })
        .collect::<Result<_, CertError>>()
        .map_err(|error| fail(function, error))
}

/// The DNS names of a list argument (nil is none).
fn dns_list(function: &str, value: &Value) -> Result<Vec<String>, Error> {
    list_arg(function, value)?
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| fail(function, CertError::DnsNotString(super::strval(item))))
        })
        .collect()
}

/// A CA argument: a certificate from one of these functions.
fn ca_arg(function: &str, value: &Value) -> Result<Arc<Certificate>, Error> {
    value.downcast_object::<Certificate>().ok_or_else(|| {
        fail(
            function,
            format!(
                "the CA must be a certificate from genCA, buildCustomCert or another certificate \
                 function, got {}",
                value.kind()
            ),
        )
    })
}

/// A `…WithKey` key argument.
fn key_arg(function: &str, value: &Value) -> Result<KeyPair, Error> {
    keys::from_pem(&string_arg(function, value)?)
        .map_err(|error| fail(function, format!("parsing private key: {error}")))
}

/// The arguments of the self-signed and signed forms: cn, ips, alternate DNS names, days.
fn request(
    function: &str,
    cn: &Value,
    ips: &Value,
    dns: &Value,
    days: &Value,
) -> Result<Request, Error> {
    Ok(Request {
        cn: string_arg(function, cn)?.into_owned(),
        ips: ip_list(function, ips)?,
        dns_names: dns_list(function, dns)?,
        days: int_arg(function, days)?,
        is_ca: false,
    })
}

/// A CA's arguments: cn and days.
fn ca_request(function: &str, cn: &Value, days: &Value) -> Result<Request, Error> {
    Ok(Request {
        cn: string_arg(function, cn)?.into_owned(),
        ips: Vec::new(),
        dns_names: Vec::new(),
        days: int_arg(function, days)?,
        is_ca: true,
    })
}

/// Makes the certificate and hands it to the template.
fn issued(
    function: &str,
    request: &Request,
    key: Option<KeyPair>,
    ca: Option<&Certificate>,
) -> Result<Value, Error> {
    request
        .issue(key, ca)
        .map(Value::from_object)
        .map_err(|error| fail(function, error))
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("genPrivateKey", |kind: Value| {
        let kind = string_arg("genPrivateKey", &kind)?;
        match keys::generate_pem(&kind) {
            // sprig prints this instead of failing.
            None => Ok(Value::from(format!("Unknown type {kind}"))),
            Some(pem) => pem
                .map(Value::from)
                .map_err(|error| fail("genPrivateKey", error)),
        }
    });
    env.add_function("genCA", |cn: Value, days: Value| {
        issued("genCA", &ca_request("genCA", &cn, &days)?, None, None)
    });
    env.add_function("genCAWithKey", |cn: Value, days: Value, key: Value| {
        const NAME: &str = "genCAWithKey";
        let request = ca_request(NAME, &cn, &days)?;
        issued(NAME, &request, Some(key_arg(NAME, &key)?), None)
    });
    env.add_function(
        "genSelfSignedCert",
        |cn: Value, ips: Value, dns: Value, days: Value| {
            const NAME: &str = "genSelfSignedCert";
            issued(NAME, &request(NAME, &cn, &ips, &dns, &days)?, None, None)
        },
    );
    env.add_function(
        "genSelfSignedCertWithKey",
        |cn: Value, ips: Value, dns: Value, days: Value, key: Value| {
            const NAME: &str = "genSelfSignedCertWithKey";
            let request = request(NAME, &cn, &ips, &dns, &days)?;
            issued(NAME, &request, Some(key_arg(NAME, &key)?), None)
        },
    );
    env.add_function(
        "genSignedCert",
        |cn: Value, ips: Value, dns: Value, days: Value, ca: Value| {
            const NAME: &str = "genSignedCert";
            let request = request(NAME, &cn, &ips, &dns, &days)?;
            let ca = ca_arg(NAME, &ca)?;
            issued(NAME, &request, None, Some(&ca))
        },
    );
    // Six arguments: one more than minijinja's typed functions take.
    env.add_function("genSignedCertWithKey", |args: Rest<Value>| {
        const NAME: &str = "genSignedCertWithKey";
        let [cn, ips, dns, days, ca, key] = args.as_slice() else {
            return Err(fail(
                NAME,
                "needs a common name, IPs, DNS names, days, a CA and a private key",
            ));
        };
        let request = request(NAME, cn, ips, dns, days)?;
        let ca = ca_arg(NAME, ca)?;
        issued(NAME, &request, Some(key_arg(NAME, key)?), Some(&ca))
    });
    env.add_function("buildCustomCert", |cert: Value, key: Value| {
        const NAME: &str = "buildCustomCert";
        build_custom(&string_arg(NAME, &cert)?, &string_arg(NAME, &key)?)
            .map(Value::from_object)
            .map_err(|error| fail(NAME, error))
    });
}

#[cfg(test)]
mod tests {
    use std::time::{SystemTime, UNIX_EPOCH};

    use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
    use x509_parser::prelude::{GeneralName, X509Certificate};

    use super::super::test_support::{check_errors, render};
    use super::*;

    /// What one certificate must hold.
    struct Expected<'a> {
        cn: &'a str,
        dns: &'a [&'a str],
        ips: &'a [&'a [u8]],
        days: i64,
        ca: bool,
        /// The PEM label of its key.
        key_label: &'a str,
    }

    /// The PEM blocks of a rendered template, in order.
    fn blocks(template: &str) -> Vec<pem::Pem> {
        let text = render(template).unwrap_or_else(|error| panic!("{template}: {error}"));
        pem::parse_many(&text).expect("PEM blocks")
    }

    fn parse(block: &pem::Pem) -> X509Certificate<'_> {
        assert_eq!(block.tag(), "CERTIFICATE");
        X509Certificate::from_der(block.contents())
            .expect("X.509")
            .1
    }

    /// Checks `cert`, its `key` and its `issuer` (itself when self-signed) against `expected`.
    fn check_certificate(cert: &pem::Pem, key: &pem::Pem, issuer: &pem::Pem, expected: &Expected) {
        let name = expected.cn;
        let x509 = parse(cert);
        let issuer_x509 = parse(issuer);
        assert_eq!(x509.version().0, 2, "{name}: X.509 v3");
        let cn: Vec<&str> = x509
            .subject()
            .iter_common_name()
            .map(|cn| cn.as_str().expect("CN text"))
            .collect();
        assert_eq!(cn, [name], "{name}: subject CN only");
        assert_eq!(
            x509.subject().iter().count(),
            1,
            "{name}: subject is the CN only"
        );
        let (mut dns, mut ips) = (Vec::new(), Vec::new());
        if let Some(san) = x509.subject_alternative_name().expect("SAN") {
            for general in &san.value.general_names {
                match general {
                    GeneralName::DNSName(dns_name) => dns.push(*dns_name),
                    GeneralName::IPAddress(ip) => ips.push(*ip),
                    other => panic!("{name}: unexpected SAN {other:?}"),
                }
            }
        }
        assert_eq!(
            (dns.as_slice(), ips.as_slice()),
            (expected.dns, expected.ips),
            "{name}"
        );
        let validity = x509.validity();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let not_before = validity.not_before.timestamp();
        assert!(
            now.abs_diff(not_before.unsigned_abs()) < 60,
            "{name}: valid from now"
        );
        assert_eq!(
            validity.not_after.timestamp() - not_before,
            expected.days * DAY_SECONDS,
            "{name}: valid for {} days",
            expected.days
        );
        let constraints = x509.basic_constraints().expect("basic constraints");
        let constraints = constraints.expect("basic constraints present");
        assert!(constraints.critical);
        assert_eq!(constraints.value.ca, expected.ca, "{name}: CA flag");
        let usage = x509.key_usage().expect("key usage").expect("present").value;
        assert!(
            usage.digital_signature() && usage.key_encipherment(),
            "{name}"
        );
        assert_eq!(
            usage.key_cert_sign(),
            expected.ca,
            "{name}: certificate signing"
        );
        let extended = x509
            .extended_key_usage()
            .expect("EKU")
            .expect("present")
            .value;
        assert!(extended.server_auth && extended.client_auth, "{name}");
        assert!(x509.raw_serial().len() <= 17, "{name}: a 128-bit serial");
        assert_eq!(
            x509.issuer().as_raw(),
            issuer_x509.subject().as_raw(),
            "{name}: issuer"
        );
        x509.verify_signature(Some(issuer_x509.public_key()))
            .unwrap_or_else(|error| panic!("{name}: signature does not verify: {error}"));
        assert_eq!(key.tag(), expected.key_label, "{name}: key type");
        let key_pair = keys::from_pem(&pem::encode(key)).expect("key reads");
        assert_eq!(
            rcgen::PublicKeyData::subject_public_key_info(&key_pair),
            x509.public_key().raw,
            "{name}: the key is the certificate's"
        );
    }

    /// Verifies `leaf` as rustls would for a server named `name`, trusting only `ca`.
    fn verify_chain(leaf: &pem::Pem, ca: &pem::Pem, name: &str) {
        let ca_der = CertificateDer::from(ca.contents());
        let anchors = [webpki::anchor_from_trusted_cert(&ca_der).expect("trust anchor")];
        let leaf_der = CertificateDer::from(leaf.contents());
        let leaf = webpki::EndEntityCert::try_from(&leaf_der).expect("end-entity certificate");
        leaf.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &[],
            UnixTime::now(),
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .unwrap_or_else(|error| panic!("{name}: does not chain to the CA: {error}"));
        let server = ServerName::try_from(name).expect("server name");
        leaf.verify_is_valid_for_subject_name(&server)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
    }

    const CA: Expected = Expected {
        cn: "foo-ca",
        dns: &[],
        ips: &[],
        days: 365,
        ca: true,
        key_label: "RSA PRIVATE KEY",
    };
    const FOO: Expected = Expected {
        cn: "foo.com",
        dns: &["bar.com", "bat.com"],
        ips: &[&[10, 0, 0, 1], &[10, 0, 0, 2]],
        days: 365,
        ca: false,
        key_label: "RSA PRIVATE KEY",
    };

    #[test]
    fn gen_ca_and_gen_signed_cert_as_sprig_documents_them() {
        // sprig's documented example; the second address written IPv4-mapped, as Go reads it.
        let b = blocks(
            "{{ $ca := genCA \"foo-ca\" 365 }}\
             {{ $cert := genSignedCert \"foo.com\" (list \"10.0.0.1\" \"::ffff:10.0.0.2\") \
             (list \"bar.com\" \"bat.com\") 365 $ca }}\
             {{ $ca.Cert }}{{ $ca.Key }}{{ $cert.Cert }}{{ $cert.Key }}",
        );
        let [ca, ca_key, cert, key] = b.as_slice() else {
            panic!("four blocks")
        };
        check_certificate(ca, ca_key, ca, &CA);
        check_certificate(cert, key, ca, &FOO);
        verify_chain(cert, ca, "bat.com");
        verify_chain(cert, ca, "10.0.0.2");
        // The CA is RSA 2048, as sprig's.
        let ca_x509 = parse(ca);
        let x509_parser::public_key::PublicKey::RSA(rsa) =
            ca_x509.public_key().parsed().expect("public key")
        else {
            panic!("an RSA key")
        };
        assert_eq!(rsa.key_size(), 2048);
    }

    #[test]
    fn self_signed_certificates() {
        let b = blocks(
            "{{ $c := genSelfSignedCert \"foo.com\" (list \"10.0.0.1\" \"10.0.0.2\") \
             (list \"bar.com\" \"bat.com\") 365 }}{{ $c.Cert }}{{ $c.Key }}\
             {{ $e := genSelfSignedCert \"bare\" nil nil 1 }}{{ $e.Cert }}{{ $e.Key }}",
        );
        let [cert, key, bare, bare_key] = b.as_slice() else {
            panic!("four blocks")
        };
        check_certificate(cert, key, cert, &FOO);
        let bare_expected = Expected {
            cn: "bare",
            dns: &[],
            ips: &[],
            days: 1,
            ..FOO
        };
        check_certificate(bare, bare_key, bare, &bare_expected);
    }

    #[test]
    fn with_key_forms_use_the_given_key_of_each_type() {
        // An Ed25519 CA signs a certificate for an ECDSA key; an RSA 4096 key signs itself.
        let b = blocks(
            "{{ $caKey := genPrivateKey \"ed25519\" }}{{ $key := genPrivateKey \"ecdsa\" }}\
             {{ $ca := genCAWithKey \"ed-ca\" 30 $caKey }}\
             {{ $c := genSignedCertWithKey \"svc.example\" nil (list \"svc.example\") 7 $ca $key }}\
             {{ $s := genSelfSignedCertWithKey \"self.example\" (list \"::1\") nil 2 \
             (genPrivateKey \"rsa\") }}\
             {{ $caKey }}{{ $ca.Cert }}{{ $ca.Key }}{{ $key }}{{ $c.Cert }}{{ $c.Key }}\
             {{ $s.Cert }}{{ $s.Key }}",
        );
        let [ca_key_in, ca, ca_key, key_in, cert, key, own, own_key] = b.as_slice() else {
            panic!("eight blocks")
        };
        let ca_expected = Expected {
            cn: "ed-ca",
            days: 30,
            key_label: "PRIVATE KEY",
            ..CA
        };
        check_certificate(ca, ca_key, ca, &ca_expected);
        let expected = Expected {
            cn: "svc.example",
            dns: &["svc.example"],
            ips: &[],
            days: 7,
            ca: false,
            key_label: "EC PRIVATE KEY",
        };
        check_certificate(cert, key, ca, &expected);
        verify_chain(cert, ca, "svc.example");
        // The keys come back as they were given (Go writes them the same way again).
        assert_eq!((ca_key, key), (ca_key_in, key_in));
        let loopback: &[u8] = &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let own_expected = Expected {
            cn: "self.example",
            dns: &[],
            ips: &[loopback],
            days: 2,
            ..FOO
        };
        check_certificate(own, own_key, own, &own_expected);
        let own_x509 = parse(own);
        let x509_parser::public_key::PublicKey::RSA(rsa) =
            own_x509.public_key().parsed().expect("public key")
        else {
            panic!("an RSA key")
        };
        assert_eq!(rsa.key_size(), 4096, "genPrivateKey \"rsa\" is RSA 4096");
    }

    #[test]
    fn a_ca_made_elsewhere_signs_under_its_whole_subject() {
        // A CA as another tool makes it: country, organization and common name, with string types
        // of their own, and a PKCS#8 ECDSA key.
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        let country = PrintableString::try_from("DE").expect("printable");
        let subject = &mut params.distinguished_name;
        subject.push(DnType::CountryName, DnValue::PrintableString(country));
        subject.push(DnType::OrganizationName, "Acme Ünited");
        subject.push(DnType::CommonName, "acme-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca = params.self_signed(&key).expect("a CA");
        let b64 = |text: String| base64::engine::general_purpose::STANDARD.encode(text);
        let b = blocks(&format!(
            "{{{{ $ca := buildCustomCert \"{}\" \"{}\" }}}}\
             {{{{ $c := genSignedCert \"api.acme.example\" nil (list \"api.acme.example\") 5 $ca }}}}\
             {{{{ $ca.Cert }}}}{{{{ $c.Cert }}}}{{{{ $c.Key }}}}",
            b64(ca.pem()),
            b64(key.serialize_pem()),
        ));
        let [ca, cert, key] = b.as_slice() else {
            panic!("three blocks")
        };
        let expected = Expected {
            cn: "api.acme.example",
            dns: &["api.acme.example"],
            ips: &[],
            days: 5,
            ..FOO
        };
        check_certificate(cert, key, ca, &expected);
        verify_chain(cert, ca, "api.acme.example");
    }

    #[test]
    fn build_custom_cert_keeps_what_it_is_given_and_signs_with_it() {
        let b = blocks(
            "{{ $ca := genCA \"custom-ca\" 10 }}\
             {{ $custom := buildCustomCert ($ca.Cert | b64enc) ($ca.Key | b64enc) }}\
             {{ $c := genSignedCert \"leaf.example\" nil (list \"leaf.example\") 3 $custom }}\
             {{ if and (eq $custom.Cert $ca.Cert) (eq $custom.Key $ca.Key) }}{{ $ca.Cert }}\
             {{ $c.Cert }}{{ $c.Key }}{{ end }}",
        );
        let [ca, cert, key] = b.as_slice() else {
            panic!("three blocks: the same CA")
        };
        let expected = Expected {
            cn: "leaf.example",
            dns: &["leaf.example"],
            ips: &[],
            days: 3,
            ..FOO
        };
        check_certificate(cert, key, ca, &expected);
        verify_chain(cert, ca, "leaf.example");
    }

    #[test]
    fn certificates_print_as_go_prints_the_struct() {
        let text =
            render("{{ $c := genSelfSignedCert \"p\" nil nil 1 }}{{ $c }}").expect("renders");
        assert!(text.starts_with("{-----BEGIN CERTIFICATE-----\n"), "{text}");
        assert!(text.contains("-----END CERTIFICATE-----\n -----BEGIN RSA PRIVATE KEY-----\n"));
        assert!(text.ends_with("-----END RSA PRIVATE KEY-----\n}"), "{text}");
        assert_eq!(
            render("{{ genPrivateKey \"rsa3\" }}").as_deref(),
            Ok("Unknown type rsa3")
        );
    }

    #[test]
    fn bad_arguments_fail_as_in_sprig() {
        check_errors(&[
            (
                "{{ genSelfSignedCert \"x\" (list \"300.1.1.1\") nil 1 }}",
                "genSelfSignedCert: error parsing ip: 300.1.1.1",
            ),
            (
                "{{ genSelfSignedCert \"x\" (list 1) nil 1 }}",
                "genSelfSignedCert: error parsing ip: 1 is not a string",
            ),
            (
                "{{ genSelfSignedCert \"x\" nil (list 2) 1 }}",
                "error processing alternate dns name: 2 is not a string",
            ),
            (
                "{{ genSignedCert \"x\" nil nil 1 \"ca\" }}",
                "genSignedCert: the CA must be a certificate from genCA",
            ),
            (
                "{{ genCAWithKey \"x\" 1 \"junk\" }}",
                "genCAWithKey: parsing private key: no PEM data in input",
            ),
            (
                "{{ $a := genCA \"a\" 1 }}{{ $b := genCA \"b\" 1 }}\
                 {{ genSignedCert \"x\" nil nil 1 (buildCustomCert ($a.Cert | b64enc) \
                 ($b.Key | b64enc)) }}",
                "genSignedCert: x509: provided PrivateKey doesn't match parent's PublicKey",
            ),
            (
                "{{ buildCustomCert \"!!\" \"\" }}",
                "buildCustomCert: unable to decode base64 certificate",
            ),
            (
                "{{ buildCustomCert (\"not pem\" | b64enc) \"\" }}",
                "buildCustomCert: unable to decode certificate",
            ),
            (
                "{{ $a := genCA \"a\" 1 }}{{ buildCustomCert ($a.Cert | b64enc) (\"x\" | b64enc) }}",
                "buildCustomCert: error parsing private key: no PEM data in input",
            ),
            (
                "{{ genCAWithKey \"x\" 1 (genPrivateKey \"dsa\") }}",
                "genCAWithKey: parsing private key: DSA keys cannot sign certificates",
            ),
            (
                "{{ genSignedCertWithKey \"x\" nil nil 1 }}",
                "genSignedCertWithKey: needs a common name",
            ),
        ]);
    }
}

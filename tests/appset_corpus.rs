//! The ApplicationSet corpus: ApplicationSets written from Argo CD's documented examples
//! (Generators-List/Cluster/Git/Matrix/Merge, Template.md, GoTemplate.md), each rendered and
//! compared with the Applications the documentation says it makes, written by hand in
//! `tests/appset_corpus/cases/NAME.expected.yaml` (a list of Applications, or `error: TEXT` for an
//! ApplicationSet Argo CD rejects, TEXT being part of the message). Cluster generators read the
//! cluster Secrets in `tests/appset_corpus/clusters.yaml`; git generators read real repositories
//! this test makes from `tests/appset_corpus/repos/` (one commit each), mapped to the URLs the
//! documentation uses. A case whose Applications hold keys and certificates made anew on every
//! render ([`RANDOM_VALUES_CASES`]) is compared without them, and they are checked by parsing them
//! (`certificates_are_made_as_sprig_makes_them`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use x509_parser::pem::parse_x509_pem;
use x509_parser::prelude::{GeneralName, X509Certificate};

use flotilla::cli::render::{AppSetArgs, render_from_args};

#[path = "support/fixture_dir.rs"]
mod fixture_dir;
use fixture_dir::copy_dir;
use serde_json::Value;

/// The documented examples this corpus must hold at least.
const MINIMUM_CASES: usize = 40;

/// Cases whose `spec.source.helm.values` holds new keys and certificates on every render: left out
/// of the comparison with the expected file, checked by parsing instead.
const RANDOM_VALUES_CASES: &[&str] = &["48-gotemplate-certificates.yaml"];

/// Repository URLs of the documentation and the fixture each one is made from.
const REPOSITORIES: &[(&str, &str)] = &[
    ("https://github.com/argoproj/argo-cd.git", "argo-cd"),
    (
        "https://github.com/example/example-repo.git",
        "example-repo",
    ),
];

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/appset_corpus")
}

/// One commit of every fixture repository, in a temporary directory; `URL=PATH` mappings.
fn repositories(scratch: &Path) -> Vec<String> {
    REPOSITORIES
        .iter()
        .map(|(url, fixture)| {
            let dir = scratch.join(fixture);
            std::fs::create_dir_all(&dir).expect("mkdir");
            copy_dir(&corpus().join("repos").join(fixture), &dir);
            for args in [
                &["init", "-q", "-b", "main"][..],
                &["add", "-A"],
                &["commit", "-q", "-m", "fixture"],
            ] {
                let status = Command::new("git")
                    .arg("-C")
                    .arg(&dir)
                    .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
                    .args(args)
                    .status()
                    .expect("git runs");
                assert!(status.success(), "git {args:?} in {}", dir.display());
            }
            format!("{url}={}", dir.display())
        })
        .collect()
}

/// What one case renders to: its Applications as JSON, or the error message.
fn render(case: &Path, repos: &[String]) -> Result<Value, String> {
    let args = AppSetArgs {
        appset: case.to_path_buf(),
        repos: repos.to_vec(),
        clusters: Some(corpus().join("clusters.yaml")),
        project: flotilla::cli::project_args::ProjectArgs::default(),
    };
    render_from_args(&args, &Default::default())
        .map(|applications| serde_json::to_value(applications).expect("serializes"))
        .map_err(|error| format!("{error:#}"))
}

/// Compares one case with its expectation; the difference in words when they differ.
fn check(case: &Path, repos: &[String]) -> Option<String> {
    let expected_path = case.with_extension("expected.yaml");
    let text = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
    let expected: Value = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
    let mut actual = render(case, repos);
    let name = case.file_name().unwrap_or_default().to_string_lossy();
    if let (true, Ok(applications)) = (RANDOM_VALUES_CASES.contains(&&*name), &mut actual) {
        for application in applications.as_array_mut().into_iter().flatten() {
            if let Some(helm) = application.pointer_mut("/spec/source/helm") {
                helm.as_object_mut().map(|helm| helm.remove("values"));
            }
        }
    }
    match (&expected, &actual) {
        (Value::Object(map), Err(message)) if map.contains_key("error") => {
            let wanted = map["error"].as_str().unwrap_or_default();
            (!message.contains(wanted))
                .then(|| format!("error {message:?} does not contain {wanted:?}"))
        }
        (_, Ok(applications)) if *applications == expected => None,
        (_, Ok(applications)) => Some(format!(
            "rendered:\n{}",
            serde_saphyr::to_string(applications).unwrap_or_default()
        )),
        (_, Err(message)) => Some(format!("failed: {message}")),
    }
}

#[test]
fn every_documented_example_renders_as_documented() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let repos = repositories(scratch.path());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus().join("cases"))
        .expect("cases")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            let name = path.to_string_lossy();
            name.ends_with(".yaml") && !name.ends_with(".expected.yaml")
        })
        .collect();
    cases.sort();
    assert!(
        cases.len() >= MINIMUM_CASES,
        "the corpus has {} ApplicationSets, fewer than {MINIMUM_CASES}",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(case, &repos).map(|difference| format!("{}: {difference}", case.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// Checks one rendered certificate: subject, alternative names, days of validity, the CA flag,
/// and that `issuer` signed it.
fn check_certificate(
    cert: &X509Certificate,
    issuer: &X509Certificate,
    cn: &str,
    names: (&[&str], &[[u8; 4]]),
    days: i64,
    ca: bool,
) {
    let subject: Vec<&str> = cert
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .collect();
    assert_eq!(subject, [cn]);
    let (mut dns, mut ips) = (Vec::new(), Vec::new());
    for name in cert
        .subject_alternative_name()
        .expect("SAN")
        .map(|san| san.value.general_names.clone())
        .unwrap_or_default()
    {
        match name {
            GeneralName::DNSName(dns_name) => dns.push(dns_name),
            GeneralName::IPAddress(ip) => ips.push(<[u8; 4]>::try_from(ip).expect("IPv4")),
            other => panic!("{cn}: unexpected name {other:?}"),
        }
    }
    assert_eq!((dns.as_slice(), ips.as_slice()), names, "{cn}");
    let validity = cert.validity();
    assert_eq!(
        validity.not_after.timestamp() - validity.not_before.timestamp(),
        days * 86_400,
        "{cn}: valid for {days} days"
    );
    let constraints = cert.basic_constraints().expect("basic constraints");
    assert_eq!(constraints.map(|c| c.value.ca), Some(ca), "{cn}: CA flag");
    assert_eq!(
        cert.issuer().as_raw(),
        issuer.subject().as_raw(),
        "{cn}: issuer"
    );
    cert.verify_signature(Some(issuer.public_key()))
        .unwrap_or_else(|error| panic!("{cn}: not signed by its issuer: {error}"));
}

#[test]
fn certificates_are_made_as_sprig_makes_them() {
    let case = corpus().join("cases").join(RANDOM_VALUES_CASES[0]);
    let applications = render(&case, &[]).expect("renders");
    let applications = applications.as_array().expect("a list");
    let clusters = [
        ("engineering-dev", [10, 0, 0, 1]),
        ("engineering-prod", [10, 0, 1, 1]),
    ];
    assert_eq!(applications.len(), clusters.len());
    let mut serials = Vec::new();
    for (application, (cluster, ip)) in applications.iter().zip(clusters) {
        let values = application
            .pointer("/spec/source/helm/values")
            .and_then(Value::as_str)
            .expect("helm values");
        let values: BTreeMap<String, String> = serde_saphyr::from_str(values).expect("YAML");
        let pem = |key: &str| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&values[key])
                .unwrap_or_else(|error| panic!("{cluster} {key}: {error}"));
            let (_, pem) = parse_x509_pem(&bytes).unwrap_or_else(|e| panic!("{key}: {e}"));
            pem
        };
        let (ca_pem, tls_pem, webhook_pem) = (pem("ca.crt"), pem("tls.crt"), pem("webhook.crt"));
        let ca = ca_pem.parse_x509().expect("CA certificate");
        let tls = tls_pem.parse_x509().expect("server certificate");
        let webhook = webhook_pem.parse_x509().expect("webhook certificate");
        let host = format!("guestbook.{cluster}.example.com");
        check_certificate(&ca, &ca, &format!("{cluster}-ca"), (&[], &[]), 365, true);
        check_certificate(&tls, &ca, &host, (&[&host, "guestbook"], &[ip]), 30, false);
        let webhook_names: (&[&str], &[[u8; 4]]) = (&["webhook.guestbook.svc"], &[]);
        check_certificate(&webhook, &webhook, "webhook", webhook_names, 7, false);
        serials.extend([ca.raw_serial().to_vec(), tls.raw_serial().to_vec()]);
        // The server certificate verifies for its names as rustls would, trusting only the CA.
        let ca_der = CertificateDer::from(ca_pem.contents.as_slice());
        let anchors = [webpki::anchor_from_trusted_cert(&ca_der).expect("anchor")];
        let tls_der = CertificateDer::from(tls_pem.contents.as_slice());
        let leaf = webpki::EndEntityCert::try_from(&tls_der).expect("end entity");
        leaf.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &[],
            UnixTime::now(),
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .unwrap_or_else(|error| panic!("{host}: does not chain to its CA: {error}"));
        for name in [host.as_str(), "guestbook"] {
            let server = ServerName::try_from(name).expect("name");
            leaf.verify_is_valid_for_subject_name(&server)
                .unwrap_or_else(|error| panic!("{name}: {error}"));
        }
        // Each key is its certificate's, in the PEM form Go writes: PKCS#1 RSA, SEC1 ECDSA.
        for (key, cert, label) in [
            ("tls.key", &tls, "RSA PRIVATE KEY"),
            ("webhook.key", &webhook, "EC PRIVATE KEY"),
        ] {
            let key_pem = pem(key);
            assert_eq!(key_pem.label, label, "{cluster} {key}");
            let text = String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(&values[key])
                    .expect("base64"),
            )
            .expect("PEM text");
            let pair = rcgen::KeyPair::from_pem(&text).expect("key reads");
            assert_eq!(
                rcgen::PublicKeyData::subject_public_key_info(&pair),
                cert.public_key().raw,
                "{cluster} {key}"
            );
        }
    }
    serials.sort();
    serials.dedup();
    assert_eq!(serials.len(), 4, "every certificate has its own serial");
}

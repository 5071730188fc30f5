//! The git providers' documented webhook payloads of `tests/fixtures/webhooks/`, filled in for
//! a repository served on loopback.

/// The payload `file` of `tests/fixtures/webhooks/`.
pub fn fixture(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhooks")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// A provider's documented push payload for the repository at `http_url` from `before` to
/// `after`.
pub fn payload(file: &str, http_url: &str, before: &str, after: &str) -> Vec<u8> {
    let host = http_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("a host");
    fixture(file)
        .replace("{{HTTP_URL}}", http_url)
        .replace("{{HOST}}", host)
        .replace("{{HOSTNAME}}", host.split(':').next().expect("a host name"))
        .replace("{{BEFORE}}", before)
        .replace("{{AFTER}}", after)
        .into_bytes()
}

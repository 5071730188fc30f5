//! Test support: checks a table of (object, expected status, expected message) against
//! [`assess`](super::assess), written inline or recorded in `src/health/testdata/`.

use serde::Deserialize;
use serde_json::Value;

use super::{HealthStatus, assess};

/// Asserts every case, naming the object that failed.
pub fn assert_cases<const N: usize>(cases: [(Value, HealthStatus, &str); N]) {
    for (object, status, message) in cases {
        let health = assess(&object);
        assert_eq!(
            (health.status, health.message.as_str()),
            (status, message),
            "{object}"
        );
    }
}

/// One recorded object and the health it must have.
#[derive(Deserialize)]
struct Recorded {
    /// What the object shows (a comment of the case).
    case: String,
    health: HealthStatus,
    message: String,
    object: Value,
}

/// Asserts every case of `src/health/testdata/<file>`, a YAML list of
/// `{case, health, message, object}`.
pub fn assert_recorded(file: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/health/testdata")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let cases: Vec<Recorded> =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    assert!(!cases.is_empty(), "{file} records cases");
    for recorded in cases {
        let health = assess(&recorded.object);
        assert_eq!(
            (health.status, health.message.as_str()),
            (recorded.health, recorded.message.as_str()),
            "{file}: {}",
            recorded.case
        );
    }
}

//! Test support: checks a table of (object, expected status, expected message) against
//! [`assess`](super::assess).

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

//! Parameter sets: what a generator produces and a template consumes. Ordered maps, so every
//! expansion is deterministic.

use std::collections::BTreeMap;

use serde_json::Value;

/// One parameter set. In fasttemplate mode every value is a string under a dotted key
/// (`path.basename`); in goTemplate mode values keep their structure (`path: {basename: ..}`).
pub type Params = BTreeMap<String, Value>;

/// Argo CD's name normalisation (`nameNormalized`, `path.basenameNormalized`, `normalize`):
/// lower case, every character outside `[-a-z0-9.]` becomes `-`, at most 253 characters, leading
/// and trailing `-` and `.` trimmed.
#[must_use]
pub fn normalize_name(name: &str) -> String {
    let mapped: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(253)
        .collect();
    mapped.trim_matches(|c| c == '-' || c == '.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_matches_argo_cd() {
        assert_eq!(normalize_name("My_Cluster.EU/1"), "my-cluster.eu-1");
        assert_eq!(normalize_name("--in-cluster.."), "in-cluster");
        assert_eq!(normalize_name(&"a".repeat(300)).len(), 253);
    }
}

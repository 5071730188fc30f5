//! A custom resource its controller has not reported on yet is not Healthy: when the kind's
//! CRD declares a status subresource (which the shell learns from discovery and passes in as
//! [`StatusKinds`]) and the object has no status yet, or its `status.observedGeneration` is
//! behind `metadata.generation`, it is Progressing. A kind whose controller never writes status
//! would wait forever, so a missing status is awaited for a grace after the object's creation
//! ([`DEFAULT_STATUS_GRACE`]); after it the kind's rule decides as before. Pure: the time is
//! passed in.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::{Health, HealthStatus, generation_observed};

/// How long an object whose kind declares a status subresource is awaited without any status,
/// from its creation: long enough for an operator installed by the same sync to pull its image,
/// win its leader election and write a first status; well inside a Deployment's default
/// progress deadline (10 minutes), so a kind whose controller never writes status costs one
/// bounded wait rather than a hang.
pub const DEFAULT_STATUS_GRACE: Duration = Duration::from_secs(300);

/// The custom kinds of one cluster, `(group, kind)`, whose resource declares a status
/// subresource, as discovery found them; cheap to clone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusKinds(Arc<BTreeSet<(String, String)>>);

impl StatusKinds {
    /// The kinds in `kinds`.
    #[must_use]
    pub fn new(kinds: impl IntoIterator<Item = (String, String)>) -> Self {
        Self(Arc::new(kinds.into_iter().collect()))
    }

    /// Whether `kind` of `group` declares a status subresource.
    #[must_use]
    pub fn declares(&self, group: &str, kind: &str) -> bool {
        self.0.contains(&(group.to_owned(), kind.to_owned()))
    }
}

/// The verdict on an object whose kind declares a status subresource, when its controller has
/// not reported on its current spec: no status within `grace` of its creation (at `now`), or
/// an observed generation behind its generation. None when the controller has reported, or
/// the grace has passed (or the object says nothing of its creation).
#[must_use]
pub fn awaiting_status(object: &Value, grace: Duration, now: Timestamp) -> Option<Health> {
    let status = object.get("status").filter(|s| match s {
        Value::Null => false,
        Value::Object(fields) => !fields.is_empty(),
        _ => true,
    });
    let Some(status) = status else {
        let created: Timestamp = object
            .pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)?
            .parse()
            .ok()?;
        let waited = now.duration_since(created);
        let within = waited.is_negative() || waited.unsigned_abs() < grace;
        return within.then(|| {
            Health::new(
                HealthStatus::Progressing,
                "Waiting for its controller to report status",
            )
        });
    };
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    // Argo Rollouts writes it as a string.
    let observed = status
        .get("observedGeneration")
        .and_then(|g| g.as_i64().or_else(|| g.as_str()?.parse().ok()));
    (!generation_observed(generation, observed)).then(|| {
        Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for its controller to observe generation {}",
                generation.unwrap_or_default()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn database(status: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Database",
               "metadata": {"name": "db", "generation": 2, "creationTimestamp": "2026-12-01T10:00:00Z"},
               "status": status})
    }

    #[test]
    fn waits_for_a_first_status_within_the_grace_and_for_the_current_generation() {
        let at = |time: &str| time.parse::<Timestamp>().unwrap();
        let grace = Duration::from_secs(300);
        let waiting = Some(Health::new(
            HealthStatus::Progressing,
            "Waiting for its controller to report status",
        ));
        let cases = [
            (json!(null), "2026-12-01T10:00:01Z", waiting.clone()),
            (json!({}), "2026-12-01T10:04:59Z", waiting.clone()),
            (json!(null), "2026-12-01T10:05:00Z", None),
            (json!(null), "2026-12-01T09:59:00Z", waiting),
            (
                json!({"observedGeneration": 1}),
                "2026-12-01T11:00:00Z",
                Some(Health::new(
                    HealthStatus::Progressing,
                    "Waiting for its controller to observe generation 2",
                )),
            ),
            (
                json!({"observedGeneration": "2"}),
                "2026-12-01T10:00:01Z",
                None,
            ),
            (json!({"conditions": []}), "2026-12-01T10:00:01Z", None),
        ];
        for (status, now, expected) in cases {
            assert_eq!(
                awaiting_status(&database(status.clone()), grace, at(now)),
                expected,
                "{status} at {now}"
            );
        }
        let mut undated = database(json!(null));
        undated["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("creationTimestamp");
        assert_eq!(
            awaiting_status(&undated, grace, at("2026-12-01T10:00:01Z")),
            None
        );
    }

    #[test]
    fn status_kinds_are_looked_up_by_group_and_kind() {
        let kinds = StatusKinds::new([("example.com".to_owned(), "Database".to_owned())]);
        assert!(kinds.declares("example.com", "Database"));
        assert!(!kinds.declares("example.com", "Table"));
        assert!(!StatusKinds::default().declares("example.com", "Database"));
    }
}

//! The Application status a reconcile writes: sync, health and resources from the comparison (or
//! a `ComparisonError` condition when there was none), `reconciledAt`, and conditions whose
//! `lastTransitionTime` is kept while they last. Written only when something changed or a sync
//! operation started after `reconciledAt` (a rollout waits for a compare after each sync), so an
//! Application in steady state costs no write — and no watch event for the controllers watching
//! Applications — however often it is compared. Pure: the clock is an argument.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

use crate::api::application::{
    Application, ApplicationCondition, ApplicationConditionType, ApplicationStatus, Operation,
    SyncStatus,
};
use crate::sync::OperationState;

use crate::api::application_set_status::SyncStatusCode;
use crate::api::merge_patch::null_when_absent;

use super::compare::Comparison;

/// The conditions that say why an Application could not be observed; a compare that succeeds
/// clears them, and a failure replaces the other one.
const OBSERVING_CONDITIONS: [ApplicationConditionType; 2] = [
    ApplicationConditionType::ComparisonError,
    ApplicationConditionType::InvalidSpecError,
];

/// The merge patch of `/status` after a reconcile that compared (`Ok`) or failed with a
/// condition (`Err`), or None when nothing needs writing. Fields the sync writes
/// (`operationState`, `history`) are not touched.
#[must_use]
pub fn status_patch(
    old: Option<&ApplicationStatus>,
    observed: Result<&Comparison, (ApplicationConditionType, &str)>,
    now: &Time,
) -> Option<Value> {
    let old = old.cloned().unwrap_or_default();
    let mut new = old.clone();
    match observed {
        Ok(comparison) => {
            new.sync = Some(comparison.sync.clone());
            new.health = Some(comparison.health.clone());
            new.resources.clone_from(&comparison.resources);
            new.pre_delete_hooks
                .clone_from(&comparison.pre_delete_hooks);
            new.post_delete_hooks
                .clone_from(&comparison.post_delete_hooks);
            new.conditions
                .retain(|c| !OBSERVING_CONDITIONS.contains(&c.type_));
        }
        Err((type_, message)) => {
            new.conditions
                .retain(|c| c.type_ == type_ || !OBSERVING_CONDITIONS.contains(&c.type_));
            new.sync = Some(SyncStatus::at(SyncStatusCode::Unknown, None));
            set_condition(&mut new.conditions, type_, message, now);
        }
    }
    let operation_started = old
        .operation_state
        .as_ref()
        .and_then(|op| op.started_at.as_ref());
    let stale = match (&old.reconciled_at, operation_started) {
        (None, _) => true,
        (Some(reconciled), Some(started)) => reconciled.0 < started.0,
        (Some(_), None) => false,
    };
    if new == old && !stale {
        return None;
    }
    // A merge patch keeps what an object leaves out: a Healthy health without a message would
    // keep the message of the Missing it replaced, an Unknown sync the revision compared before.
    let mut sync = serde_json::to_value(&new.sync).unwrap_or(Value::Null);
    let mut health = serde_json::to_value(&new.health).unwrap_or(Value::Null);
    null_when_absent(&mut sync, &["revision", "revisions"]);
    null_when_absent(&mut health, &["message"]);
    Some(json!({"status": {
        "sync": sync,
        "health": health,
        "resources": new.resources,
        "preDeleteHooks": new.pre_delete_hooks,
        "postDeleteHooks": new.post_delete_hooks,
        "conditions": new.conditions,
        "reconciledAt": now,
    }}))
}

/// `operation` as a merge patch value that replaces a previous request: every field it leaves
/// out (empty, false) is an explicit null, so nothing of the previous one is kept.
#[must_use]
pub fn operation_patch(operation: &Operation) -> Value {
    let mut value = serde_json::to_value(operation).unwrap_or(Value::Null);
    let fields = [
        (
            "sync",
            [
                "revision",
                "prune",
                "syncOptions",
                "allowEmpty",
                "selfHealAttemptsCount",
            ]
            .as_slice(),
        ),
        ("initiatedBy", ["username", "automated"].as_slice()),
    ];
    for (part, names) in fields {
        if let Some(object) = value.get_mut(part) {
            null_when_absent(object, names);
        }
    }
    value
}

/// The merge patch of `/status` that writes what a reconcile of `app` observed at `now` (see
/// [`status_patch`]) with the generation it observed (see [`with_generation`]); None when
/// nothing changed.
#[must_use]
pub fn compare_patch(
    app: &Application,
    observed: Result<&Comparison, (ApplicationConditionType, &str)>,
    now: &Time,
) -> Option<Value> {
    let old = app.status.as_ref();
    with_generation(
        status_patch(old, observed, now),
        old,
        app.metadata.generation,
        now,
    )
}

/// `patch` (from [`status_patch`]) extended with `observedGeneration`: the comparison was made
/// for the Application at `generation`. When nothing else changed but the generation did, a
/// patch of just `observedGeneration` and `reconciledAt`.
#[must_use]
pub fn with_generation(
    patch: Option<Value>,
    old: Option<&ApplicationStatus>,
    generation: Option<i64>,
    now: &Time,
) -> Option<Value> {
    let observed = old.and_then(|status| status.observed_generation);
    match patch {
        Some(mut patch) => {
            patch["status"]["observedGeneration"] = json!(generation);
            Some(patch)
        }
        None if observed != generation => Some(json!({"status": {
            "observedGeneration": generation,
            "reconciledAt": now,
        }})),
        None => None,
    }
}

/// The merge patch of `/status` that sets the condition of `type_` to `message`, or removes it
/// when `message` is None; None when that changes nothing.
#[must_use]
pub fn condition_patch(
    old: Option<&ApplicationStatus>,
    type_: ApplicationConditionType,
    message: Option<&str>,
    now: &Time,
) -> Option<Value> {
    with_condition(None, old, type_, message, now)
}

/// `patch` (a merge patch `{"status": {...}}`, or None) with the condition of `type_` set to
/// `message` (removed when None) on the conditions it writes, or on `old`'s when it writes none;
/// None when neither changes anything.
#[must_use]
pub fn with_condition(
    patch: Option<Value>,
    old: Option<&ApplicationStatus>,
    type_: ApplicationConditionType,
    message: Option<&str>,
    now: &Time,
) -> Option<Value> {
    let written = patch
        .as_ref()
        .and_then(|patch| patch["status"].get("conditions"))
        .and_then(|conditions| {
            serde_json::from_value::<Vec<ApplicationCondition>>(conditions.clone()).ok()
        });
    let old = written.unwrap_or_else(|| old.map(|s| s.conditions.clone()).unwrap_or_default());
    let mut new = old.clone();
    match message {
        Some(message) => set_condition(&mut new, type_, message, now),
        None => new.retain(|c| c.type_ != type_),
    }
    if new == old {
        return patch;
    }
    let mut patch = patch.unwrap_or_else(|| json!({"status": {}}));
    patch["status"]["conditions"] = json!(new);
    Some(patch)
}

/// Fields of a stored operation that a new one may leave out.
const OPTIONAL_OPERATION_FIELDS: [&str; 4] = ["revision", "failure", "startedAt", "finishedAt"];

/// `state` as a merge patch value of `status.operationState`: its absent optional fields are
/// explicit nulls, so the patch removes what a previous operation left there.
#[must_use]
pub fn operation_state_patch(state: &OperationState) -> Value {
    let mut value = serde_json::to_value(state).unwrap_or(Value::Null);
    null_when_absent(&mut value, &OPTIONAL_OPERATION_FIELDS);
    value
}

/// Two merge patches `{"status": {...}}` as one (`b`'s fields win where both write one).
#[must_use]
pub fn merged(a: Option<Value>, b: Option<Value>) -> Option<Value> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            if let (Some(into), Some(Value::Object(from))) =
                (a["status"].as_object_mut(), b.get("status"))
            {
                into.extend(from.clone());
            }
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

/// Adds or updates the condition of `type_`, keeping its time when it was already present.
fn set_condition(
    conditions: &mut Vec<ApplicationCondition>,
    type_: ApplicationConditionType,
    message: &str,
    now: &Time,
) {
    let since = conditions
        .iter()
        .find(|c| c.type_ == type_)
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| now.clone());
    conditions.retain(|c| c.type_ != type_);
    conditions.push(ApplicationCondition {
        type_,
        message: message.to_owned(),
        last_transition_time: Some(since),
    });
    conditions.sort_by_key(|c| c.type_);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::application::HealthReport;
    use crate::health::HealthStatus;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn an_operation_state_patch_removes_what_it_leaves_out() {
        let (state, _) = crate::sync::begin(None, None, "op", at(0));
        let value = operation_state_patch(&state);
        let map = value.as_object().unwrap();
        for field in ["failure", "finishedAt", "revision"] {
            assert_eq!(map.get(field), Some(&Value::Null), "{field}");
        }
        assert!(map["startedAt"].is_string());
        assert_eq!(value["operationId"], "op");
    }

    fn comparison(sync: &str) -> Comparison {
        Comparison {
            sync: SyncStatus {
                status: sync.parse().expect("a sync status"),
                revision: "abc".into(),
                revisions: Vec::new(),
            },
            health: HealthReport {
                status: HealthStatus::Healthy,
                message: String::new(),
            },
            resources: Vec::new(),
            pre_delete_hooks: Vec::new(),
            post_delete_hooks: Vec::new(),
        }
    }

    /// The status a merge patch writes onto an empty one (its nulls remove, so they are dropped).
    fn written(patch: Option<Value>) -> ApplicationStatus {
        fn without_nulls(value: &mut Value) {
            if let Some(map) = value.as_object_mut() {
                map.retain(|_, field| !field.is_null());
                map.values_mut().for_each(without_nulls);
            }
        }
        let mut status = patch.expect("a write")["status"].clone();
        without_nulls(&mut status);
        serde_json::from_value(status).unwrap()
    }

    #[test]
    fn what_a_new_sync_or_health_leaves_out_is_removed() {
        let mut missing = comparison("OutOfSync");
        missing.health = HealthReport {
            status: HealthStatus::Missing,
            message: "ConfigMap shop/web: Missing".into(),
        };
        let first = written(status_patch(None, Ok(&missing), &at(100)));
        let healthy = status_patch(Some(&first), Ok(&comparison("Synced")), &at(130)).unwrap();
        assert_eq!(healthy["status"]["health"]["message"], Value::Null);
        assert_eq!(healthy["status"]["health"]["status"], "Healthy");
        let unknown = status_patch(
            Some(&first),
            Err((ApplicationConditionType::ComparisonError, "no repository")),
            &at(160),
        )
        .unwrap();
        assert_eq!(unknown["status"]["sync"]["status"], "Unknown");
        assert_eq!(unknown["status"]["sync"]["revision"], Value::Null);
    }

    #[test]
    fn writes_changes_and_compares_after_a_sync_only() {
        let first = written(status_patch(None, Ok(&comparison("OutOfSync")), &at(100)));
        assert_eq!(
            first.sync.as_ref().unwrap().status,
            SyncStatusCode::OutOfSync
        );
        assert_eq!(first.reconciled_at, Some(at(100)));
        for later in [130, 100_000] {
            assert_eq!(
                status_patch(Some(&first), Ok(&comparison("OutOfSync")), &at(later)),
                None,
                "unchanged at {later}"
            );
        }
        let changed = written(status_patch(
            Some(&first),
            Ok(&comparison("Synced")),
            &at(130),
        ));
        assert_eq!(changed.sync.unwrap().status, SyncStatusCode::Synced);
        let mut synced = first.clone();
        synced.operation_state = Some(
            serde_json::from_value(json!({
                "phase": "Succeeded", "operationId": "op", "startedAt": "1970-01-01T00:02:30Z"
            }))
            .unwrap(),
        );
        let refreshed = written(status_patch(
            Some(&synced),
            Ok(&comparison("OutOfSync")),
            &at(161),
        ));
        assert_eq!(
            refreshed.reconciled_at,
            Some(at(161)),
            "compared after the sync"
        );
        let mut compared = synced.clone();
        compared.reconciled_at = Some(at(161));
        assert_eq!(
            status_patch(Some(&compared), Ok(&comparison("OutOfSync")), &at(200)),
            None
        );
    }

    #[test]
    fn conditions_are_set_and_cleared_only_when_that_changes_something() {
        let now = at(100);
        let sync_error = ApplicationConditionType::SyncError;
        let patch = condition_patch(None, sync_error, Some("boom"), &now).expect("set");
        let status = written(Some(patch));
        assert_eq!(status.conditions[0].message, "boom");
        assert_eq!(
            condition_patch(Some(&status), sync_error, Some("boom"), &at(200)),
            None
        );
        assert_eq!(condition_patch(None, sync_error, None, &now), None);
        let cleared = written(condition_patch(Some(&status), sync_error, None, &now));
        assert!(cleared.conditions.is_empty());
    }

    #[test]
    fn comparison_errors_become_a_condition_that_keeps_its_time_and_clears() {
        let error = (
            ApplicationConditionType::ComparisonError,
            "repository x: gone",
        );
        let failed = written(status_patch(None, Err(error), &at(100)));
        assert_eq!(
            failed.sync.as_ref().unwrap().status,
            SyncStatusCode::Unknown
        );
        assert_eq!(failed.conditions[0].message, "repository x: gone");
        let again = written(status_patch(
            Some(&failed),
            Err((
                ApplicationConditionType::ComparisonError,
                "repository x: still gone",
            )),
            &at(110),
        ));
        assert_eq!(again.conditions[0].last_transition_time, Some(at(100)));
        let fixed = written(status_patch(
            Some(&again),
            Ok(&comparison("Synced")),
            &at(120),
        ));
        assert!(fixed.conditions.is_empty());
    }

    #[test]
    fn observed_generation_follows_the_compared_spec() {
        let first = status_patch(None, Ok(&comparison("Synced")), &at(100));
        let first = with_generation(first, None, Some(3), &at(100));
        let written = written(first);
        assert_eq!(written.observed_generation, Some(3));
        let unchanged = status_patch(Some(&written), Ok(&comparison("Synced")), &at(110));
        assert_eq!(
            with_generation(unchanged.clone(), Some(&written), Some(3), &at(110)),
            None
        );
        let bumped = with_generation(unchanged, Some(&written), Some(4), &at(110)).unwrap();
        assert_eq!(bumped["status"]["observedGeneration"], 4);
        assert!(bumped["status"].get("sync").is_none());
    }

    #[test]
    fn an_operation_patch_clears_what_the_request_leaves_out() {
        let operation = Operation {
            sync: crate::api::application::SyncOperation {
                revision: "abc".into(),
                ..Default::default()
            },
            initiated_by: crate::api::application::InitiatedBy {
                username: String::new(),
                automated: true,
            },
        };
        assert_eq!(
            operation_patch(&operation),
            json!({
                "sync": {"revision": "abc", "prune": null, "syncOptions": null, "allowEmpty": null,
                         "selfHealAttemptsCount": null},
                "initiatedBy": {"username": null, "automated": true},
            })
        );
    }
}

//! The soak's gate check (`benches/soak/gate.rs`) on ApplicationSet and Application versions
//! written by hand: a promotion past a step whose Applications were Healthy in time passes; one
//! past an Application not yet Healthy, or one listed in that write but not created, is a
//! violation; an Application added to the list after a promotion does not count against it.

#[path = "../benches/soak/gate.rs"]
#[allow(
    dead_code,
    reason = "the soak's progress reports use the rest of the ledger"
)]
mod gate;

use flotilla_core::api::{Application, ApplicationSet};
use gate::GateLedger;
use serde_json::json;

const REVISION: &str = "abc123";

/// The ApplicationSet listing `names`, with `promoted` Pending on [`REVISION`] at `at`.
fn appset(names: &[&str], promoted: &[&str], at: &str) -> ApplicationSet {
    let elements: Vec<_> = names.iter().map(|name| json!({"name": name})).collect();
    let entries: Vec<_> = promoted
        .iter()
        .map(|name| {
            json!({"application": name, "status": "Pending", "step": "2",
                "targetRevisions": [REVISION], "lastTransitionTime": at})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "fleet", "namespace": "soak"},
        "spec": {"generators": [{"list": {"elements": elements}}],
            "template": {"metadata": {"name": "{{name}}"}, "spec": {"project": "default",
                "destination": {}, "source": {"repoURL": "r"}}}},
        "status": {"applicationStatus": entries},
    }))
    .expect("an ApplicationSet")
}

/// `name` Synced and Healthy on [`REVISION`], compared at `at`.
fn healthy(name: &str, at: &str) -> Application {
    serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": "soak"},
        "spec": {"project": "default", "destination": {}, "source": {"repoURL": "r"}},
        "status": {"sync": {"status": "Synced", "revision": REVISION},
            "health": {"status": "Healthy"}, "reconciledAt": at},
    }))
    .expect("an Application")
}

/// A ledger of `db-a`, `db-b` (step 1) and `web` (step 2).
fn ledger() -> GateLedger {
    let mut ledger = GateLedger::default();
    for (name, step) in [("db-a", 1), ("db-b", 1), ("web", 2)] {
        ledger.step(name, step);
    }
    ledger
}

/// [`ledger`] with `db-a` Healthy at 0:10 and `web` promoted at 0:11 in a write listing all
/// three, `db-b` not Healthy yet.
fn web_promoted_before_db_b_was_healthy() -> GateLedger {
    let mut ledger = ledger();
    ledger.observe(&healthy("db-a", "2026-01-01T00:00:10Z"));
    ledger.observe_application_set(&appset(
        &["db-a", "db-b", "web"],
        &["web"],
        "2026-01-01T00:00:11Z",
    ));
    ledger
}

#[test]
fn a_promotion_after_every_application_of_the_step_before_was_healthy_passes() {
    let mut ledger = ledger();
    ledger.observe(&healthy("db-a", "2026-01-01T00:00:10Z"));
    ledger.observe(&healthy("db-b", "2026-01-01T00:00:12Z"));
    ledger.observe_application_set(&appset(
        &["db-a", "db-b", "web"],
        &["web"],
        "2026-01-01T00:00:12Z",
    ));
    let (judged, unknown, violations) = ledger.violations();
    assert_eq!((judged, unknown, violations.len()), (1, 0, 0));
}

#[test]
fn a_promotion_before_an_application_of_the_step_before_was_healthy_is_a_violation() {
    let mut ledger = web_promoted_before_db_b_was_healthy();
    // Healthy later than the promotion, and seen only after it: still judged against it.
    ledger.observe(&healthy("db-b", "2026-01-01T00:00:30Z"));
    let (judged, _, violations) = ledger.violations();
    assert_eq!((judged, violations.len()), (1, 1));
    let violation = &violations[0];
    assert_eq!(
        (
            violation.application.as_str(),
            violation.waited_for.as_str()
        ),
        ("web", "db-b")
    );
    assert_eq!(violation.revision, REVISION);
    assert_eq!(
        violation.healthy.map(|at| at.to_string()),
        Some("2026-01-01T00:00:30Z".to_owned())
    );
}

#[test]
fn an_application_listed_with_the_promotion_but_never_healthy_is_a_violation() {
    let ledger = web_promoted_before_db_b_was_healthy();
    let (_, _, violations) = ledger.violations();
    assert_eq!(violations.len(), 1);
    assert!(violations[0].healthy.is_none());
}

#[test]
fn an_application_listed_after_the_promotion_does_not_count_against_it() {
    let mut ledger = ledger();
    ledger.observe(&healthy("db-a", "2026-01-01T00:00:10Z"));
    ledger.observe_application_set(&appset(&["db-a", "web"], &["web"], "2026-01-01T00:00:11Z"));
    // db-b joins the list in a later write that still shows web Pending from before.
    ledger.observe_application_set(&appset(
        &["db-a", "db-b", "web"],
        &["web"],
        "2026-01-01T00:00:11Z",
    ));
    let (judged, _, violations) = ledger.violations();
    assert_eq!((judged, violations.len()), (1, 0));
}

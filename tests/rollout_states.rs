//! The example rollout states under `tests/rollout-states/` replayed through
//! `flotilla rollout explain --state`, as text and JSON, against committed expectations
//! (`*.expected.txt`, `*.expected.json`; regenerate with `UPDATE_GOLDEN=1`), plus the facts each
//! example exists to show.

use std::path::{Path, PathBuf};

use flotilla::cli::output::OutputFormat;
use flotilla::cli::rollout::explain_state_file;

fn states_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rollout-states")
}

fn explain(state: &Path, output: OutputFormat) -> String {
    explain_state_file("example", state, output)
        .unwrap_or_else(|e| panic!("{}: {e:#}", state.display()))
}

fn check_golden(path: &Path, actual: &str) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, actual).expect("writes");
    }
    let expected =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        actual,
        expected,
        "{} drifted; regenerate with UPDATE_GOLDEN=1",
        path.display()
    );
}

#[test]
fn every_example_replays_to_its_expected_output() {
    let mut states: Vec<PathBuf> = std::fs::read_dir(states_dir())
        .expect("reads the directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    states.sort();
    assert_eq!(states.len(), 8, "{states:?}");
    for state in states {
        let text = explain(&state, OutputFormat::Table);
        check_golden(&state.with_extension("expected.txt"), &text);
        let json = explain(&state, OutputFormat::Json);
        check_golden(&state.with_extension("expected.json"), &json);
    }
}

fn json(name: &str) -> serde_json::Value {
    let text = explain(&states_dir().join(name), OutputFormat::Json);
    serde_json::from_str(&text).expect("valid JSON")
}

fn progressing_message(value: &serde_json::Value) -> String {
    value["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "RolloutProgressing")
        .map(|c| format!("{} {}: {}", c["status"], c["reason"], c["message"]))
        .unwrap()
}

#[test]
fn the_examples_show_what_they_are_named_for() {
    let three_tier = json("three-tier-backend-waits.yaml");
    assert!(
        progressing_message(&three_tier)
            .contains("step 2 of 3 waits: platform-backend Progressing 1/3 pods ready"),
        "{three_tier}"
    );
    assert_eq!(three_tier["syncTriggered"], serde_json::json!([]));
    assert_eq!(
        three_tier["steps"]["3"],
        serde_json::json!(["platform-frontend"])
    );

    let budget = json("max-update-25-percent.yaml");
    let in_flight = budget["applicationStatus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "Pending" || e["status"] == "Progressing")
        .count();
    assert_eq!(in_flight, 2);
    assert_eq!(budget["syncTriggered"], serde_json::json!([]));

    let stalled = json("stalled-database.yaml");
    let message = progressing_message(&stalled);
    assert!(
        message.contains("\"False\" \"RolloutStalled\""),
        "{message}"
    );
    assert!(
        message.contains("database Degraded: Deployment \\\"postgres\\\" exceeded"),
        "{message}"
    );
    assert_eq!(stalled["appsToSync"], serde_json::json!(["database"]));
    assert_eq!(stalled["unselected"], serde_json::json!(["tooling"]));

    let mid = json("new-commit-mid-rollout.yaml");
    assert_eq!(
        mid["syncTriggered"],
        serde_json::json!(["guestbook-staging"])
    );
    assert_eq!(mid["appsToSync"], serde_json::json!(["guestbook-staging"]));

    // A rollback replayed mid-way (a restarted controller): the backend is back, the database
    // goes next, once; nothing of the failed revision syncs.
    let rollback = json("backend-degraded-rolls-back.yaml");
    assert_eq!(
        rollback["rollbackSyncs"],
        serde_json::json!([{"application": "database", "revisions": ["9e1d0b2"]}])
    );
    assert_eq!(rollback["syncTriggered"], serde_json::json!([]));
    assert_eq!(
        rollback["rollback"]["applications"][0]["rolledBackAt"],
        "2025-03-01T12:06:00Z"
    );
    let rolled_back = rollback["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "RolloutRolledBack")
        .unwrap();
    assert_eq!(rolled_back["reason"], "RollingBack");
    assert!(
        rolled_back["message"].as_str().unwrap().contains(
            "backend (step 2) back on 9e1d0b2 from 4c1e9a7, database (step 1) rolling back to 9e1d0b2 from 4c1e9a7"
        ),
        "{rolled_back}"
    );

    let invalid = json("invalid-app-in-two-steps.yaml");
    let condition = invalid["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "InvalidRolloutConfig")
        .unwrap();
    assert!(
        condition["message"]
            .as_str()
            .unwrap()
            .starts_with("step 2: Application \"database\"")
    );
}

#[test]
fn an_all_at_once_state_has_no_rollout_and_clears_the_old_statuses() {
    let value = json("switched-to-all-at-once.yaml");
    assert_eq!(value["applicationStatus"], serde_json::json!([]), "{value}");
    assert_eq!(value["conditions"], serde_json::json!([]), "{value}");
    let text = explain(
        &states_dir().join("switched-to-all-at-once.yaml"),
        OutputFormat::Table,
    );
    assert!(
        text.contains("strategy.type is AllAtOnce: no rollout"),
        "{text}"
    );
}

#[test]
fn a_freeze_holds_step_two_and_names_the_window() {
    let value = json("freeze-holds-step-two.yaml");
    assert_eq!(
        progressing_message(&value),
        r#""True" "StepWaitingForWindow": "step 2 of 2 waits for window 'prod freeze' (opens Mon 08:00 Europe/Berlin); held back: platform-backend""#
    );
}

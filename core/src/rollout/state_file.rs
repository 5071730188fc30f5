//! The offline rollout state file (`flotilla rollout explain --state FILE`, later written by
//! `--export`): a [`RolloutInput`] as YAML, so a rollout can be replayed from a bug report.
//! Unknown fields are errors, so a misspelt field never silently changes a replay.

use std::collections::BTreeSet;

use super::input::RolloutInput;
use crate::yaml::YamlError;

/// A state file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateFileError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error("{file}: unknown field(s) {}: not part of the rollout state file", fields.join(", "))]
    UnknownFields { file: String, fields: Vec<String> },
    #[error("{file}: application {name:?} is listed twice")]
    DuplicateApplication { file: String, name: String },
}

/// Parses a state file; `file` names it in errors (with line and column for YAML errors).
///
/// # Errors
/// Invalid YAML or field values, unknown fields, an application listed twice.
pub fn parse_state_file(file: &str, text: &str) -> Result<RolloutInput, StateFileError> {
    let (input, unknown): (RolloutInput, _) =
        serde_saphyr::with_deserializer_from_str(text, |de| {
            flotilla_generators::strict::deserialize(de)
        })
        .map_err(|error| YamlError::new(file, &error))?;
    if !unknown.is_empty() {
        return Err(StateFileError::UnknownFields {
            file: file.to_string(),
            fields: unknown.0,
        });
    }
    let mut seen = BTreeSet::new();
    if let Some(app) = input
        .applications
        .iter()
        .find(|app| !seen.insert(app.name.as_str()))
    {
        return Err(StateFileError::DuplicateApplication {
            file: file.to_string(),
            name: app.name.clone(),
        });
    }
    Ok(input)
}

/// The state file text for `input`.
///
/// # Errors
/// Serialization failures.
pub fn to_state_file(input: &RolloutInput) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::application_set_status::{RolloutApplicationState, SyncStatusCode};
    use crate::api::operation_state::OperationPhase;
    use crate::health::HealthStatus;

    const STATE: &str = r#"now: 2025-03-01T12:00:00Z
strategy:
  type: RollingSync
  rollingSync:
    progressDeadline: 10m
    steps:
      - matchExpressions: [{key: tier, operator: In, values: [db]}]
        maxUpdate: "25%"
applications:
  - name: db-eu
    labels: {tier: db}
    specChanged: true
    targetRevisions: [def456]
    status:
      health: Progressing
      healthMessage: 1/3 pods ready
      sync: OutOfSync
      revisions: [abc123]
      reconciledAt: 2025-03-01T11:59:30Z
      operationState: {phase: Running, startedAt: 2025-03-01T11:58:00Z}
  - name: db-us
    exists: false
priorApplicationStatus:
  - application: db-eu
    status: Pending
    step: "1"
    targetRevisions: [def456]
    lastTransitionTime: 2025-03-01T11:57:00Z
"#;

    #[test]
    fn parses_every_field_and_round_trips() {
        let input = parse_state_file("state.yaml", STATE).unwrap();
        let db_eu = &input.applications[0];
        assert!(db_eu.exists && db_eu.spec_changed);
        assert_eq!(db_eu.status.health, HealthStatus::Progressing);
        assert_eq!(db_eu.status.health_message, "1/3 pods ready");
        assert_eq!(db_eu.status.sync, SyncStatusCode::OutOfSync);
        assert_eq!(db_eu.target(), ["def456".to_string()]);
        let op = db_eu.status.operation_state.as_ref().unwrap();
        assert_eq!(op.phase, OperationPhase::Running);
        assert_eq!(op.started_at.to_string(), "2025-03-01T11:58:00Z");
        let db_us = &input.applications[1];
        assert!(!db_us.exists);
        assert_eq!(db_us.status.health, HealthStatus::Unknown);
        assert_eq!(
            input.prior_application_status[0].status,
            RolloutApplicationState::Pending
        );
        let text = to_state_file(&input).unwrap();
        assert_eq!(parse_state_file("again.yaml", &text).unwrap(), input);
    }

    #[test]
    fn errors_name_the_file_and_what_is_wrong() {
        let cases = [
            (
                STATE.replace("health: Progressing", "health: Sick"),
                "state.yaml:15",
            ),
            (
                STATE.replace("specChanged", "specChanges"),
                "unknown field(s) applications.0.specChanges",
            ),
            (
                STATE.replace("db-us", "db-eu"),
                "application \"db-eu\" is listed twice",
            ),
            ("now: yesterday\nstrategy: {}\n".to_string(), "state.yaml:1"),
        ];
        for (text, expected) in cases {
            let error = parse_state_file("state.yaml", &text)
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error} !~ {expected}");
        }
    }
}

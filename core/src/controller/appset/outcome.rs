//! How an ApplicationSet reconcile ended, as its status shows it: a failure's outcome (the
//! shell's error says which) wins; otherwise `UpToDate`, unless projects refused generated
//! Applications (not written) or refused the last sync of existing ones — then `ErrorOccurred`
//! names each with the rule. Pure.

use std::sync::Arc;

use crate::api::Application;
use crate::sync::{OperationPhase, PROJECT_REFUSAL};

use super::error_reason::ErrorReason;
use super::status::Outcome;

/// The outcome of a reconcile that `failed` (with the outcome its error shows as) or not;
/// `not_written` says which generated Applications projects refused, and `existing` are the
/// ApplicationSet's Applications.
#[must_use]
pub fn reconcile_outcome(
    failed: Option<Outcome>,
    not_written: Option<String>,
    existing: &[Arc<Application>],
) -> Outcome {
    failed.unwrap_or_else(|| refused_outcome(not_written, existing))
}

/// `UpToDate`, unless `not_written` names generated Applications projects refused, or a
/// project refused the last sync of one of `existing`: then `Invalid`, naming each.
#[must_use]
pub fn refused_outcome(not_written: Option<String>, existing: &[Arc<Application>]) -> Outcome {
    let mut lines: Vec<String> = not_written.into_iter().collect();
    for app in existing {
        let failed = app
            .status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .filter(|op| op.phase == OperationPhase::Failed)
            .filter(|op| op.message.starts_with(PROJECT_REFUSAL));
        if let Some(op) = failed {
            let name = app.metadata.name.as_deref().unwrap_or_default();
            lines.push(format!("{name}: {}", op.message));
        }
    }
    if lines.is_empty() {
        Outcome::UpToDate
    } else {
        Outcome::Invalid {
            reason: ErrorReason::ApplicationValidationError.as_str().to_owned(),
            message: lines.join("; "),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn app(name: &str, phase: &str, message: &str) -> Arc<Application> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": name},
                "spec": {"project": "default", "source": {"repoURL": "file:///r"}, "destination": {}},
                "status": {"operationState": {
                    "operationId": "op", "phase": phase, "message": message, "resources": []
                }}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn outcomes() {
        let refused = format!("{PROJECT_REFUSAL} destination not permitted");
        let failed = Outcome::ApplyFailed {
            reason: "ApplyError".into(),
            message: "conflict".into(),
        };
        let invalid = |message: &str| Outcome::Invalid {
            reason: "ApplicationValidationError".into(),
            message: message.into(),
        };
        let cases = [
            (
                "nothing refused",
                None,
                None,
                vec![app("a", "Succeeded", "ok")],
                Outcome::UpToDate,
            ),
            (
                "a failure wins over refusals",
                Some(failed.clone()),
                Some("1 refused".to_owned()),
                vec![app("a", "Failed", &refused)],
                failed,
            ),
            (
                "refused and not written",
                None,
                Some("1 refused".to_owned()),
                vec![],
                invalid("1 refused"),
            ),
            (
                "a sync refused by the project, another failed otherwise",
                None,
                None,
                vec![
                    app("a", "Failed", &refused),
                    app("b", "Failed", "apply failed"),
                ],
                invalid(&format!("a: {refused}")),
            ),
            (
                "both, in order",
                None,
                Some("1 refused".to_owned()),
                vec![app("a", "Failed", &refused)],
                invalid(&format!("1 refused; a: {refused}")),
            ),
        ];
        for (name, failed, not_written, existing, expected) in cases {
            assert_eq!(
                reconcile_outcome(failed, not_written, &existing),
                expected,
                "{name}"
            );
        }
    }
}

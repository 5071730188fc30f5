//! The reasons reference page: every condition type and reason, and every Event reason, from the
//! closed vocabularies the controllers write them with.

use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla_core::controller::appset::status::{REASON_PARAMETERS_GENERATED, REASON_UP_TO_DATE};
use flotilla_core::controller::{application, appset, event_reason::EventReason};
use flotilla_core::rollout::conditions::{ProgressReason, REASON_NO_MATCHING_STEP, RollbackReason};
use flotilla_core::rollout::config::ConfigReason;
use flotilla_core::rollout::external::DependencyProblem;

use super::markdown::{code, generated_note, table};

/// `(value, meaning)` rows of a closed vocabulary.
fn rows<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    meaning: fn(T) -> &'static str,
) -> Vec<Vec<String>> {
    all.iter()
        .map(|&value| vec![code(name(value)), meaning(value).to_owned()])
        .collect()
}

/// The page.
#[must_use]
pub fn page() -> String {
    let mut out = format!(
        "# Condition and Event reasons\n\n{}Every condition type and reason the controllers \
         write in status, and every reason of the Events they publish. `kubectl get fappset` \
         shows the `RolloutProgressing` reason in its `Rollout` column; `kubectl describe` shows \
         conditions and Events.\n\n",
        generated_note()
    );
    out.push_str("## ApplicationSet conditions\n\n");
    out.push_str(&table(
        &["Type", "Meaning"],
        &rows(
            &ConditionType::ALL,
            ConditionType::as_str,
            ConditionType::meaning,
        ),
    ));
    out.push_str(
        "\n### `ErrorOccurred`, `ParametersGenerated` and `ResourcesUpToDate`\n\n\
         After a reconcile that succeeded: `ErrorOccurred` False and `ResourcesUpToDate` True \
         with reason ",
    );
    out.push_str(&format!(
        "{}, `ParametersGenerated` True with reason {}. After one that failed, the three carry \
         the failed step's reason (`ParametersGenerated` only when the generators failed):\n\n",
        code(REASON_UP_TO_DATE),
        code(REASON_PARAMETERS_GENERATED)
    ));
    out.push_str(&table(
        &["Reason", "Meaning"],
        &rows(
            &appset::error_reason::ErrorReason::ALL,
            appset::error_reason::ErrorReason::as_str,
            appset::error_reason::ErrorReason::meaning,
        ),
    ));
    out.push_str("\n### `RolloutProgressing`\n\n");
    let progress: Vec<Vec<String>> = ProgressReason::ALL
        .iter()
        .map(|&reason| {
            let status = match reason.status() {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            };
            vec![
                code(reason.as_str()),
                status.to_owned(),
                reason.meaning().to_owned(),
            ]
        })
        .collect();
    out.push_str(&table(&["Reason", "Status", "Meaning"], &progress));
    out.push_str("\n### `InvalidRolloutConfig`\n\n");
    out.push_str(&table(
        &["Reason", "Meaning"],
        &rows(
            &ConfigReason::ALL,
            ConfigReason::as_str,
            ConfigReason::meaning,
        ),
    ));
    out.push_str("\n### `RolloutRolledBack`\n\n");
    out.push_str(&table(
        &["Reason", "Meaning"],
        &rows(
            &RollbackReason::ALL,
            RollbackReason::as_str,
            RollbackReason::meaning,
        ),
    ));
    out.push_str("\n### `InvalidRolloutDependency`\n\n");
    out.push_str(&table(
        &["Reason", "Meaning"],
        &rows(
            &DependencyProblem::ALL,
            DependencyProblem::as_str,
            DependencyProblem::meaning,
        ),
    ));
    out.push_str(&format!(
        "\n### `UnselectedApplications`\n\nReason {}: some Applications match no step and are \
         never synced by the rollout; the message names them.\n\n",
        code(REASON_NO_MATCHING_STEP)
    ));
    out.push_str(
        "## Application conditions\n\nAn Application's conditions have a type and a message \
         (no reason), as in Argo CD.\n\n",
    );
    out.push_str(&table(
        &["Type", "Meaning"],
        &rows(
            &ApplicationConditionType::ALL,
            ApplicationConditionType::as_str,
            ApplicationConditionType::meaning,
        ),
    ));
    out.push_str(
        "\n## Events\n\nPublished on the Application or ApplicationSet (`LeadershipLost` on the \
         controller's Lease), with the action they report on. Routine Normal Events (a sync started, resumed or succeeded) are \
         rate-limited: at most 100 at once and 5 a second after that per controller; Warnings \
         and a rollout's Events always go out.\n\n",
    );
    let events: Vec<Vec<String>> = EventReason::ALL
        .iter()
        .map(|&reason| {
            vec![
                code(reason.as_str()),
                if reason.is_warning() {
                    "Warning"
                } else {
                    "Normal"
                }
                .to_owned(),
                reason.action().to_owned(),
                reason.meaning().to_owned(),
            ]
        })
        .collect();
    out.push_str(&table(&["Reason", "Type", "Action", "Meaning"], &events));
    out.push_str(
        "\n## Application reconcile results\n\nThe `result` label of \
         `flotilla_application_reconciles_total` when a reconcile fails (`ok` otherwise); the \
         Application's conditions say what happened in words.\n\n",
    );
    out.push_str(&table(
        &["Result", "Meaning"],
        &rows(
            &application::error_reason::ErrorReason::ALL,
            application::error_reason::ErrorReason::as_str,
            application::error_reason::ErrorReason::meaning,
        ),
    ));
    out
}

//! When a change of one Application opens the next RollingSync step: the Application was
//! promoted (Pending or Progressing in the status the last pass wrote) and is now Healthy and
//! Synced on its target revisions, and so is every other Application of its step that the last
//! pass had not seen Healthy. Such a change makes the next reconcile of its ApplicationSet start
//! at once, not after the pause that coalesces the other events ([`super::pacing`]) — also
//! when the last pass kept the entries on the Applications ([`super::rollout_layout`]). Pure: the
//! caller feeds it the Applications as its watch sees them.

use std::collections::BTreeMap;

use super::rollout_input::observed_status;
use super::rollout_layout::on_applications;
use crate::api::Application;
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ApplicationSetStatus, RolloutApplicationState,
};
use crate::rollout::ApplicationState;

/// What the watch saw of one ApplicationSet's Applications since its last reconcile: whether
/// each that changed is done for the rollout, and — when the last pass kept its entries on the
/// Applications ([`on_applications`]) — those entries, gathered once.
#[derive(Clone, Debug, Default)]
pub struct StepWatch {
    done: BTreeMap<String, bool>,
    kept: Option<Vec<ApplicationSetApplicationStatus>>,
}

impl StepWatch {
    /// Records `application` as it is now; true when it completes the step it belongs to in
    /// `status` (the last pass's). When `status` keeps its entries on the Applications, they
    /// are read once, with `kept` (the `status.rollout` of each of the ApplicationSet's
    /// Applications, as the watch holds them).
    pub fn completes_step(
        &mut self,
        status: Option<&ApplicationSetStatus>,
        application: &Application,
        kept: impl FnOnce() -> Vec<ApplicationSetApplicationStatus>,
    ) -> bool {
        let Some(status) = status else {
            return false;
        };
        let entries = if on_applications(status) {
            self.kept.get_or_insert_with(kept).as_slice()
        } else {
            status.application_status.as_slice()
        };
        let name = application.metadata.name.clone().unwrap_or_default();
        let Some(entry) = entries.iter().find(|entry| entry.application == name) else {
            return false;
        };
        let done = done(application, entry);
        self.done.insert(name, done);
        let promoted = matches!(
            entry.status,
            RolloutApplicationState::Pending | RolloutApplicationState::Progressing
        );
        done && promoted
            && entries
                .iter()
                .filter(|other| other.step == entry.step)
                .filter(|other| other.status != RolloutApplicationState::Healthy)
                .all(|other| self.done.get(&other.application) == Some(&true))
    }
}

/// Whether `application` is Healthy and Synced on the revisions `entry` rolls it out to, with
/// no sync running (as the rollout's step function judges it).
fn done(application: &Application, entry: &ApplicationSetApplicationStatus) -> bool {
    ApplicationState {
        name: entry.application.clone(),
        labels: BTreeMap::new(),
        exists: true,
        spec_changed: false,
        target_revisions: entry.target_revisions.clone(),
        status: observed_status(application),
        sync_blocked_by: None,
        previous_revisions: Vec::new(),
        destination: Default::default(),
    }
    .healthy_on_target()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn app(name: &str, health: &str, revision: &str) -> Application {
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "generation": 1},
            "spec": {"project": "default", "destination": {},
                     "source": {"repoURL": "r", "targetRevision": "main"}},
            "status": {
                "observedGeneration": 1,
                "health": {"status": health},
                "sync": {"status": "Synced", "revision": revision},
                "reconciledAt": "2026-01-01T00:00:10Z",
                "operationState": {"phase": "Succeeded", "message": "", "operationId": "1",
                                   "startedAt": "2026-01-01T00:00:05Z"}
            }
        }))
        .unwrap()
    }

    fn status(entries: &[(&str, &str, &str)]) -> ApplicationSetStatus {
        serde_json::from_value(json!({
            "applicationStatus": entries.iter().map(|(name, step, state)| json!({
                "application": name, "step": step, "status": state, "targetRevisions": ["new"],
            })).collect::<Vec<_>>()
        }))
        .unwrap()
    }

    #[test]
    fn the_last_application_of_a_step_done_on_its_target_completes_it() {
        let status = status(&[
            ("a", "1", "Progressing"),
            ("b", "1", "Pending"),
            ("c", "1", "Healthy"),
            ("d", "2", "Waiting"),
        ]);
        let mut watch = StepWatch::default();
        assert!(
            !watch.completes_step(Some(&status), &app("a", "Healthy", "new"), Vec::new),
            "b is not done yet"
        );
        assert!(
            !watch.completes_step(Some(&status), &app("b", "Progressing", "new"), Vec::new),
            "b is not Healthy"
        );
        assert!(
            !watch.completes_step(Some(&status), &app("b", "Healthy", "old"), Vec::new),
            "b is on the old revision"
        );
        assert!(watch.completes_step(Some(&status), &app("b", "Healthy", "new"), Vec::new));
        assert!(
            !watch.completes_step(Some(&status), &app("d", "Healthy", "new"), Vec::new),
            "d was not promoted"
        );
        assert!(!watch.completes_step(None, &app("a", "Healthy", "new"), Vec::new));
        let mut fresh = StepWatch::default();
        assert!(
            !fresh.completes_step(Some(&status), &app("b", "Healthy", "new"), Vec::new),
            "a not seen done since the last pass"
        );
    }

    #[test]
    fn entries_kept_on_the_applications_are_read_once_and_complete_the_step_too() {
        let listed = status(&[
            ("a", "1", "Progressing"),
            ("b", "1", "Pending"),
            ("d", "2", "Waiting"),
        ]);
        let summarised: ApplicationSetStatus = serde_json::from_value(json!({
            "applicationStatusSummary": [{"step": "1", "progressing": 1, "pending": 1},
                                         {"step": "2", "waiting": 1}]
        }))
        .unwrap();
        assert!(on_applications(&summarised));
        let mut reads = 0;
        let mut watch = StepWatch::default();
        let mut kept = || {
            reads += 1;
            listed.application_status.clone()
        };
        assert!(!watch.completes_step(Some(&summarised), &app("a", "Healthy", "new"), &mut kept));
        assert!(watch.completes_step(Some(&summarised), &app("b", "Healthy", "new"), &mut kept));
        assert_eq!(reads, 1, "gathered once per reconcile");
    }
}

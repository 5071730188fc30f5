//! The controller's [`OperationStore`]: the Application's own `status.operationState`, read with
//! a get and written with a merge patch of the status subresource, so a sync interrupted by a
//! restart resumes from what the Application shows. A successful end is written with its
//! `status.history` entry in the same patch: a controller killed at any moment loses neither.
//! To spare the API server writes, the first save can carry other fields of the status (the
//! compare that decided the sync and the operation it starts, [`StatusStore::carrying`]), and
//! the end can be held back ([`StatusStore::holding_end`]) for the controller to write it
//! together with the compare that follows it; such a store also lets an operation without hooks
//! skip storing its start ([`OperationStore::defers_start`]), so one that ends in its first step
//! is written once, with the compare after it.

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::sync::execute::{OperationStore, StoreError};
use flotilla_core::api::Application;
use flotilla_core::api::application::{InitiatedBy, TERMINATE_ANNOTATION};
use flotilla_core::controller::application::history::after_operation;
use flotilla_core::controller::application::status::operation_state_patch;
use flotilla_core::sync::{OperationPhase, OperationState};

/// The operation state of one Application.
pub struct StatusStore {
    api: Api<Application>,
    namespace: String,
    name: String,
    /// Who started the operation, when its success goes into the history.
    history: Option<InitiatedBy>,
    /// Fields of the status written with the next save.
    carried: Mutex<Option<Value>>,
    /// Where the end's patch is left, unwritten, when it is held.
    held_end: Option<HeldEnd>,
}

/// The status patch of an operation's end, held back by its [`StatusStore`] for the
/// controller to write (with more of the status); empty until the operation ended.
#[derive(Clone, Default)]
pub struct HeldEnd(Arc<Mutex<Option<Value>>>);

impl HeldEnd {
    /// The held patch (`{"status": {...}}`), once the operation ended.
    #[must_use]
    pub fn take(&self) -> Option<Value> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl StatusStore {
    /// The store of Application `name` in `api`'s namespace `namespace`.
    #[must_use]
    pub fn new(api: Api<Application>, namespace: &str, name: &str) -> Self {
        Self {
            api,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            history: None,
            carried: Mutex::new(None),
            held_end: None,
        }
    }

    /// The store whose next save also writes `patch` (a merge patch `{"status": {...}}` of
    /// other fields than the operation's).
    #[must_use]
    pub fn carrying(self, patch: Value) -> Self {
        *self.carried.lock().unwrap_or_else(PoisonError::into_inner) = Some(patch);
        self
    }

    /// Where this store leaves the operation's end, if it holds it.
    #[must_use]
    pub fn held_end(&self) -> Option<HeldEnd> {
        self.held_end.clone()
    }

    /// The store that does not write the operation's end but leaves it in `held` (which the
    /// controller must then write).
    #[must_use]
    pub fn holding_end(self, held: HeldEnd) -> Self {
        Self {
            held_end: Some(held),
            ..self
        }
    }

    /// The store of a sync started by `initiated_by`, whose success is an entry of
    /// `status.history`.
    #[must_use]
    pub fn recording_history(self, initiated_by: InitiatedBy) -> Self {
        Self {
            history: Some(initiated_by),
            ..self
        }
    }

    /// The history with `state` recorded, when it is a sync that succeeded and is not recorded
    /// yet.
    async fn history_after(&self, state: &OperationState) -> Result<Option<Value>, StoreError> {
        let Some(initiated_by) = &self.history else {
            return Ok(None);
        };
        if state.phase != OperationPhase::Succeeded {
            return Ok(None);
        }
        let app = self.api.get(&self.name).await.map_err(|e| self.error(e))?;
        let now = Time(Timestamp::now());
        Ok(
            after_operation(app.history(), state, (&app.spec, initiated_by), &now)
                .map(|h| json!(h)),
        )
    }

    fn error(&self, message: impl ToString) -> StoreError {
        StoreError {
            location: format!(
                "Application {}/{} status.operationState",
                self.namespace, self.name
            ),
            message: message.to_string(),
        }
    }
}

impl OperationStore for StatusStore {
    async fn load(&self) -> Result<Option<OperationState>, StoreError> {
        let app = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error(e))?
            .ok_or_else(|| self.error("the Application does not exist"))?;
        Ok(app.status.and_then(|status| status.operation_state))
    }

    async fn save(&self, state: &OperationState) -> Result<(), StoreError> {
        let carried = self
            .carried
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut patch = carried.unwrap_or_else(|| json!({"status": {}}));
        patch["status"]["operationState"] = operation_state_patch(state);
        if let Some(history) = self.history_after(state).await? {
            patch["status"]["history"] = history;
        }
        if let Some(held) = &self.held_end
            && state.phase != OperationPhase::Running
        {
            *held.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(patch);
            return Ok(());
        }
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// A store holding the end is the controller's: it compares again after a restart.
    fn defers_start(&self) -> bool {
        self.held_end.is_some()
    }
}

/// Whether `app`'s terminate annotation names its running operation.
#[must_use]
pub fn terminates(app: &Application) -> bool {
    let running = app
        .status
        .as_ref()
        .and_then(|status| status.operation_state.as_ref())
        .filter(|op| op.phase == OperationPhase::Running);
    running.is_some_and(|op| app.annotations().get(TERMINATE_ANNOTATION) == Some(&op.operation_id))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use flotilla_core::sync::begin;

    #[test]
    fn terminate_names_the_running_operation_only() {
        let app = |annotation: Option<&str>, phase| {
            let mut app = Application::new("web", flotilla_core::api::ApplicationSpec::default());
            if let Some(id) = annotation {
                app.annotations_mut()
                    .insert(TERMINATE_ANNOTATION.into(), id.into());
            }
            let (mut state, _) = begin(None, None, "web-1", Time(Timestamp::UNIX_EPOCH));
            state.phase = phase;
            app.status = Some(flotilla_core::api::application::ApplicationStatus {
                operation_state: Some(state),
                ..Default::default()
            });
            app
        };
        assert!(terminates(&app(Some("web-1"), OperationPhase::Running)));
        assert!(!terminates(&app(Some("web-0"), OperationPhase::Running)));
        assert!(!terminates(&app(Some("web-1"), OperationPhase::Succeeded)));
        assert!(!terminates(&app(None, OperationPhase::Running)));
    }
}

//! The controller's [`OperationStore`]: the Application's own `status.operationState`, read with
//! a get and written with a merge patch of the status subresource, so a sync interrupted by a
//! restart resumes from what the Application shows. A successful end is written with its
//! `status.history` entry in the same patch: a controller killed at any moment loses neither.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::application::history::after_operation;
use crate::api::Application;
use crate::api::application::{InitiatedBy, TERMINATE_ANNOTATION};
use crate::sync::execute::{OperationStore, StoreError};
use crate::sync::{OperationPhase, OperationState};

/// The operation state of one Application.
pub struct StatusStore {
    api: Api<Application>,
    namespace: String,
    name: String,
    /// Who started the operation, when its success goes into the history.
    history: Option<InitiatedBy>,
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
        let history = app.status.map(|status| status.history).unwrap_or_default();
        let now = Time(Timestamp::now());
        Ok(after_operation(&history, state, initiated_by, &now).map(|h| json!(h)))
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
        let mut status = json!({"operationState": replacing(state)});
        if let Some(history) = self.history_after(state).await? {
            status["history"] = history;
        }
        let patch = json!({ "status": status });
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(drop)
            .map_err(|e| self.error(e))
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

/// Fields of a stored operation that a new one may leave out.
const OPTIONAL_FIELDS: [&str; 4] = ["revision", "failure", "startedAt", "finishedAt"];

/// `state` with explicit nulls for its absent optional fields: a merge patch then removes what
/// a previous operation left there instead of keeping it.
fn replacing(state: &OperationState) -> Value {
    let mut value = serde_json::to_value(state).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        for field in OPTIONAL_FIELDS {
            map.entry(field).or_insert(Value::Null);
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::sync::begin;

    #[test]
    fn absent_fields_are_removed_by_the_merge_patch() {
        let (state, _) = begin(None, None, "op", Time(Timestamp::UNIX_EPOCH));
        let value = replacing(&state);
        let map = value.as_object().unwrap();
        for field in ["failure", "finishedAt", "revision"] {
            assert_eq!(map.get(field), Some(&Value::Null), "{field}");
        }
        assert!(map["startedAt"].is_string());
        assert_eq!(value["operationId"], "op");
    }

    #[test]
    fn terminate_names_the_running_operation_only() {
        let app = |annotation: Option<&str>, phase| {
            let mut app = Application::new("web", crate::api::ApplicationSpec::default());
            if let Some(id) = annotation {
                app.annotations_mut()
                    .insert(TERMINATE_ANNOTATION.into(), id.into());
            }
            let (mut state, _) = begin(None, None, "web-1", Time(Timestamp::UNIX_EPOCH));
            state.phase = phase;
            app.status = Some(crate::api::application::ApplicationStatus {
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

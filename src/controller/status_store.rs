//! The controller's [`OperationStore`]: the Application's own `status.operationState`, read with
//! a get and written with a merge patch of the status subresource, so a sync interrupted by a
//! restart resumes from what the Application shows.

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::api::Application;
use crate::sync::OperationState;
use crate::sync::execute::{OperationStore, StoreError};

/// The operation state of one Application.
pub struct StatusStore {
    api: Api<Application>,
    namespace: String,
    name: String,
}

impl StatusStore {
    /// The store of Application `name` in `api`'s namespace `namespace`.
    #[must_use]
    pub fn new(api: Api<Application>, namespace: &str, name: &str) -> Self {
        Self {
            api,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
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
        let patch = json!({"status": {"operationState": replacing(state)}});
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(drop)
            .map_err(|e| self.error(e))
    }
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
    use crate::sync::execute::begin;

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
}

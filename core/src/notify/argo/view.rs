//! The Application as notification triggers and templates see it (`app`): the object with
//! Argo CD's paths where Flotilla's differ — `status.operationState.syncResult.revision` (and
//! `revisions`) for the revision the operation synced, which Flotilla records as
//! `status.operationState.revision` — and, as Argo CD's Applications always have them,
//! `status`, `status.sync` and `status.health` (empty before the first comparison) — and
//! without its managed fields. Pure.

use serde_json::Value;

/// `app` of triggers and templates, from the Application's JSON.
#[must_use]
pub fn application_view(app: &Value) -> Value {
    let mut view = app.clone();
    if let Some(metadata) = view.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    if let Some(object) = view.as_object_mut() {
        let status = object
            .entry("status")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(status) = status.as_object_mut() {
            for part in ["sync", "health"] {
                status
                    .entry(part)
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
            }
        }
    }
    if let Some(operation) = view
        .pointer_mut("/status/operationState")
        .and_then(Value::as_object_mut)
        && !operation.contains_key("syncResult")
    {
        let mut result = serde_json::Map::new();
        for field in ["revision", "revisions"] {
            if let Some(value) = operation.get(field) {
                result.insert(field.to_owned(), value.clone());
            }
        }
        if !result.is_empty() {
            operation.insert("syncResult".to_owned(), Value::Object(result));
        }
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_synced_revision_is_where_argo_cd_has_it() {
        let app = json!({"metadata": {"name": "web", "managedFields": [{}]},
            "status": {"operationState": {"phase": "Succeeded", "revision": "abc"}}});
        let view = application_view(&app);
        assert_eq!(
            view["status"]["operationState"]["syncResult"]["revision"],
            "abc"
        );
        assert_eq!(view["status"]["operationState"]["revision"], "abc");
        assert!(view["metadata"].get("managedFields").is_none());
        let fresh = application_view(&json!({"metadata": {"name": "new"}}));
        assert_eq!(fresh["status"], json!({"sync": {}, "health": {}}));
    }
}

//! Whether a live object already matches the desired one (`ApplyOutOfSyncOnly=true`), decided
//! locally from the live object, without asking the server.
//!
//! "Matches" means both:
//! 1. every field of the desired object (normalised, with its tracking annotation) is in the live
//!    object with the same value; maps may hold more keys (server defaults, other managers'
//!    fields), lists must have the same length and match item by item; a desired null or empty
//!    map/list matches an absent field; `status` is not compared;
//! 2. every field the live object's managed fields say our field manager set with a server-side
//!    apply is still desired: a field removed from the manifests makes the object out of sync,
//!    because applying would remove it.
//!
//! Values the server rewrites (e.g. quantities such as `1000m` → `1`) count as differences, so
//! such an object is applied again: the check errs towards applying, never towards skipping a
//! needed change.

use serde_json::{Map, Value};

/// Whether `live` already matches `desired`; `manager` is the field manager of our applies.
#[must_use]
pub fn is_in_sync(desired: &Value, live: &Value, manager: &str) -> bool {
    let Some(fields) = desired.as_object() else {
        return false;
    };
    let compared = fields.iter().filter(|(key, _)| key.as_str() != "status");
    let contained = compared
        .into_iter()
        .all(|(key, value)| contains(live.get(key), value));
    contained && applied_fields(live, manager).all(|owned| owned_fields_desired(owned, desired))
}

/// Whether `live` holds `desired`.
fn contains(live: Option<&Value>, desired: &Value) -> bool {
    match (desired, live) {
        (Value::Null, None | Some(Value::Null)) => true,
        (Value::Object(map), None) => map.is_empty(),
        (Value::Array(items), None) => items.is_empty(),
        (Value::Object(desired), Some(Value::Object(live))) => desired
            .iter()
            .all(|(key, value)| contains(live.get(key), value)),
        (Value::Array(desired), Some(Value::Array(live))) => {
            desired.len() == live.len()
                && desired
                    .iter()
                    .zip(live)
                    .all(|(desired, live)| contains(Some(live), desired))
        }
        (Value::Number(desired), Some(Value::Number(live))) => {
            desired == live || desired.as_f64() == live.as_f64()
        }
        (desired, Some(live)) => desired == live,
        (_, None) => false,
    }
}

/// The `fieldsV1` of every managed-fields entry our manager wrote with a server-side apply.
fn applied_fields<'v>(live: &'v Value, manager: &'v str) -> impl Iterator<Item = &'v Value> {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |entry| {
            entry.get("manager").and_then(Value::as_str) == Some(manager)
                && entry.get("operation").and_then(Value::as_str) == Some("Apply")
        })
        .filter_map(|entry| entry.get("fieldsV1"))
}

/// Whether every field in a `fieldsV1` set is present in `desired`. Keys are `f:<name>` (a
/// field), `k:<json>` (the list item whose key fields have these values), `v:<json>` (a set
/// item) and `.` (the node itself).
fn owned_fields_desired(owned: &Value, desired: &Value) -> bool {
    let Some(owned) = owned.as_object() else {
        return true;
    };
    owned.iter().all(|(key, children)| {
        let child = if let Some(name) = key.strip_prefix("f:") {
            desired.get(name)
        } else if let Some(item_key) = key.strip_prefix("k:") {
            list_item(desired, item_key)
        } else if let Some(value) = key.strip_prefix("v:") {
            let value: Option<Value> = serde_json::from_str(value).ok();
            return desired
                .as_array()
                .is_some_and(|items| value.is_some_and(|value| items.contains(&value)));
        } else {
            return true;
        };
        child.is_some_and(|child| owned_fields_desired(children, child))
    })
}

/// The item of the list `desired` whose fields have the values of the JSON `item_key`.
fn list_item<'d>(desired: &'d Value, item_key: &str) -> Option<&'d Value> {
    let item_key: Map<String, Value> = serde_json::from_str(item_key).ok()?;
    desired.as_array()?.iter().find(|item| {
        item_key
            .iter()
            .all(|(field, value)| contains(item.get(field), value))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "n", "annotations": {"t": "app"}},
               "data": data})
    }

    fn live(data: Value, owned: Value) -> Value {
        let mut live = config_map(data);
        live["metadata"]["uid"] = json!("1234");
        live["metadata"]["managedFields"] = json!([
            {"manager": "flotilla", "operation": "Apply", "fieldsV1": owned},
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {"f:extra": {}}}},
        ]);
        live
    }

    #[test]
    fn desired_fields_must_be_live_and_applied_fields_desired() {
        let owned = json!({"f:metadata": {"f:annotations": {"f:t": {}}}, "f:data": {"f:a": {}}});
        let desired = config_map(json!({"a": "1"}));
        let cases = [
            (live(json!({"a": "1"}), owned.clone()), true),
            (live(json!({"a": "1", "extra": "x"}), owned.clone()), true),
            (live(json!({"a": "2"}), owned.clone()), false),
            (live(json!({}), owned.clone()), false),
            (
                live(
                    json!({"a": "1", "b": "2"}),
                    json!({"f:data": {"f:a": {}, "f:b": {}}}),
                ),
                false,
            ),
        ];
        for (live, expected) in cases {
            assert_eq!(is_in_sync(&desired, &live, "flotilla"), expected, "{live}");
        }
    }

    #[test]
    fn lists_match_item_by_item_and_by_key() {
        let desired =
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "finalizers": ["a"]}});
        let owned = json!({"f:spec": {
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
            "f:finalizers": {"v:\"a\"": {}}
        }});
        let matching = json!({
            "metadata": {"managedFields": [{"manager": "flotilla", "operation": "Apply", "fieldsV1": owned}]},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "finalizers": ["a"]},
            "status": {"loadBalancer": {}}
        });
        assert!(is_in_sync(&desired, &matching, "flotilla"));
        let mut extra_port = matching.clone();
        extra_port["spec"]["ports"] = json!([{"port": 80, "protocol": "TCP"}, {"port": 81}]);
        assert!(!is_in_sync(&desired, &extra_port, "flotilla"));
        let removed =
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "finalizers": []}});
        assert!(
            !is_in_sync(&removed, &matching, "flotilla"),
            "finalizer a was applied and is no longer desired"
        );
        let other_port =
            json!({"spec": {"ports": [{"port": 81, "protocol": "TCP"}], "finalizers": ["a"]}});
        assert!(!is_in_sync(&other_port, &matching, "flotilla"));
    }

    #[test]
    fn empty_and_null_desired_values_match_absent_ones() {
        let desired =
            json!({"metadata": {"labels": {}}, "data": null, "spec": {"items": [], "n": 1.0}});
        assert!(is_in_sync(
            &desired,
            &json!({"metadata": {}, "spec": {"n": 1}}),
            "flotilla"
        ));
        assert!(!is_in_sync(
            &json!({"data": {"a": "1"}}),
            &json!({}),
            "flotilla"
        ));
        assert!(!is_in_sync(&json!("not an object"), &json!({}), "flotilla"));
    }

    #[test]
    fn fields_set_by_update_or_other_managers_do_not_count() {
        let desired = config_map(json!({"a": "1"}));
        let mut updated = live(json!({"a": "1", "b": "2"}), json!({"f:data": {"f:a": {}}}));
        updated["metadata"]["managedFields"][0]["fieldsV1"] = json!({"f:data": {"f:a": {}}});
        updated["metadata"]["managedFields"][1] = json!({"manager": "flotilla", "operation": "Update", "fieldsV1": {"f:data": {"f:b": {}}}});
        assert!(is_in_sync(&desired, &updated, "flotilla"));
    }
}

//! The one answer to "is it in sync?", used by the compare (status, `firstDifference`,
//! `flotilla diff`) and by `ApplyOutOfSyncOnly=true` (skip the write): whether a live object
//! matches the object a sync would apply, after normalisation. Every field the desired object
//! sets must be present and equal in the live one (fields the server or other controllers add
//! are ignored; lists match item by item; a desired null, `{}` or `[]` matches an absent field;
//! `status` and server-set metadata are not compared); quantities compare by value (`500m` is
//! `0.5`), numbers and strings by text (`8080` is `"8080"`), a Secret's `stringData` with its
//! base64 `data`; and a field, list item or set member that our field manager applied before
//! (its managed fields) but the desired object no longer sets counts as a difference, because
//! applying would remove it. Differences are named by JSON pointer. Pure.

use serde_json::{Map, Value};

/// Server-populated metadata a manifest may carry but that never counts as a difference.
const SERVER_METADATA: [&str; 6] = [
    "creationTimestamp",
    "resourceVersion",
    "uid",
    "generation",
    "managedFields",
    "selfLink",
];

/// Keys whose values are resource quantities (`500m` equals `0.5`).
const QUANTITY_PARENTS: [&str; 5] = ["limits", "requests", "capacity", "hard", "allocatable"];

/// The first difference between `desired` (as applied by field manager `manager`) and `live`,
/// as a JSON pointer, or None when the live object matches.
#[must_use]
pub fn first_difference(desired: &Value, live: &Value, manager: &str) -> Option<String> {
    differences(desired, live, manager).into_iter().next()
}

/// Every field where `live` differs from `desired` (as applied by field manager `manager`), as
/// JSON pointers in document order, then the first field `manager` applied before that
/// `desired` no longer sets.
#[must_use]
pub fn differences(desired: &Value, live: &Value, manager: &str) -> Vec<String> {
    let mut found = Vec::new();
    differs(&normalize(desired), live, "", &mut found);
    found.extend(removed_field(desired, live, manager));
    found
}

/// The two sides the compare looks at: `desired` normalised, and the fields of `live` that it
/// sets (lists item by item), for showing a difference.
#[must_use]
pub fn compared(desired: &Value, live: &Value) -> (Value, Value) {
    let desired = normalize(desired);
    let live = project(live, &desired);
    (desired, live)
}

/// The part of `live` at the fields `shape` has.
fn project(live: &Value, shape: &Value) -> Value {
    match (live, shape) {
        (Value::Object(have), Value::Object(want)) => Value::Object(
            want.keys()
                .filter_map(|key| {
                    let value = have.get(key)?;
                    Some((key.clone(), project(value, &want[key])))
                })
                .collect(),
        ),
        (Value::Array(have), Value::Array(want)) if have.len() == want.len() => Value::Array(
            have.iter()
                .zip(want)
                .map(|(have, want)| project(have, want))
                .collect(),
        ),
        (live, _) => live.clone(),
    }
}

/// The desired object as the server would store it, without what is never compared.
fn normalize(desired: &Value) -> Value {
    let mut object = desired.clone();
    let Some(map) = object.as_object_mut() else {
        return object;
    };
    map.remove("status");
    if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_METADATA {
            metadata.remove(field);
        }
    }
    let is_secret = map.get("kind").and_then(Value::as_str) == Some("Secret")
        && map.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if is_secret && let Some(Value::Object(strings)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(data) = data.as_object_mut() {
            for (key, value) in strings {
                let text = value.as_str().unwrap_or_default().as_bytes().to_vec();
                let encoded =
                    serde_json::to_value(k8s_openapi::ByteString(text)).unwrap_or(Value::Null);
                data.insert(key, encoded);
            }
        }
    }
    object
}

/// Adds to `found` the path of every field of `desired` that `live` lacks or holds differently.
fn differs(desired: &Value, live: &Value, path: &str, found: &mut Vec<String>) {
    match (desired, live) {
        (Value::Null, _) => {}
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let here = format!("{path}/{}", escape(key));
                match have.get(key) {
                    Some(live) => differs(value, live, &here, found),
                    None if is_empty(value) => {}
                    None => found.push(here),
                }
            }
        }
        (Value::Array(want), Value::Array(have)) if want.len() == have.len() => {
            for (index, (want, have)) in want.iter().zip(have).enumerate() {
                differs(want, have, &format!("{path}/{index}"), found);
            }
        }
        (want, have) if scalars_equal(want, have, path) => {}
        _ => found.push(path.to_owned()),
    }
}

/// A map key as a JSON pointer token (`~` is `~0`, `/` is `~1`).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Null, `{}` and `[]` stand for a field the server leaves out.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

fn scalars_equal(want: &Value, have: &Value, path: &str) -> bool {
    if want == have {
        return true;
    }
    let (Some(want), Some(have)) = (scalar_text(want), scalar_text(have)) else {
        return false;
    };
    if want == have {
        return true;
    }
    match (want.parse::<f64>(), have.parse::<f64>()) {
        (Ok(a), Ok(b)) if a == b => return true,
        _ => {}
    }
    let parent = path.rsplit('/').nth(1);
    parent.is_some_and(|p| QUANTITY_PARENTS.contains(&p))
        && matches!((quantity(&want), quantity(&have)), (Some(a), Some(b)) if (a - b).abs() <= f64::EPSILON * a.abs().max(1.0))
}

/// Strings and numbers as text (`1` and `"1"` are the same quantity or port).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// A Kubernetes quantity (`500m`, `1Gi`, `2e3`) as a number.
fn quantity(text: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    let text = text.trim();
    for (suffix, factor) in SUFFIXES {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    text.parse().ok()
}

/// A field, list item (`k:`) or set member (`v:`) that `manager`'s last server-side apply set
/// (its managed fields) and the desired object no longer sets: the apply would remove it.
fn removed_field(desired: &Value, live: &Value, manager: &str) -> Option<String> {
    let entries = live.pointer("/metadata/managedFields")?.as_array()?;
    let is_secret = desired.get("kind").and_then(Value::as_str) == Some("Secret");
    entries
        .iter()
        .filter(|entry| {
            entry.get("manager").and_then(Value::as_str) == Some(manager)
                && entry.get("operation").and_then(Value::as_str) == Some("Apply")
        })
        .filter_map(|entry| entry.get("fieldsV1"))
        .find_map(|fields| owned_but_unset(fields, desired, "", is_secret))
}

fn owned_but_unset(fields: &Value, desired: &Value, path: &str, secret: bool) -> Option<String> {
    fields.as_object()?.iter().find_map(|(key, owned)| {
        if let Some(name) = key.strip_prefix("f:") {
            let here = format!("{path}/{}", escape(name));
            let present = desired.get(name).or_else(|| {
                // The server stores a Secret's stringData as data.
                let top_level = path.is_empty() && secret && name == "data";
                top_level.then(|| desired.get("stringData")).flatten()
            });
            match present {
                None => Some(here),
                Some(value @ (Value::Object(_) | Value::Array(_)))
                    if !(path.is_empty() && secret) =>
                {
                    owned_but_unset(owned, value, &here, false)
                }
                Some(_) => None,
            }
        } else if let Some(item_key) = key.strip_prefix("k:") {
            let item_key: Map<String, Value> = serde_json::from_str(item_key).ok()?;
            let item = desired.as_array()?.iter().find(|item| {
                item_key.iter().all(|(field, value)| {
                    item.get(field)
                        .is_some_and(|have| scalars_equal(value, have, ""))
                })
            });
            match item {
                None => Some(path.to_owned()),
                Some(item) => owned_but_unset(owned, item, path, false),
            }
        } else if let Some(member) = key.strip_prefix("v:") {
            let member: Value = serde_json::from_str(member).ok()?;
            (!desired.as_array()?.contains(&member)).then(|| path.to_owned())
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "n", "creationTimestamp": null}, "data": data})
    }

    fn live(object: Value, owned: Value) -> Value {
        let mut object = object;
        object["metadata"]["uid"] = json!("u");
        object["metadata"]["resourceVersion"] = json!("7");
        object["metadata"]["annotations"] = json!({"added-by": "someone else"});
        object["metadata"]["managedFields"] = json!([
            {"manager": "flotilla", "operation": "Apply", "fieldsV1": owned},
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {"f:other": {}}}}
        ]);
        object
    }

    #[test]
    fn first_differences() {
        let owned_a = json!({"f:data": {"f:a": {}}});
        let ports = json!({
            "metadata": {"managedFields": [{"manager": "flotilla", "operation": "Apply", "fieldsV1": {"f:spec": {
                "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
                "f:finalizers": {"v:\"a\"": {}}
            }}}]},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "finalizers": ["a"]},
            "status": {"loadBalancer": {}}
        });
        let cases = [
            // (desired, live, first difference)
            (
                config_map(json!({"a": "1"})),
                live(config_map(json!({"a": "1", "other": "x"})), owned_a.clone()),
                None,
            ),
            (
                config_map(json!({"a": "2"})),
                live(config_map(json!({"a": "1"})), owned_a.clone()),
                Some("/data/a"),
            ),
            (
                config_map(json!({"a": "1", "b": "2"})),
                live(config_map(json!({"a": "1"})), owned_a.clone()),
                Some("/data/b"),
            ),
            (
                config_map(json!({})),
                live(config_map(json!({"a": "1"})), owned_a),
                Some("/data/a"),
            ),
            (
                json!({"kind": "Deployment", "spec": {"replicas": 2, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"limits": {"cpu": "0.5", "memory": "1Gi"}}}]}}}}),
                json!({"kind": "Deployment", "spec": {"replicas": 2, "strategy": {}, "template": {"spec": {"containers": [
                    {"name": "c", "imagePullPolicy": "Always",
                     "resources": {"limits": {"cpu": "500m", "memory": "1073741824"}}}]}}}}),
                None,
            ),
            (
                json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}}),
                json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}),
                Some("/spec/template/spec/containers"),
            ),
            (
                json!({"kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": "8080"}]}}),
                json!({"kind": "Service", "spec": {"ports": [{"port": 80.0, "targetPort": 8080}]}}),
                None,
            ),
            (
                json!({"kind": "ConfigMap", "data": {"size": "1k"}}),
                json!({"kind": "ConfigMap", "data": {"size": "1000"}}),
                Some("/data/size"),
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"p": "hi"}}),
                live(
                    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {}, "data": {"p": "aGk="}}),
                    json!({"f:data": {"f:p": {}}}),
                ),
                None,
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"p": "ho"}}),
                json!({"apiVersion": "v1", "kind": "Secret", "data": {"p": "aGk="}}),
                Some("/data/p"),
            ),
            // Fields another manager set, or we set by Update, do not count.
            (
                config_map(json!({"a": "1"})),
                {
                    let mut l = live(
                        config_map(json!({"a": "1", "b": "2"})),
                        json!({"f:data": {"f:a": {}}}),
                    );
                    l["metadata"]["managedFields"][1] = json!({"manager": "flotilla", "operation": "Update", "fieldsV1": {"f:data": {"f:b": {}}}});
                    l
                },
                None,
            ),
            // Lists: by key and set member; a removed list item or member counts.
            (
                json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "finalizers": ["a"]}}),
                ports.clone(),
                None,
            ),
            (
                json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "finalizers": []}}),
                ports.clone(),
                Some("/spec/finalizers"),
            ),
            (
                json!({"spec": {"ports": [{"port": 81, "protocol": "TCP"}], "finalizers": ["a"]}}),
                ports.clone(),
                Some("/spec/ports/0/port"),
            ),
            (
                json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "finalizers": ["a"]}}),
                {
                    let mut p = ports.clone();
                    p["spec"]["ports"] = json!([{"port": 80, "protocol": "TCP"}, {"port": 81}]);
                    p
                },
                Some("/spec/ports"),
            ),
            // Empty and null desired values match absent ones; numbers by value.
            (
                json!({"metadata": {"labels": {}}, "data": null, "spec": {"items": [], "n": 1.0}}),
                json!({"metadata": {}, "spec": {"n": 1}}),
                None,
            ),
            (json!({"data": {"a": "1"}}), json!({}), Some("/data")),
            (json!("not an object"), json!({}), Some("")),
        ];
        for (index, (desired, live, expected)) in cases.into_iter().enumerate() {
            assert_eq!(
                first_difference(&desired, &live, "flotilla").as_deref(),
                expected,
                "case {index}"
            );
        }
    }

    #[test]
    fn every_difference_and_the_compared_sides() {
        let desired = json!({"kind": "ConfigMap", "metadata": {"name": "c", "uid": "x"},
                             "data": {"a": "1", "b": "2", "c": "3"}});
        let live = json!({"kind": "ConfigMap", "metadata": {"name": "c", "uid": "u", "resourceVersion": "7"},
                          "data": {"a": "1", "b": "9", "other": "x"}});
        assert_eq!(
            differences(&desired, &live, "flotilla"),
            ["/data/b", "/data/c"]
        );
        let (want, have) = compared(&desired, &live);
        assert_eq!(
            want,
            json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2", "c": "3"}})
        );
        assert_eq!(
            have,
            json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "9"}})
        );
    }

    /// The compare and `ApplyOutOfSyncOnly` both take the live values of ignored fields
    /// (`ignoreDifferences`, by pointer, jq path or field manager) before asking
    /// [`first_difference`], so ignored fields never count and the others still do.
    #[test]
    fn ignored_fields_do_not_count() {
        use crate::api::application::ResourceIgnoreDifferences;
        use crate::manifest::ObjectKey;
        use crate::sync::IgnoreDifferences;

        let key = ObjectKey {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "web:1"}]}}}});
        let scaled = {
            let mut live = desired.clone();
            live["spec"]["replicas"] = json!(5);
            live["metadata"]["managedFields"] = json!([
                {"manager": "flotilla", "operation": "Apply", "fieldsV1": {"f:spec": {"f:template": {}}}},
                {"manager": "hpa", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
            ]);
            live
        };
        let new_image = {
            let mut live = scaled.clone();
            live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:0");
            live
        };
        let cases = [
            // (ignoreDifferences, live, first difference)
            (json!([]), &scaled, Some("/spec/replicas")),
            (
                json!([{"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}]),
                &scaled,
                None,
            ),
            (
                json!([{"group": "apps", "kind": "Deployment", "jqPathExpressions": [".spec.replicas"]}]),
                &scaled,
                None,
            ),
            (
                json!([{"group": "apps", "kind": "Deployment", "managedFieldsManagers": ["hpa"]}]),
                &scaled,
                None,
            ),
            (
                json!([{"group": "apps", "kind": "StatefulSet", "jsonPointers": ["/spec/replicas"]}]),
                &scaled,
                Some("/spec/replicas"),
            ),
            (
                json!([{"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}]),
                &new_image,
                Some("/spec/template/spec/containers/0/image"),
            ),
        ];
        for (index, (rules, live, expected)) in cases.into_iter().enumerate() {
            let entries: Vec<ResourceIgnoreDifferences> =
                serde_json::from_value(rules).expect("entries");
            let ignore = IgnoreDifferences::new("ignoreDifferences", &entries, &Default::default())
                .expect("rules");
            let compared = ignore.overlay(&key, &desired, live);
            assert_eq!(
                first_difference(&compared, live, "flotilla").as_deref(),
                expected,
                "case {index}"
            );
        }
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity("500m"), Some(0.5));
        assert_eq!(quantity("2Ki"), Some(2048.0));
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("lots"), None);
    }
}

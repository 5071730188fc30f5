//! JSON merges used while rendering: a generator's template override filled in from the
//! ApplicationSet's template (Argo CD's `mergo.Merge` without override), and a rendered
//! `templatePatch` applied as a JSON merge patch (RFC 7386).

use serde_json::Value;

/// `dest` with every empty or missing field taken from `fallback`, recursively through objects.
/// Empty means null, `""`, `false`, `0`, an empty list or an empty object.
#[must_use]
pub fn fill_empty(dest: &Value, fallback: &Value) -> Value {
    match (dest, fallback) {
        (Value::Object(d), Value::Object(f)) => {
            let mut merged = f.clone();
            for (key, value) in d {
                let filled = match f.get(key) {
                    Some(fb) => fill_empty(value, fb),
                    None => value.clone(),
                };
                merged.insert(key.clone(), filled);
            }
            Value::Object(merged)
        }
        (d, f) if is_empty(d) => f.clone(),
        (d, _) => d.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Applies `patch` to `target` as a JSON merge patch: objects merge recursively, `null` removes a
/// key, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(target_map) = target {
        for (key, value) in patch_map {
            if value.is_null() {
                target_map.remove(key);
            } else {
                merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generator_template_wins_where_set_and_is_filled_elsewhere() {
        let base = json!({"metadata": {"name": "base-{{x}}", "labels": {"a": "1"}}, "spec": {"project": "p", "source": {"path": "base"}}});
        let over = json!({"metadata": {"name": "", "labels": {"b": "2"}}, "spec": {"source": {"path": "override"}}});
        assert_eq!(
            fill_empty(&over, &base),
            json!({"metadata": {"name": "base-{{x}}", "labels": {"a": "1", "b": "2"}}, "spec": {"project": "p", "source": {"path": "override"}}})
        );
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": {"b": 1, "c": 2}, "list": [1, 2], "gone": true});
        merge_patch(
            &mut target,
            &json!({"a": {"b": 9, "d": 4}, "list": [3], "gone": null, "new": "x"}),
        );
        assert_eq!(
            target,
            json!({"a": {"b": 9, "c": 2, "d": 4}, "list": [3], "new": "x"})
        );
    }
}

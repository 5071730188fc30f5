//! JSON merge patches (RFC 7386) that change exactly what was meant: a status object written so
//! that it replaces the stored one (the fields it leaves out, serialized only when set, become
//! explicit nulls, which remove what an earlier value had there), and the patch that turns one
//! object into another naming only the fields that differ (so a field the writer did not touch
//! stays as the server has it).

use serde_json::Value;

/// Makes each of `names` that `object` (a JSON object) leaves out an explicit null.
pub fn null_when_absent(object: &mut Value, names: &[&str]) {
    if let Some(map) = object.as_object_mut() {
        for name in names {
            map.entry(*name).or_insert(Value::Null);
        }
    }
}

/// The merge patch that turns `old` into `new`: each field of `new` that differs (recursing
/// into objects; an array or a scalar is replaced whole), and a null for each field of `old`
/// that `new` drops. Equal values give an empty object.
#[must_use]
pub fn difference(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = serde_json::Map::new();
            for (name, value) in new {
                match old.get(name) {
                    Some(before) if before == value => {}
                    Some(before @ Value::Object(_)) if value.is_object() => {
                        patch.insert(name.clone(), difference(before, value));
                    }
                    _ => {
                        patch.insert(name.clone(), value.clone());
                    }
                }
            }
            for name in old.keys().filter(|name| !new.contains_key(*name)) {
                patch.insert(name.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_names_become_nulls_and_present_ones_stay() {
        let mut health = json!({"status": "Healthy", "extra": 1});
        null_when_absent(&mut health, &["message", "status"]);
        assert_eq!(
            health,
            json!({"status": "Healthy", "extra": 1, "message": null})
        );
        let mut scalar = json!("Healthy");
        null_when_absent(&mut scalar, &["message"]);
        assert_eq!(scalar, json!("Healthy"));
    }

    #[test]
    fn the_difference_names_only_what_changed() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1], "gone": true});
        let new = json!({"a": 1, "b": {"c": 5, "d": 3}, "e": [1, 2], "added": "x"});
        let patch = difference(&old, &new);
        assert_eq!(
            patch,
            json!({"b": {"c": 5}, "e": [1, 2], "added": "x", "gone": null})
        );
        let mut patched = old.clone();
        crate::api::template_merge::merge_patch(&mut patched, &patch);
        assert_eq!(patched, new);
        assert_eq!(difference(&new, &new), json!({}));
    }
}

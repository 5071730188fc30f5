//! Writing a status object by JSON merge patch so that it replaces the stored one: the fields it
//! leaves out (serialized only when set) become explicit nulls, which remove what an earlier
//! value had there (RFC 7386 keeps a field the patch does not name).

use serde_json::Value;

/// Makes each of `names` that `object` (a JSON object) leaves out an explicit null.
pub fn null_when_absent(object: &mut Value, names: &[&str]) {
    if let Some(map) = object.as_object_mut() {
        for name in names {
            map.entry(*name).or_insert(Value::Null);
        }
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
}

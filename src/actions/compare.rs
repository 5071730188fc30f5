//! How one live object compares with the object a sync would apply, as `flotilla diff` and
//! `flotilla app diff` report it and the web view's object panel shows it: the Application's
//! ignore rules applied, the fields that differ, and a unified diff of the compared fields.

use serde_json::Value;

use super::unified_diff::unified;
use flotilla_core::manifest::ObjectKey;
use flotilla_core::sync::diff::{compared, differences};
use flotilla_core::sync::{FIELD_MANAGER, IgnoreDifferences};

/// How the live object `live` of `key` compares with `desired` (`ignore`'s rules applied to
/// it): the desired object as compared, the fields that differ (as JSON pointers), and the
/// unified diff of the compared fields (empty when none differs), each side passed through
/// `shown` first (the web view redacts a Secret's values there).
///
/// # Errors
/// A side cannot be written as YAML.
pub fn compare_live(
    key: &ObjectKey,
    desired: &Value,
    live: &Value,
    ignore: &IgnoreDifferences,
    shown: impl Fn(&Value) -> Value,
) -> anyhow::Result<(Value, Vec<String>, String)> {
    let name = key.to_string();
    let desired = ignore.overlay(key, desired, live);
    let changed = differences(&desired, live, FIELD_MANAGER);
    let (want, have) = compared(&shown(&desired), &shown(live));
    let text = if changed.is_empty() {
        String::new()
    } else {
        unified(
            &format!("live {name}"),
            &format!("desired {name}"),
            &yaml(&have)?,
            &yaml(&want)?,
        )
    };
    Ok((desired, changed, text))
}

/// `value` as YAML.
///
/// # Errors
/// The value cannot be written as YAML.
pub fn yaml(value: &Value) -> anyhow::Result<String> {
    Ok(serde_saphyr::to_string(value)?)
}

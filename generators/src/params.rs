//! Parameter sets: what a generator produces and a template consumes. Ordered maps, so every
//! expansion is deterministic; keys and values are shared, so copying a set (a matrix pairs every
//! set of one child with every set of the other) copies pointers, never values.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One parameter set. In fasttemplate mode every value is a string under a dotted key
/// (`path.basename`); in goTemplate mode values keep their structure (`path: {basename: ..}`).
/// Cloning a set, or copying entries between sets, shares the values instead of copying them.
#[derive(Clone, Default, PartialEq)]
pub struct Params {
    entries: BTreeMap<Arc<str>, Arc<SharedValue>>,
}

/// A parameter value, shared by every set that holds it, with the Go-template engine's
/// conversion of it made at most once (per `missingkey` setting).
pub(crate) struct SharedValue {
    value: Value,
    converted: [OnceLock<minijinja::Value>; 2],
}

impl SharedValue {
    fn new(value: Value) -> Arc<Self> {
        Arc::new(Self {
            value,
            converted: [OnceLock::new(), OnceLock::new()],
        })
    }

    /// The value converted by `convert` for the Go-template engine, made on first use and kept
    /// for every set sharing it; `missing_key_error` selects the conversion.
    pub(crate) fn converted(
        &self,
        missing_key_error: bool,
        convert: impl FnOnce(&Value) -> minijinja::Value,
    ) -> minijinja::Value {
        self.converted[usize::from(missing_key_error)]
            .get_or_init(|| convert(&self.value))
            .clone()
    }
}

impl PartialEq for SharedValue {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Params {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The value under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key).map(|shared| &shared.value)
    }

    /// Sets `key` to `value`, replacing what was there.
    pub fn insert(&mut self, key: String, value: Value) {
        self.entries.insert(key.into(), SharedValue::new(value));
    }

    /// Whether the set has no parameter.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many parameters the set has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The parameters in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries
            .iter()
            .map(|(key, shared)| (&**key, &shared.value))
    }

    /// Sets every parameter of `other` here, sharing its values; they replace what was there.
    pub fn overwrite_with(&mut self, other: &Params) {
        for (key, shared) in &other.entries {
            self.entries.insert(key.clone(), shared.clone());
        }
    }

    /// The parameters in key order, with their shared values (for the Go-template engine).
    pub(crate) fn shared(&self) -> impl Iterator<Item = (&Arc<str>, &SharedValue)> {
        self.entries.iter().map(|(key, shared)| (key, &**shared))
    }
}

impl std::ops::Index<&str> for Params {
    type Output = Value;

    /// The value under `key`.
    ///
    /// # Panics
    /// When there is none, as a map does.
    fn index(&self, key: &str) -> &Value {
        self.get(key)
            .unwrap_or_else(|| panic!("no parameter {key:?}"))
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::<String, Value>::deserialize(deserializer).map(Self::from_iter)
    }
}

impl FromIterator<(String, Value)> for Params {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(entries: I) -> Self {
        let mut params = Self::new();
        params.extend(entries);
        params
    }
}

impl<const N: usize> From<[(String, Value); N]> for Params {
    fn from(entries: [(String, Value); N]) -> Self {
        Self::from_iter(entries)
    }
}

impl Extend<(String, Value)> for Params {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, entries: I) {
        for (key, value) in entries {
            self.insert(key, value);
        }
    }
}

impl IntoIterator for Params {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    /// The parameters in key order; a value still shared with another set is copied.
    fn into_iter(self) -> Self::IntoIter {
        self.entries
            .into_iter()
            .map(|(key, shared)| {
                let value = Arc::try_unwrap(shared)
                    .map_or_else(|shared| shared.value.clone(), |own| own.value);
                (key.to_string(), value)
            })
            .collect::<Vec<_>>()
            .into_iter()
    }
}

/// Argo CD's name normalisation (`nameNormalized`, `path.basenameNormalized`, `normalize`):
/// lower case, every character outside `[-a-z0-9.]` becomes `-`, at most 253 characters, leading
/// and trailing `-` and `.` trimmed.
#[must_use]
pub fn normalize_name(name: &str) -> String {
    let mapped: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(253)
        .collect();
    mapped.trim_matches(|c| c == '-' || c == '.').to_string()
}

/// Renders a scalar the way Go's `fmt.Sprintf("%v")` prints a decoded JSON/YAML value, as Argo CD
/// does when it flattens parameters: `true`, `1`, `1.5`, `1e+06` (numbers are float64 in Go),
/// strings as they are, `null` as `<nil>`. Containers are rendered as compact JSON.
#[must_use]
pub fn format_scalar(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), format_go_float),
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

/// Go's `%v` for a float64: the shortest representation, in exponent form (`1e+06`,
/// `1.5e-05`) when the exponent is below -4 or at least 6.
fn format_go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if f != 0.0 && !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    } else {
        format!("{f}")
    }
}

/// Flattens parameters to dotted string keys, as Argo CD does for fasttemplate parameters and
/// for selectors: nested maps join their keys with `.`, list items use their index (`a.0`),
/// empty maps and lists vanish, scalars are rendered by [`format_scalar`].
#[must_use]
pub fn flatten(params: &Params) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (key, value) in params.iter() {
        flatten_into(key, value, &mut out);
    }
    out
}

fn flatten_into(key: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                flatten_into(&format!("{key}.{k}"), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten_into(&format!("{key}.{i}"), v, out);
            }
        }
        scalar => {
            out.insert(key.to_string(), format_scalar(scalar));
        }
    }
}

/// Deep-merges `overlay` into `base`: maps present on both sides are merged key by key, every
/// other value of `overlay` replaces the one in `base` (and is shared with `overlay`).
pub fn deep_merge(base: &mut Params, overlay: &Params) {
    for (key, incoming) in &overlay.entries {
        match (base.entries.get_mut(key), &incoming.value) {
            (Some(existing), Value::Object(incoming)) if existing.value.is_object() => {
                let mut merged = existing.value.clone();
                if let Value::Object(merged) = &mut merged {
                    merge_objects(merged, incoming);
                }
                *existing = SharedValue::new(merged);
            }
            _ => {
                base.entries.insert(key.clone(), incoming.clone());
            }
        }
    }
}

fn merge_objects(base: &mut Map<String, Value>, overlay: &Map<String, Value>) {
    for (key, value) in overlay {
        match (base.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                merge_objects(existing, incoming)
            }
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Params {
        serde_json::from_value(value).expect("test params are an object")
    }

    #[test]
    fn scalars_print_like_go() {
        let cases = [
            (json!(null), "<nil>"),
            (json!(true), "true"),
            (json!(1), "1"),
            (json!(1.5), "1.5"),
            (json!(-3), "-3"),
            (json!(0), "0"),
            (json!(100_000), "100000"),
            (json!(1_000_000), "1e+06"),
            (json!(1_382_985.12), "1.38298512e+06"),
            (json!(0.0001), "0.0001"),
            (json!(0.000_015), "1.5e-05"),
            (json!("text"), "text"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_scalar(&value), expected, "{value}");
        }
    }

    #[test]
    fn flatten_joins_keys_and_indexes_lists() {
        let p = params(json!({
            "a": {"b": "x", "c": [1, {"d": false}], "empty": {}},
            "n": null,
        }));
        let expected: BTreeMap<String, String> = [
            ("a.b", "x"),
            ("a.c.0", "1"),
            ("a.c.1.d", "false"),
            ("n", "<nil>"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(flatten(&p), expected);
    }

    #[test]
    fn deep_merge_merges_maps_and_overrides_the_rest() {
        let mut base = params(json!({"m": {"a": 1, "b": 2}, "s": "base", "keep": true}));
        deep_merge(
            &mut base,
            &params(json!({"m": {"b": 3, "c": 4}, "s": "overlay"})),
        );
        assert_eq!(
            base,
            params(json!({"m": {"a": 1, "b": 3, "c": 4}, "s": "overlay", "keep": true}))
        );
    }

    #[test]
    fn copies_share_values_and_their_conversion() {
        let first = params(json!({"m": {"x": 1}, "s": "a"}));
        let mut second = params(json!({"s": "b"}));
        second.overwrite_with(&first);
        assert!(Arc::ptr_eq(&first.entries["m"], &second.entries["m"]));
        assert_eq!(second, first);
        let conversions = std::cell::Cell::new(0);
        let convert = |value: &Value| {
            conversions.set(conversions.get() + 1);
            minijinja::Value::from(value.to_string())
        };
        for set in [&first, &second, &first.clone()] {
            let (_, shared) = set.shared().next().unwrap();
            assert_eq!(shared.converted(true, convert).to_string(), r#"{"x":1}"#);
        }
        assert_eq!(conversions.get(), 1, "converted once, shared by every copy");
        first.shared().next().unwrap().1.converted(false, convert);
        assert_eq!(
            conversions.get(),
            2,
            "each missingkey setting has its own conversion"
        );
    }

    #[test]
    fn normalize_matches_argo_cd() {
        assert_eq!(normalize_name("My_Cluster.EU/1"), "my-cluster.eu-1");
        assert_eq!(normalize_name("--in-cluster.."), "in-cluster");
        assert_eq!(normalize_name(&"a".repeat(300)).len(), 253);
    }
}

//! Parameters as the Go-template engine sees them: every map of a parameter set becomes a
//! [`ParamMap`], which implements Go's `missingkey` option in the lookup itself. With
//! `missingkey=error`, looking up a key the map does not have fails right there, wherever the
//! lookup is used (printed, piped into a function, tested by `if`), as Go's `text/template` does;
//! otherwise the lookup gives a missing value.

use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectExt, ObjectRepr, Value};
use minijinja::{Error, ErrorKind};

use super::go_format::go_quote;
use super::go_syntax::ROOT;
use crate::params::Params;

/// One map of parameters, its entries sorted by key (Go's map order): a sorted vector, searched
/// by comparing strings, is much cheaper to build for every parameter set than a tree of values.
#[derive(Debug)]
pub(crate) struct ParamMap {
    entries: Vec<(Arc<str>, Value)>,
    missing_key_error: bool,
}

impl ParamMap {
    /// The root map of `params`: `missing_key_error` is `missingkey=error`.
    /// Each value is converted once and shared by every set holding it.
    fn root(params: &Params, missing_key_error: bool) -> Value {
        Self::value(
            params.shared().map(|(key, shared)| {
                let value = shared.converted(missing_key_error, |json| {
                    json_value(json, missing_key_error)
                });
                (Arc::clone(key), value)
            }),
            missing_key_error,
        )
    }

    /// The context a render starts from: the root map of `params` as [`ROOT`], alone.
    pub(crate) fn context(params: &Params, missing_key_error: bool) -> Value {
        Value::from_object(Context {
            root: Self::root(params, missing_key_error),
        })
    }

    fn value(entries: impl Iterator<Item = (Arc<str>, Value)>, missing_key_error: bool) -> Value {
        let mut entries: Vec<(Arc<str>, Value)> = entries.collect();
        // Stable and linear on sorted input (a parameter set's keys already are).
        entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        Value::from_object(Self {
            entries,
            missing_key_error,
        })
    }

    /// The value under `key` (a string), if any.
    fn lookup(&self, key: &Value) -> Option<&Value> {
        let key = key.as_str()?;
        self.entries
            .binary_search_by(|(name, _)| (**name).cmp(key))
            .ok()
            .map(|index| &self.entries[index].1)
    }

    /// The value under `key`, `None` when there is none, whatever `missingkey` says: for
    /// functions that look keys up themselves (`index`, `hasKey`, `dig`).
    pub(crate) fn entry(map: &Value, key: &Value) -> Option<Value> {
        match map.downcast_object_ref::<Self>() {
            Some(params) => params.lookup(key).cloned(),
            None => map.get_item(key).ok().filter(|value| !value.is_undefined()),
        }
    }
}

impl Object for ParamMap {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match self.lookup(key) {
            Some(value) => Some(value.clone()),
            // An invalid value: the engine fails the lookup with this error.
            None if self.missing_key_error => Some(Value::from(Error::new(
                ErrorKind::InvalidOperation,
                format!("map has no entry for key {}", go_quote(&key.to_string())),
            ))),
            None => None,
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_rev_key_value_enumerator(|this| {
            Box::new(
                this.entries
                    .iter()
                    .map(|(key, value)| (Value::from(Arc::clone(key)), value.clone())),
            )
        })
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A render's context: [`ROOT`] and nothing else. Every name a template loads, each function's
/// too, is looked up in the context first; comparing one string is much cheaper than hashing it
/// for a one-entry map.
#[derive(Debug)]
struct Context {
    root: Value,
}

impl Object for Context {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        (key.as_str() == Some(ROOT)).then(|| self.root.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(&[ROOT])
    }
}

/// Converts a parameter value directly (much faster than going through serde).
fn json_value(json: &serde_json::Value, missing_key_error: bool) -> Value {
    match json {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        // Go decodes every JSON number into a float64, and prints it as one.
        serde_json::Value::Number(n) => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|item| json_value(item, missing_key_error))
            .collect(),
        serde_json::Value::Object(map) => ParamMap::value(
            map.iter().map(|(key, value)| {
                (
                    Arc::from(key.as_str()),
                    json_value(value, missing_key_error),
                )
            }),
            missing_key_error,
        ),
    }
}

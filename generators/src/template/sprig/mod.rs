//! The functions a goTemplate may call, as Argo CD's template engine offers them: Go's builtins
//! (`index`, `printf`, `eq`, `len`, …), sprig's whole function map but `env`, `expandenv` and
//! `getHostByName`, and Argo CD's own `normalize`, `slugify`, `toYaml`, `fromYaml` and
//! `fromYamlArray`. Every function takes Go's argument order (a piped value is the last argument)
//! and prints its result as Go does. One themed file per group; this file holds the registry and
//! the argument conversions they share.

mod argo;
mod builtins;
mod certs;
mod convert;
mod crypto;
mod dates;
mod defaults;
mod dicts;
mod encoding;
mod keys;
mod lists;
mod math;
mod paths;
mod random;
mod reflection;
mod regex;
mod semver;
mod serial;
mod strings;
mod urls;
mod yaml;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

use super::go_format::go_string;
pub(crate) use builtins::{RANGE_PAIRS, RANGE_VALUES, VARIABLE};
pub(crate) use strings::truncate;

/// Prefix of the engine's internal helpers, which templates cannot name.
const INTERNAL_PREFIX: &str = "flotilla_";

/// Every function and internal helper by name, read from an environment they are registered in.
static FUNCTIONS: LazyLock<BTreeMap<String, Value>> = LazyLock::new(|| {
    let mut env = Environment::empty();
    register(&mut env);
    env.globals()
        .map(|(name, function)| (name.to_string(), function.clone()))
        .collect()
});

/// Whether `name` is a function templates may call (`and`, `or` and `not` are translated to
/// operators instead).
pub(crate) fn is_function(name: &str) -> bool {
    !name.starts_with(INTERNAL_PREFIX) && FUNCTIONS.contains_key(name)
}

/// Adds to `env` the functions and helpers translated `source` may call: every identifier of it
/// that names one (a name inside a string literal only adds a function that goes unused). An
/// environment holding a few functions finds each faster than one holding all of them.
pub(crate) fn add_used(env: &mut Environment<'static>, source: &str) {
    let identifiers = source.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    for name in identifiers {
        if let Some((name, function)) = FUNCTIONS.get_key_value(name) {
            env.add_global(name.clone(), function.clone());
        }
    }
}

/// Registers every function and the internal helpers on `env`.
pub(crate) fn register(env: &mut Environment<'static>) {
    builtins::register(env);
    strings::register(env);
    convert::register(env);
    math::register(env);
    defaults::register(env);
    reflection::register(env);
    paths::register(env);
    random::register(env);
    encoding::register(env);
    crypto::register(env);
    certs::register(env);
    serial::register(env);
    dicts::register(env);
    lists::register(env);
    regex::register(env);
    semver::register(env);
    urls::register(env);
    dates::register(env);
    yaml::register(env);
    argo::register(env);
}

/// An error of function `function`, in its words.
pub(crate) fn fail(function: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("{function}: {message}"),
    )
}

/// Whether `value` is Go's nil (or a missing key).
pub(crate) fn is_nil(value: &Value) -> bool {
    matches!(value.kind(), ValueKind::Undefined | ValueKind::None)
}

/// A string parameter: nil and missing values are `""` (Go's zero value), other kinds are errors.
pub(crate) fn string_arg<'a>(function: &str, value: &'a Value) -> Result<Cow<'a, str>, Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(Cow::Borrowed("")),
        ValueKind::String => Ok(Cow::Borrowed(value.as_str().unwrap_or_default())),
        kind => Err(fail(
            function,
            format!(
                "expected a string argument, got {kind} {}",
                go_string(value)
            ),
        )),
    }
}

/// An integer parameter: integers, or floats without a fractional part (JSON numbers).
pub(crate) fn int_arg(function: &str, value: &Value) -> Result<i64, Error> {
    if let Some(n) = value.as_i64() {
        return Ok(n);
    }
    match f64::try_from(value.clone()) {
        #[allow(clippy::cast_possible_truncation)]
        Ok(f) if value.kind() == ValueKind::Number && f.fract() == 0.0 && f.abs() < 9e15 => {
            Ok(f as i64)
        }
        _ => Err(fail(
            function,
            format!(
                "expected an integer argument, got {} {}",
                value.kind(),
                go_string(value)
            ),
        )),
    }
}

/// A count or position parameter: an integer that is not negative.
pub(crate) fn usize_arg(function: &str, value: &Value) -> Result<usize, Error> {
    let n = int_arg(function, value)?;
    usize::try_from(n).map_err(|_| fail(function, format!("negative count {n}")))
}

/// sprig's `strval`: strings as they are, anything else as Go's `%v` prints it.
pub(crate) fn strval(value: &Value) -> String {
    match value.as_str() {
        Some(text) => text.to_string(),
        None => go_string(value),
    }
}

/// The items of a list (nil is empty); anything else is an error naming `function`.
pub(crate) fn list_arg(function: &str, value: &Value) -> Result<Vec<Value>, Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(Vec::new()),
        ValueKind::Seq | ValueKind::Iterable => Ok(value.try_iter()?.collect()),
        kind => Err(fail(
            function,
            format!("cannot find {function} on type {kind}"),
        )),
    }
}

/// The entries of a map, keys in Go's printing order (sorted); anything else is an error.
pub(crate) fn map_arg(function: &str, value: &Value) -> Result<Vec<(String, Value)>, Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(Vec::new()),
        ValueKind::Map => {
            let mut entries: Vec<(String, Value)> = value
                .try_iter()?
                .map(|key| {
                    let entry = value.get_item(&key).unwrap_or_default();
                    (strval(&key), entry)
                })
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(entries)
        }
        kind => Err(fail(
            function,
            format!("expected a map, got {kind} {}", go_string(value)),
        )),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Renders a Go template with a few parameters, for the table tests of each function group.

    use serde_json::json;

    use crate::params::Params;
    use crate::template::{Renderer, TemplateMode};

    /// Renders `text` as a goTemplate with the parameters every table test shares.
    pub(crate) fn render(text: &str) -> Result<String, String> {
        let params: Params = serde_json::from_value(json!({
            "name": "Guestbook",
            "n": 3,
            "f": 2.5,
            "big": 1_000_000,
            "items": ["b", "a", "c"],
            "map": {"b": 2, "a": "x"},
            "empty": "",
            "nothing": null,
        }))
        .expect("params");
        Renderer::new(TemplateMode::Go {
            missing_key_error: false,
        })
        .render_str("f", text, &params)
        .map_err(|error| error.message)
    }

    /// Asserts every `(template, expected)` renders as expected.
    pub(crate) fn check(cases: &[(&str, &str)]) {
        for (text, expected) in cases {
            match render(text) {
                Ok(rendered) => assert_eq!(rendered, *expected, "{text}"),
                Err(error) => panic!("{text}: {error}"),
            }
        }
    }

    /// Asserts every `(template, part of the error)` fails with that error.
    pub(crate) fn check_errors(cases: &[(&str, &str)]) {
        for (text, expected) in cases {
            match render(text) {
                Ok(rendered) => panic!("{text}: rendered {rendered:?}, expected an error"),
                Err(error) => assert!(error.contains(expected), "{text}: {error}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_of_argo_cds_map_is_registered() {
        // sprig's TxtFuncMap without env, expandenv and getHostByName, Go's builtins and Argo CD's
        // additions.
        let expected = include_str!("function_names.txt");
        // `and`, `or` and `not` are operators of the translation, not registered functions.
        let missing: Vec<&str> = expected
            .split_whitespace()
            .filter(|name| !["and", "or", "not"].contains(name) && !is_function(name))
            .collect();
        assert!(missing.is_empty(), "not registered: {missing:?}");
        for name in ["env", "expandenv", "getHostByName"] {
            assert!(!is_function(name), "{name} must not be offered");
        }
    }
}

//! The functions a goTemplate may call: Go's builtins (`index`, `printf`, `eq`, `len`, …), the sprig
//! functions ApplicationSets use, and Argo CD's `normalize`/`slugify`, all registered with Go's
//! argument order (a piped value is the last argument). Also the engine's internal helpers.

use std::borrow::Cow;

use base64::Engine as _;
use minijinja::value::{Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

use super::go_format::{go_quote, go_string, sprintf};
use super::go_params::ParamMap;
use crate::params::normalize_name;

/// Functions a template may name. `and`, `or` and `not` are translated to operators instead.
pub(crate) const FUNCTIONS: &[&str] = &[
    "b64dec",
    "b64enc",
    "contains",
    "default",
    "dict",
    "dig",
    "empty",
    "eq",
    "ge",
    "gt",
    "hasKey",
    "hasPrefix",
    "hasSuffix",
    "index",
    "join",
    "le",
    "len",
    "list",
    "lower",
    "lt",
    "ne",
    "normalize",
    "printf",
    "quote",
    "replace",
    "slugify",
    "splitList",
    "ternary",
    "title",
    "toJson",
    "toString",
    "toYaml",
    "trim",
    "trunc",
    "upper",
];

/// Internal helper: the values a `range` visits (map values in key order).
pub(crate) const RANGE_VALUES: &str = "flotilla_range_values";
/// Internal helper: `[key or index, value]` pairs for `range $k, $v := …`.
pub(crate) const RANGE_PAIRS: &str = "flotilla_range_pairs";

/// Whether `name` is a function templates may call.
pub(crate) fn is_function(name: &str) -> bool {
    FUNCTIONS.binary_search(&name).is_ok()
}

/// Registers every function of [`FUNCTIONS`] and the internal helpers on `env`.
pub(crate) fn register(env: &mut Environment<'static>) {
    register_strings(env);
    register_data(env);
    register_comparisons(env);
    env.add_function(RANGE_VALUES, range_values);
    env.add_function(RANGE_PAIRS, range_pairs);
}

fn fail(message: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, message)
}

/// A string parameter: nil and missing values are `""` (Go's zero value), other kinds are errors.
fn string_arg<'a>(function: &str, value: &'a Value) -> Result<Cow<'a, str>, Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(Cow::Borrowed("")),
        ValueKind::String => Ok(Cow::Borrowed(value.as_str().unwrap_or_default())),
        kind => Err(fail(format!(
            "{function}: expected a string argument, got {kind} {}",
            go_string(value)
        ))),
    }
}

/// An integer parameter: integers, or floats without a fractional part (JSON numbers).
fn int_arg(function: &str, value: &Value) -> Result<i64, Error> {
    if let Some(n) = value.as_i64() {
        return Ok(n);
    }
    match f64::try_from(value.clone()) {
        #[allow(clippy::cast_possible_truncation)]
        Ok(f) if value.kind() == ValueKind::Number && f.fract() == 0.0 && f.abs() < 9e15 => {
            Ok(f as i64)
        }
        _ => Err(fail(format!(
            "{function}: expected an integer argument, got {} {}",
            value.kind(),
            go_string(value)
        ))),
    }
}

fn register_text(env: &mut Environment<'static>, name: &'static str, f: fn(&str) -> String) {
    env.add_function(name, move |value: Value| {
        Ok::<_, Error>(Value::from(f(&string_arg(name, &value)?)))
    });
}

fn register_text_test(
    env: &mut Environment<'static>,
    name: &'static str,
    f: fn(&str, &str) -> bool,
) {
    env.add_function(name, move |needle: Value, text: Value| {
        Ok::<_, Error>(Value::from(f(
            &string_arg(name, &text)?,
            &string_arg(name, &needle)?,
        )))
    });
}

fn register_strings(env: &mut Environment<'static>) {
    register_text(env, "lower", str::to_lowercase);
    register_text(env, "upper", str::to_uppercase);
    register_text(env, "trim", |s| s.trim().to_string());
    register_text(env, "title", title);
    register_text(env, "normalize", normalize_name);
    register_text(env, "b64enc", |s| {
        base64::engine::general_purpose::STANDARD.encode(s)
    });
    register_text_test(env, "contains", |text, needle| text.contains(needle));
    register_text_test(env, "hasPrefix", |text, prefix| text.starts_with(prefix));
    register_text_test(env, "hasSuffix", |text, suffix| text.ends_with(suffix));
    env.add_function("b64dec", |value: Value| {
        let text = string_arg("b64dec", &value)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|error| fail(format!("b64dec: {error}")))?;
        String::from_utf8(bytes)
            .map(Value::from)
            .map_err(|_| fail("b64dec: the decoded bytes are not UTF-8".into()))
    });
    env.add_function("trunc", |length: Value, value: Value| {
        let (length, text) = (int_arg("trunc", &length)?, string_arg("trunc", &value)?);
        Ok::<_, Error>(Value::from(truncate(&text, length)))
    });
    env.add_function("replace", |old: Value, new: Value, value: Value| {
        let text = string_arg("replace", &value)?;
        Ok::<_, Error>(Value::from(text.replace(
            &*string_arg("replace", &old)?,
            &string_arg("replace", &new)?,
        )))
    });
    env.add_function("splitList", |separator: Value, value: Value| {
        let (separator, text) = (
            string_arg("splitList", &separator)?,
            string_arg("splitList", &value)?,
        );
        Ok::<_, Error>(Value::from(
            text.split(&*separator).map(Value::from).collect::<Vec<_>>(),
        ))
    });
    env.add_function("join", |separator: Value, value: Value| {
        let separator = string_arg("join", &separator)?;
        let parts: Vec<String> = match value.kind() {
            ValueKind::Undefined | ValueKind::None => Vec::new(),
            ValueKind::Seq | ValueKind::Iterable => value
                .try_iter()?
                .filter(|item| !item.is_none() && !item.is_undefined())
                .map(|item| go_string(&item))
                .collect(),
            _ => vec![go_string(&value)],
        };
        Ok::<_, Error>(Value::from(parts.join(&*separator)))
    });
    env.add_function("quote", |values: Rest<Value>| {
        let quoted: Vec<String> = values
            .iter()
            .filter(|value| !value.is_none() && !value.is_undefined())
            .map(|value| go_quote(&go_string(value)))
            .collect();
        Value::from(quoted.join(" "))
    });
    env.add_function("toString", |value: Value| Value::from(go_string(&value)));
    env.add_function("printf", |format: Value, args: Rest<Value>| {
        Ok::<_, Error>(Value::from(sprintf(&string_arg("printf", &format)?, &args)))
    });
    env.add_function("slugify", |args: Rest<Value>| {
        let Some((name, options)) = args.split_last() else {
            return Err(fail("slugify: missing the name to slugify".into()));
        };
        let max = match options.first() {
            Some(max) => usize::try_from(int_arg("slugify", max)?)
                .map_err(|_| fail("slugify: negative maximum size".into()))?,
            None => 50,
        };
        let smart = options.get(1).is_none_or(Value::is_true);
        Ok(Value::from(slugify(
            &string_arg("slugify", name)?,
            max,
            smart,
        )))
    });
}

/// Go's (deprecated but used) `strings.Title`: the first letter of each word in upper case.
fn title(text: &str) -> String {
    let mut after_separator = true;
    text.chars()
        .map(|c| {
            let mapped = if after_separator {
                c.to_uppercase().next().unwrap_or(c)
            } else {
                c
            };
            after_separator = !(c.is_alphanumeric() || c == '_');
            mapped
        })
        .collect()
}

/// sprig `trunc`: the first `length` characters, or the last `-length` when negative.
fn truncate(text: &str, length: i64) -> String {
    let count = text.chars().count();
    let keep = usize::try_from(length.unsigned_abs()).unwrap_or(usize::MAX);
    if length >= 0 {
        text.chars().take(keep).collect()
    } else {
        text.chars().skip(count.saturating_sub(keep)).collect()
    }
}

/// Argo CD's `SlugifyName`: lower case, runs of characters outside `[a-z0-9]` become one `-`,
/// `-` trimmed at both ends, at most `max` characters, cut at the last `-` when `smart`.
fn slugify(name: &str, max: usize, smart: bool) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.len() <= max {
        return slug.to_string();
    }
    let cut = &slug[..max];
    match cut.rfind('-') {
        Some(at) if smart && at > 0 => cut[..at].to_string(),
        _ => cut.trim_end_matches('-').to_string(),
    }
}

fn register_data(env: &mut Environment<'static>) {
    env.add_function(
        "default",
        |fallback: Value, given: Rest<Value>| match given.first() {
            Some(value) if value.is_true() => value.clone(),
            _ => fallback,
        },
    );
    env.add_function("empty", |value: Value| Value::from(!value.is_true()));
    env.add_function(
        "ternary",
        |yes: Value, no: Value, condition: Value| if condition.is_true() { yes } else { no },
    );
    env.add_function("list", |values: Rest<Value>| Value::from(values.0));
    env.add_function("dict", |values: Rest<Value>| {
        let mut pairs = std::collections::BTreeMap::new();
        for pair in values.chunks(2) {
            let value = pair.get(1).cloned().unwrap_or_else(|| Value::from(""));
            pairs.insert(go_string(&pair[0]), value);
        }
        Value::from_object(pairs)
    });
    env.add_function("hasKey", |map: Value, key: Value| {
        let key = string_arg("hasKey", &key)?;
        Ok::<_, Error>(Value::from(
            map.kind() == ValueKind::Map && !lookup(&map, &key).is_undefined(),
        ))
    });
    env.add_function("dig", |args: Rest<Value>| {
        let [keys @ .., fallback, map] = args.as_slice() else {
            return Err(fail(
                "dig: needs at least one key, a default and a map".into(),
            ));
        };
        if keys.is_empty() {
            return Err(fail(
                "dig: needs at least one key, a default and a map".into(),
            ));
        }
        let mut current = map.clone();
        for key in keys {
            let key = string_arg("dig", key)?;
            current = lookup(&current, &key);
            if current.is_undefined() {
                return Ok(fallback.clone());
            }
        }
        Ok(current)
    });
    env.add_function("index", |value: Value, keys: Rest<Value>| {
        keys.iter()
            .try_fold(value, |current, key| index(&current, key))
    });
    env.add_function("len", |value: Value| match value.kind() {
        ValueKind::String => Ok(Value::from(value.as_str().unwrap_or_default().len())),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => {
            Ok(Value::from(value.len().unwrap_or(0)))
        }
        kind => Err(fail(format!("len of {kind} {}", go_string(&value)))),
    });
    env.add_function("toJson", |value: Value| {
        serde_json::to_string(&value)
            .map(Value::from)
            .map_err(|error| fail(format!("toJson: {error}")))
    });
    env.add_function("toYaml", |value: Value| {
        let yaml =
            serde_saphyr::to_string(&value).map_err(|error| fail(format!("toYaml: {error}")))?;
        Ok::<_, Error>(Value::from(yaml.strip_suffix('\n').unwrap_or(&yaml)))
    });
}

/// A map's value under `key`, undefined when it is not a map or has no such key (whatever
/// `missingkey` says: these functions handle absent keys themselves).
fn lookup(map: &Value, key: &str) -> Value {
    if map.kind() == ValueKind::Map {
        ParamMap::entry(map, &Value::from(key)).unwrap_or_default()
    } else {
        Value::UNDEFINED
    }
}

/// Go's `index`: list items by integer, map values by key (nil when absent).
fn index(value: &Value, key: &Value) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::Seq | ValueKind::Iterable => {
            let position = int_arg("index", key)?;
            let length = value.len().unwrap_or(0);
            usize::try_from(position)
                .ok()
                .filter(|&position| position < length)
                .map(|position| value.get_item_by_index(position).unwrap_or_default())
                .ok_or_else(|| fail(format!("index out of range: {position} (length {length})")))
        }
        ValueKind::Map => Ok(ParamMap::entry(value, key).unwrap_or_else(|| Value::from(()))),
        ValueKind::Undefined | ValueKind::None => {
            Err(fail("index of a missing (nil) value".into()))
        }
        kind => Err(fail(format!("can't index a {kind} ({})", go_string(value)))),
    }
}

fn register_comparisons(env: &mut Environment<'static>) {
    env.add_function("eq", |first: Value, others: Rest<Value>| {
        if others.is_empty() {
            return Err(fail("eq: missing argument for comparison".into()));
        }
        Ok(Value::from(others.contains(&first)))
    });
    env.add_function("ne", |a: Value, b: Value| Value::from(a != b));
    env.add_function("lt", |a: Value, b: Value| {
        compare("lt", &a, &b).map(|o| Value::from(o.is_lt()))
    });
    env.add_function("le", |a: Value, b: Value| {
        compare("le", &a, &b).map(|o| Value::from(o.is_le()))
    });
    env.add_function("gt", |a: Value, b: Value| {
        compare("gt", &a, &b).map(|o| Value::from(o.is_gt()))
    });
    env.add_function("ge", |a: Value, b: Value| {
        compare("ge", &a, &b).map(|o| Value::from(o.is_ge()))
    });
}

/// Orders two numbers or two strings; anything else is Go's "incompatible types" error.
fn compare(function: &str, a: &Value, b: &Value) -> Result<std::cmp::Ordering, Error> {
    match (a.kind(), b.kind()) {
        (ValueKind::Number, ValueKind::Number) | (ValueKind::String, ValueKind::String) => {
            Ok(a.cmp(b))
        }
        (left, right) => Err(fail(format!(
            "{function}: incompatible types for comparison: {left} and {right}"
        ))),
    }
}

/// The entries a `range` visits: list items, map entries in key order, `0..n` for an integer.
fn range_entries(value: &Value) -> Result<Vec<(Value, Value)>, Error> {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(Vec::new()),
        ValueKind::Seq | ValueKind::Iterable => Ok(value
            .try_iter()?
            .enumerate()
            .map(|(i, item)| (Value::from(i), item))
            .collect()),
        ValueKind::Map => {
            let mut keys: Vec<Value> = value.try_iter()?.collect();
            keys.sort();
            Ok(keys
                .into_iter()
                .map(|key| (value.get_item(&key).unwrap_or_default(), key))
                .map(|(v, k)| (k, v))
                .collect())
        }
        ValueKind::Number if value.as_i64().is_some() => {
            let count = value.as_i64().unwrap_or(0).max(0);
            Ok((0..count)
                .map(|i| (Value::from(i), Value::from(i)))
                .collect())
        }
        kind => Err(fail(format!(
            "range can't iterate over {kind} {}",
            go_string(value)
        ))),
    }
}

fn range_values(value: Value) -> Result<Value, Error> {
    if value.kind() == ValueKind::Seq {
        return Ok(value);
    }
    Ok(Value::from(
        range_entries(&value)?
            .into_iter()
            .map(|(_, v)| v)
            .collect::<Vec<_>>(),
    ))
}

fn range_pairs(value: Value) -> Result<Value, Error> {
    let pairs = range_entries(&value)?
        .into_iter()
        .map(|(k, v)| Value::from(vec![k, v]));
    Ok(Value::from(pairs.collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_list_is_sorted_and_every_function_is_registered() {
        assert!(
            FUNCTIONS.windows(2).all(|pair| pair[0] < pair[1]),
            "FUNCTIONS must stay sorted for binary search"
        );
        let mut env = Environment::empty();
        register(&mut env);
        let state = env.empty_state();
        for name in FUNCTIONS.iter().chain(&[RANGE_VALUES, RANGE_PAIRS]) {
            assert!(state.lookup(name).is_some(), "{name} is not registered");
        }
    }

    #[test]
    fn slugify_matches_argo_cd() {
        let cases = [
            ("Hello World!", 50, true, "hello-world"),
            ("--My__Cluster--", 50, true, "my-cluster"),
            ("aaaa-bbbb-cccc", 12, true, "aaaa-bbbb"),
            ("aaaa-bbbb-cccc", 12, false, "aaaa-bbbb-cc"),
            ("abcdefghij", 4, true, "abcd"),
        ];
        for (name, max, smart, expected) in cases {
            assert_eq!(slugify(name, max, smart), expected, "{name}");
        }
    }

    #[test]
    fn trunc_and_title() {
        assert_eq!(truncate("abcdef", 3), "abc");
        assert_eq!(truncate("abcdef", -2), "ef");
        assert_eq!(truncate("ab", 5), "ab");
        assert_eq!(truncate("ab", -5), "ab");
        assert_eq!(title("hello wide-world"), "Hello Wide-World");
    }
}

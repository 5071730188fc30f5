//! Go's `text/template` builtins: `index`, `len`, `slice`, the comparisons, `print`, `printf`,
//! `println`, `html`, `js`, `urlquery`, and the engine's internal `range` helpers. (`and`, `or` and
//! `not` are translated to operators.)

use minijinja::value::{Rest, Value, ValueKind};
use minijinja::{Environment, Error};

use super::super::go_format::{go_string, sprintf};
use super::super::go_params::ParamMap;
use super::{fail, int_arg, is_nil, string_arg};

/// Internal helper: the values a `range` visits (map values in key order).
pub(crate) const RANGE_VALUES: &str = "flotilla_range_values";
/// Internal helper: `[key or index, value]` pairs for `range $k, $v := …`.
pub(crate) const RANGE_PAIRS: &str = "flotilla_range_pairs";
/// Internal helper: the namespace holding a variable declared with `:=` (minijinja's
/// `namespace`), so that a `range` body can assign it.
pub(crate) const VARIABLE: &str = "flotilla_variable";

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("index", |value: Value, keys: Rest<Value>| {
        keys.iter()
            .try_fold(value, |current, key| index(&current, key))
    });
    env.add_function("len", |value: Value| match value.kind() {
        ValueKind::String => Ok(Value::from(value.as_str().unwrap_or_default().len())),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => {
            Ok(Value::from(value.len().unwrap_or(0)))
        }
        kind => Err(fail("len", format!("len of {kind} {}", go_string(&value)))),
    });
    env.add_function("slice", slice);
    env.add_function("eq", |first: Value, others: Rest<Value>| {
        if others.is_empty() {
            return Err(fail("eq", "missing argument for comparison"));
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
    env.add_function("printf", |format: Value, args: Rest<Value>| {
        Ok::<_, Error>(Value::from(sprintf(&string_arg("printf", &format)?, &args)))
    });
    env.add_function("print", |args: Rest<Value>| Value::from(sprint(&args)));
    env.add_function("println", |args: Rest<Value>| {
        let words: Vec<String> = args.iter().map(go_string).collect();
        Value::from(format!("{}\n", words.join(" ")))
    });
    env.add_function("html", |args: Rest<Value>| {
        Value::from(html_escape(&sprint(&args)))
    });
    env.add_function("js", |args: Rest<Value>| {
        Value::from(js_escape(&sprint(&args)))
    });
    env.add_function("urlquery", |args: Rest<Value>| {
        Value::from(super::urls::query_escape(&sprint(&args)))
    });
    env.add_function(RANGE_VALUES, range_values);
    env.add_function(RANGE_PAIRS, range_pairs);
    env.add_function(VARIABLE, minijinja::functions::namespace);
}

/// Go's `fmt.Sprint`: operands side by side, a space between two that are not strings.
pub(super) fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        let is_string = arg.kind() == ValueKind::String;
        if i > 0 && !is_string && args[i - 1].kind() != ValueKind::String {
            out.push(' ');
        }
        out.push_str(&go_string(arg));
    }
    out
}

/// Go's `template.HTMLEscapeString`.
fn html_escape(text: &str) -> String {
    escape(text, |c| match c {
        '<' => Some("&lt;".into()),
        '>' => Some("&gt;".into()),
        '&' => Some("&amp;".into()),
        '\'' => Some("&#39;".into()),
        '"' => Some("&#34;".into()),
        '\0' => Some("\u{FFFD}".into()),
        _ => None,
    })
}

/// Go's `template.JSEscapeString`.
fn js_escape(text: &str) -> String {
    escape(text, |c| match c {
        '\\' | '\'' | '"' => Some(format!("\\{c}")),
        '<' | '>' | '&' | '=' => Some(format!("\\u{:04X}", c as u32)),
        c if c.is_control() => Some(format!("\\u{:04X}", c as u32)),
        _ => None,
    })
}

/// `text` with each character that `replacement` names replaced.
fn escape(text: &str, replacement: impl Fn(char) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match replacement(c) {
            Some(escaped) => out.push_str(&escaped),
            None => out.push(c),
        }
    }
    out
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
                .ok_or_else(|| {
                    fail(
                        "index",
                        format!("index out of range: {position} (length {length})"),
                    )
                })
        }
        ValueKind::Map => Ok(ParamMap::entry(value, key).unwrap_or_else(|| Value::from(()))),
        ValueKind::Undefined | ValueKind::None => {
            Err(fail("index", "index of a missing (nil) value"))
        }
        kind => Err(fail(
            "index",
            format!("can't index a {kind} ({})", go_string(value)),
        )),
    }
}

/// Go's and sprig's `slice`: `slice x 1 3` is items (or bytes of a string) 1 and 2.
fn slice(value: Value, bounds: Rest<Value>) -> Result<Value, Error> {
    let length = match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().len(),
        ValueKind::Seq | ValueKind::Iterable => value.len().unwrap_or(0),
        _ if is_nil(&value) => 0,
        kind => return Err(fail("slice", format!("can't slice a {kind}"))),
    };
    if bounds.len() > 2 {
        return Err(fail("slice", "too many slice indexes"));
    }
    let start = bounds
        .first()
        .map(|b| int_arg("slice", b))
        .transpose()?
        .unwrap_or(0);
    let end = bounds.get(1).map(|b| int_arg("slice", b)).transpose()?;
    let end = end.unwrap_or(i64::try_from(length).unwrap_or(i64::MAX));
    let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
        return Err(fail("slice", "negative slice index"));
    };
    if start > end || end > length {
        return Err(fail(
            "slice",
            format!("slice bounds out of range [{start}:{end}] with length {length}"),
        ));
    }
    match value.as_str() {
        Some(text) => text
            .get(start..end)
            .map(Value::from)
            .ok_or_else(|| fail("slice", "slice splits a character")),
        None if is_nil(&value) => Ok(Value::from(Vec::<Value>::new())),
        None => Ok(Value::from(
            value
                .try_iter()?
                .skip(start)
                .take(end - start)
                .collect::<Vec<_>>(),
        )),
    }
}

/// Orders two numbers or two strings; anything else is Go's "incompatible types" error.
fn compare(function: &str, a: &Value, b: &Value) -> Result<std::cmp::Ordering, Error> {
    match (a.kind(), b.kind()) {
        (ValueKind::Number, ValueKind::Number) | (ValueKind::String, ValueKind::String) => {
            Ok(a.cmp(b))
        }
        (left, right) => Err(fail(
            function,
            format!("incompatible types for comparison: {left} and {right}"),
        )),
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
                .map(|key| {
                    let entry = value.get_item(&key).unwrap_or_default();
                    (key, entry)
                })
                .collect())
        }
        ValueKind::Number if value.as_i64().is_some() => {
            let count = value.as_i64().unwrap_or(0).max(0);
            Ok((0..count)
                .map(|i| (Value::from(i), Value::from(i)))
                .collect())
        }
        kind => Err(fail(
            "range",
            format!("range can't iterate over {kind} {}", go_string(value)),
        )),
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
    use super::super::test_support::{check, check_errors};

    #[test]
    fn builtins_print_as_go() {
        check(&[
            ("{{ index .items 1 }}", "a"),
            ("{{ index .map \"b\" }}", "2"),
            ("{{ len .items }} {{ len .name }} {{ len .map }}", "3 9 2"),
            ("{{ slice .items 1 }}", "[a c]"),
            ("{{ slice .items 0 2 }}", "[b a]"),
            ("{{ slice .name 0 5 }}", "Guest"),
            ("{{ eq .name \"x\" \"Guestbook\" }}", "true"),
            (
                "{{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1 2 }}",
                "true true true true false",
            ),
            ("{{ print \"a\" 1 2 \"b\" }}", "a1 2b"),
            ("{{ println \"a\" 1 }}", "a 1\n"),
            ("{{ printf \"%s=%d\" \"a\" 1 }}", "a=1"),
            (
                "{{ html \"<a href='x'>&\\\"\" }}",
                "&lt;a href=&#39;x&#39;&gt;&amp;&#34;",
            ),
            ("{{ js \"it's <b>\" }}", "it\\'s \\u003Cb\\u003E"),
            ("{{ urlquery \"a b&c=d/é\" }}", "a+b%26c%3Dd%2F%C3%A9"),
        ]);
        check_errors(&[
            ("{{ index .items 5 }}", "index out of range: 5"),
            ("{{ lt 1 \"a\" }}", "incompatible types for comparison"),
            ("{{ slice .items 2 1 }}", "slice bounds out of range"),
        ]);
    }
}

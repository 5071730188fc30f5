//! JSON in and out as Go's `encoding/json` does it: `toJson` (map keys sorted, `<`, `>` and `&`
//! escaped for HTML), `toRawJson` (not escaped), `toPrettyJson` (two-space indent), `fromJson`,
//! their `must*` twins, and the conversion of a parsed document into template values (numbers
//! are float64, maps are [`Dict`]s), which `fromYaml` shares.

use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error};

use super::super::go_format::{QuoteStyle, quote};
use super::dicts::Dict;
use super::{fail, string_arg, strval};

/// How [`write_json`] lays a document out.
#[derive(Clone, Copy)]
struct Style {
    html_escape: bool,
    pretty: bool,
}

pub(super) fn register(env: &mut Environment<'static>) {
    let writers = [
        (
            "toJson",
            "mustToJson",
            Style {
                html_escape: true,
                pretty: false,
            },
        ),
        (
            "toRawJson",
            "mustToRawJson",
            Style {
                html_escape: false,
                pretty: false,
            },
        ),
        (
            "toPrettyJson",
            "mustToPrettyJson",
            Style {
                html_escape: true,
                pretty: true,
            },
        ),
    ];
    for (name, must, style) in writers {
        for registered in [name, must] {
            env.add_function(registered, move |value: Value| {
                let mut out = String::new();
                write_json(&mut out, &value, style, 0);
                Value::from(out)
            });
        }
    }
    env.add_function("fromJson", |text: Value| {
        Ok::<_, Error>(
            parse_json(&string_arg("fromJson", &text)?).unwrap_or_else(|_| Value::from(())),
        )
    });
    env.add_function("mustFromJson", |text: Value| {
        parse_json(&string_arg("mustFromJson", &text)?).map_err(|error| fail("mustFromJson", error))
    });
}

fn parse_json(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<serde_json::Value>(text).map(|document| document_value(&document))
}

/// A parsed document as template values, as Go decodes one into `interface{}`.
pub(super) fn document_value(document: &serde_json::Value) -> Value {
    match document {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => items.iter().map(document_value).collect(),
        serde_json::Value::Object(map) => {
            Dict::value(map.iter().map(|(k, v)| (k.clone(), document_value(v))))
        }
    }
}

fn write_json(out: &mut String, value: &Value, style: Style, depth: usize) {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => out.push_str(&json_number(value)),
        ValueKind::String => {
            write_string(out, value.as_str().unwrap_or_default(), style.html_escape);
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = value.try_iter().into_iter().flatten().collect();
            keys.sort_by_key(strval);
            let members = keys.into_iter().map(|key| {
                let member = value.get_item(&key).unwrap_or_default();
                (Some(strval(&key)), member)
            });
            write_members(out, ('{', '}'), members.collect(), style, depth);
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items = value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|item| (None, item));
            write_members(out, ('[', ']'), items.collect(), style, depth);
        }
        _ => write_string(out, &value.to_string(), style.html_escape),
    }
}

/// An object's members (named) or an array's items (unnamed) between `brackets`, one per line
/// when pretty; `{}` or `[]` when there are none.
fn write_members(
    out: &mut String,
    brackets: (char, char),
    members: Vec<(Option<String>, Value)>,
    style: Style,
    depth: usize,
) {
    let newline = |out: &mut String, depth: usize| {
        if style.pretty && !members.is_empty() {
            out.push('\n');
            out.push_str(&"  ".repeat(depth));
        }
    };
    out.push(brackets.0);
    for (i, (name, member)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, depth + 1);
        if let Some(name) = name {
            write_string(out, name, style.html_escape);
            out.push_str(if style.pretty { ": " } else { ":" });
        }
        write_json(out, member, style, depth + 1);
    }
    newline(out, depth);
    out.push(brackets.1);
}

/// A number as `encoding/json` writes it: integers as digits, floats in the shortest form,
/// with an exponent below 1e-6 and from 1e21 on.
pub(super) fn json_number(value: &Value) -> String {
    if let (true, Some(n)) = (value.is_integer(), value.as_i64()) {
        return n.to_string();
    }
    let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{f}")
    }
}

fn write_string(out: &mut String, text: &str, html_escape: bool) {
    out.push_str(&quote(text, QuoteStyle::Json { html: html_escape }));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;

    #[test]
    fn json_matches_encoding_json() {
        check(&[
            (
                "{{ toJson .map }} {{ toJson .items }} {{ toJson .name }}",
                "{\"a\":\"x\",\"b\":2} [\"b\",\"a\",\"c\"] \"Guestbook\"",
            ),
            (
                "{{ toJson \"<a&b>\" }} {{ toRawJson \"<a&b>\" }}",
                "\"\\u003ca\\u0026b\\u003e\" \"<a&b>\"",
            ),
            (
                "{{ toJson .f }} {{ toJson .big }} {{ toJson 1e21 }} {{ toJson .nothing }} {{ toJson (dict) }}",
                "2.5 1000000 1e+21 null {}",
            ),
            (
                "{{ toPrettyJson (dict \"a\" (list 1 2) \"b\" (dict)) }}",
                "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}",
            ),
            (
                "{{ mustToJson (list) }} {{ mustToRawJson \"&\" }} {{ mustToPrettyJson 1 }}",
                "[] \"&\" 1",
            ),
            (
                "{{ (fromJson \"{\\\"a\\\": {\\\"b\\\": 1}}\").a.b }} {{ fromJson \"oops\" }}",
                "1 <no value>",
            ),
            ("{{ (mustFromJson \"[1,2]\") }}", "[1 2]"),
        ]);
    }
}

//! YAML in and out as Argo CD's `toYaml`, `fromYaml` and `fromYamlArray` do it with
//! sigs.k8s.io/yaml: the value goes through JSON (map keys sorted, integral numbers as integers)
//! and is printed by go-yaml v2's emitter — two-space indentation, lists under a key not
//! indented, strings quoted only when plain text would read as something else (double quotes) or
//! cannot be plain (single quotes), multi-line strings as literal blocks — with the final newline
//! trimmed. (go-yaml also folds plain strings longer than 80 columns at spaces; this emitter does
//! not.)

use std::fmt::Write as _;

use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error};

use super::super::go_format::go_float;
use super::serial::document_value;
use super::{fail, string_arg, strval};

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("toYaml", |value: Value| Value::from(to_yaml(&value)));
    env.add_function("fromYaml", |text: Value| {
        let document = parse("fromYaml", &string_arg("fromYaml", &text)?)?;
        match document {
            serde_json::Value::Object(_) => Ok(document_value(&document)),
            serde_json::Value::Null => Ok(document_value(&serde_json::json!({}))),
            other => Err(fail(
                "fromYaml",
                format!("the document is not a map: {other}"),
            )),
        }
    });
    env.add_function("fromYamlArray", |text: Value| {
        let document = parse("fromYamlArray", &string_arg("fromYamlArray", &text)?)?;
        match document {
            serde_json::Value::Array(_) => Ok(document_value(&document)),
            serde_json::Value::Null => Ok(Value::from(Vec::<Value>::new())),
            other => Err(fail(
                "fromYamlArray",
                format!("the document is not a list: {other}"),
            )),
        }
    });
}

fn parse(function: &str, text: &str) -> Result<serde_json::Value, Error> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Null);
    }
    serde_saphyr::from_str(text).map_err(|error| fail(function, error))
}

/// `value` in YAML without the final newline.
pub(super) fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value.kind() {
        ValueKind::Map | ValueKind::Seq | ValueKind::Iterable if !is_empty_collection(value) => {
            write_block(&mut out, value, 0);
        }
        _ => {
            out.push_str(&inline(value, 0));
            out.push('\n');
        }
    }
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

fn is_empty_collection(value: &Value) -> bool {
    value.len() == Some(0)
}

fn entries(value: &Value) -> Vec<(String, Value)> {
    let mut entries: Vec<(String, Value)> = value
        .try_iter()
        .into_iter()
        .flatten()
        .map(|key| {
            let entry = value.get_item(&key).unwrap_or_default();
            (strval(&key), entry)
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

/// Writes a non-empty map or list whose first line starts at the cursor, at `indent`.
fn write_block(out: &mut String, value: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    if value.kind() == ValueKind::Map {
        for (i, (key, entry)) in entries(value).into_iter().enumerate() {
            if i > 0 {
                out.push_str(&pad);
            }
            out.push_str(&scalar_string(&key, true, indent));
            out.push(':');
            write_entry(out, &entry, indent, true);
        }
    } else {
        for (i, item) in value.try_iter().into_iter().flatten().enumerate() {
            if i > 0 {
                out.push_str(&pad);
            }
            out.push('-');
            write_entry(out, &item, indent, false);
        }
    }
}

/// Writes what follows `key:` or `-`: a nested block or a scalar, and the line end.
fn write_entry(out: &mut String, value: &Value, indent: usize, under_key: bool) {
    let nested = matches!(
        value.kind(),
        ValueKind::Map | ValueKind::Seq | ValueKind::Iterable
    ) && !is_empty_collection(value);
    if !nested {
        out.push(' ');
        out.push_str(&inline(value, indent + 2));
        out.push('\n');
        return;
    }
    let is_map = value.kind() == ValueKind::Map;
    if under_key {
        // A map under a key is indented; a list under a key is not (go-yaml v2).
        let inner = if is_map { indent + 2 } else { indent };
        out.push('\n');
        out.push_str(&" ".repeat(inner));
        write_block(out, value, inner);
    } else {
        out.push(' ');
        write_block(out, value, indent + 2);
    }
}

/// A scalar (or empty collection) on one line, or a literal block indented at `indent`.
fn inline(value: &Value, indent: usize) -> String {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => "null".to_string(),
        ValueKind::Bool => value.is_true().to_string(),
        ValueKind::Number => number(value),
        ValueKind::String => scalar_string(value.as_str().unwrap_or_default(), false, indent),
        ValueKind::Map => "{}".to_string(),
        ValueKind::Seq | ValueKind::Iterable => "[]".to_string(),
        _ => scalar_string(&value.to_string(), false, indent),
    }
}

/// A number after the JSON round trip: integral values (below 1e21) as integers, others in Go's
/// shortest `%g` form.
fn number(value: &Value) -> String {
    if let (true, Some(n)) = (value.is_integer(), value.as_i64()) {
        return n.to_string();
    }
    let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        go_float(f)
    }
}

/// A string as go-yaml v2 writes it: plain, single-quoted, double-quoted or a literal block.
fn scalar_string(text: &str, key: bool, indent: usize) -> String {
    let multiline = text.contains('\n');
    if multiline && !key && !text.lines().any(|line| line.ends_with([' ', '\t'])) {
        return literal(text, indent);
    }
    if multiline || text.chars().any(|c| c.is_control() && c != '\n') {
        return double_quoted(text);
    }
    if !resolves_to_string(text) {
        return double_quoted(text);
    }
    if plain_allowed(text) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

fn literal(text: &str, indent: usize) -> String {
    let trailing = text.len() - text.trim_end_matches('\n').len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let hint = if text.starts_with([' ', '\n']) {
        "2"
    } else {
        ""
    };
    let pad = " ".repeat(indent);
    let mut out = format!("|{hint}{chomp}");
    let body = text.strip_suffix('\n').unwrap_or(text);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    out
}

fn double_quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether plain `text` reads back as a string in YAML 1.1 (go-yaml v2's resolver): not null,
/// a boolean, a number, a base-60 number, a timestamp or the merge key.
fn resolves_to_string(text: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
        ".NaN", ".NAN", "<<",
    ];
    if SPECIAL.contains(&text) {
        return false;
    }
    !(is_yaml_number(text) || is_base60(text) || is_timestamp(text))
}

fn is_yaml_number(text: &str) -> bool {
    let plain = text.replace('_', "");
    let unsigned = plain.strip_prefix(['-', '+']).unwrap_or(&plain);
    if unsigned.is_empty() {
        return false;
    }
    let radix = |prefix: &str, radix: u32| {
        unsigned
            .strip_prefix(prefix)
            .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix)))
    };
    if radix("0x", 16)
        || radix("0b", 2)
        || radix("0o", 8)
        || unsigned.chars().all(|c| c.is_ascii_digit())
    {
        return true;
    }
    // `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            whole.chars().all(|c| c.is_ascii_digit())
                && fraction.chars().all(|c| c.is_ascii_digit())
                && (!whole.is_empty() || !fraction.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.chars().all(|c| c.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

/// `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?`, e.g. `1:20`.
fn is_base60(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (whole, _) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let mut parts = whole.split(':');
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && first.starts_with(|c: char| c.is_ascii_digit())
        && first.chars().all(|c| c.is_ascii_digit() || c == '_')
        && rest.iter().all(|part| {
            (1..=2).contains(&part.len())
                && part.chars().all(|c| c.is_ascii_digit())
                && (part.len() == 1 || part.as_bytes()[0] <= b'5')
        })
}

/// A date `YYYY-MM-DD`, optionally followed by a time, as YAML 1.1 timestamps start.
fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 10
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[5..7].iter().all(u8::is_ascii_digit)
        && bytes[7] == b'-'
        && bytes[8..10].iter().all(u8::is_ascii_digit)
        && (bytes.len() == 10 || matches!(bytes[10], b'T' | b't' | b' ' | b'\t'))
}

/// go-yaml's analysis of a one-line scalar: may it be written plain in block context?
fn plain_allowed(text: &str) -> bool {
    if text.starts_with([' ', '\t']) || text.ends_with([' ', '\t']) {
        return false;
    }
    if text.starts_with("---") || text.starts_with("...") {
        return false;
    }
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_space = chars.get(i + 1).is_none_or(|n| *n == ' ' || *n == '\t');
        let preceded_by_space = i > 0 && (chars[i - 1] == ' ' || chars[i - 1] == '\t');
        let indicator = if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => true,
                '?' | ':' | '-' => followed_by_space,
                _ => false,
            }
        } else {
            match c {
                ':' => followed_by_space,
                '#' => preceded_by_space,
                _ => false,
            }
        };
        if indicator {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;

    #[test]
    fn yaml_prints_as_sigs_k8s_io_yaml() {
        check(&[
            ("{{ toYaml .map }}", "a: x\nb: 2"),
            ("{{ toYaml .items }}", "- b\n- a\n- c"),
            (
                "{{ toYaml (dict \"l\" (list 1 (dict \"b\" 1 \"a\" 2)) \"m\" (dict \"k\" \"v\")) }}",
                "l:\n- 1\n- a: 2\n  b: 1\nm:\n  k: v",
            ),
            (
                "{{ toYaml (list (list 1 2) (list)) }}",
                "- - 1\n  - 2\n- []",
            ),
            (
                "{{ toYaml (dict \"e\" \"\" \"t\" \"true\" \"n\" \"1.5\" \"y\" \"yes\" \"d\" \"2024-01-02\" \"s\" \"1:20\") }}",
                "d: \"2024-01-02\"\ne: \"\"\n\"n\": \"1.5\"\ns: \"1:20\"\nt: \"true\"\n\"y\": \"yes\"",
            ),
            (
                "{{ toYaml (dict \"a\" \"- x\" \"b\" \"a: b\" \"c\" \"#x\" \"d\" \"it's\" \"e\" \"*\" \"f\" \"x #y\" \"g\" \"a-b c\") }}",
                "a: '- x'\nb: 'a: b'\nc: '#x'\nd: it's\ne: '*'\nf: 'x #y'\ng: a-b c",
            ),
            (
                "{{ toYaml (dict \"s\" \"line1\\nline2\" \"t\" \"x\\n\") }}",
                "s: |-\n  line1\n  line2\nt: |\n  x",
            ),
            (
                "{{ toYaml (dict \"f\" .f \"n\" .n \"b\" true \"z\" .nothing \"e\" (dict) \"big\" 1e21) }}",
                "b: true\nbig: 1e+21\ne: {}\nf: 2.5\n\"n\": 3\nz: null",
            ),
            ("{{ toYaml \"plain\" }}|{{ toYaml 3 }}", "plain|3"),
            // YAML 1.1, as go-yaml v2 reads it: `y` is true.
            (
                "{{ (fromYaml \"a: 1\\nb: [x, y]\").b }} {{ (fromYaml \"a: {c: d}\").a.c }}",
                "[x true] d",
            ),
            ("{{ fromYamlArray \"- 1\\n- two\" }}", "[1 two]"),
            ("{{ .map | toYaml | nindent 4 }}", "\n    a: x\n    b: 2"),
        ]);
    }
}

//! Printing values the way Go's `fmt` does (`%v`, `%q`, `printf`), so a rendered goTemplate reads
//! the same as in Argo CD: `true`, `[a b]`, `map[k:v]`, `<no value>` for a missing key.

use std::fmt::Write as _;

use minijinja::value::{Value, ValueKind};

/// What Go prints for a missing key (or nil) in an action.
pub(crate) const NO_VALUE: &str = "<no value>";

/// Go's `%v` of `value`, as `fmt.Sprint` prints it (nil inside values is `<nil>`).
pub(crate) fn go_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("<nil>"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => write_number(out, value),
        ValueKind::String => out.push_str(value.as_str().unwrap_or_default()),
        ValueKind::Map => {
            out.push_str("map[");
            for (i, key) in value.try_iter().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, &key);
                out.push(':');
                write_value(out, &value.get_item(&key).unwrap_or_default());
            }
            out.push(']');
        }
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in value.try_iter().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, &item);
            }
            out.push(']');
        }
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

/// Numbers: integers as digits, floats (every number of a parameter, as JSON numbers are
/// float64 in Go) as Go's `%v` prints them: see [`go_float`].
fn write_number(out: &mut String, value: &Value) {
    match f64::try_from(value.clone()) {
        Ok(float) if !value.is_integer() => out.push_str(&go_float(float)),
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

/// Go's `%v` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits that read back as
/// `f`, with an exponent when it is below -4 or at least 6 (`3`, `2.5`, `100000`, `1e+06`,
/// `1.234567e+06`, `1e-05`).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{fraction}e{exponent_sign}{:02}",
            exponent.abs()
        );
    }
    let point = exponent + 1;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if (point as usize) >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    };
    format!("{sign}{text}")
}

/// Which escapes [`quote`] writes besides `"`, `\\`, `\n`, `\t` and `\r`.
#[derive(Clone, Copy)]
pub(crate) enum QuoteStyle {
    /// Go's `strconv.Quote`: other control characters as `\x1b`.
    Go,
    /// A minijinja string literal: other control characters as `\u001b`.
    Jinja,
    /// `encoding/json`: control characters as `\u001b`, U+2028 and U+2029 escaped, and with
    /// `html` also `<`, `>` and `&` (`\u003c`), as `json.Marshal` does.
    Json { html: bool },
}

/// A double-quoted string, escaped in `style`.
pub(crate) fn quote(text: &str, style: QuoteStyle) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        let control =
            (c as u32) < 0x20 || (c == '\u{7f}' && !matches!(style, QuoteStyle::Json { .. }));
        match (c, style) {
            ('"', _) => out.push_str("\\\""),
            ('\\', _) => out.push_str("\\\\"),
            ('\n', _) => out.push_str("\\n"),
            ('\t', _) => out.push_str("\\t"),
            ('\r', _) => out.push_str("\\r"),
            (_, QuoteStyle::Go) if control => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            ('<' | '>' | '&', QuoteStyle::Json { html: true })
            | ('\u{2028}' | '\u{2029}', QuoteStyle::Json { .. }) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            _ if control => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            (c, _) => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.Quote`: a double-quoted string with Go escapes.
pub(crate) fn go_quote(text: &str) -> String {
    quote(text, QuoteStyle::Go)
}

/// Go's `fmt.Sprintf` for the verbs templates use: `%s %v %d %q %t %f %x %%`, with `-`/`0`
/// flags, width and precision. Mismatches print Go's `%!verb(...)` markers instead of failing.
pub(crate) fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::with_capacity(format.len() + 16);
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut left, mut zero) = (false, false);
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => left = true,
                '0' => zero = true,
                '+' | ' ' | '#' => {}
                _ => break,
            }
            chars.next();
        }
        let width = take_digits(&mut chars);
        let precision = if chars.peek() == Some(&'.') {
            chars.next();
            Some(take_digits(&mut chars).unwrap_or(0))
        } else {
            None
        };
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.next() else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        let text = format_verb(verb, arg, precision);
        pad(
            &mut out,
            &text,
            width.unwrap_or(0),
            left,
            zero && !left && verb != 's' && verb != 'q',
        );
    }
    let extra: Vec<String> = args.map(go_string).collect();
    if !extra.is_empty() {
        let _ = write!(out, "%!(EXTRA {})", extra.join(", "));
    }
    out
}

fn take_digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    let mut digits = None;
    while let Some(digit) = chars.peek().and_then(|c| c.to_digit(10)) {
        digits = Some(digits.unwrap_or(0) * 10 + digit as usize);
        chars.next();
    }
    digits
}

fn format_verb(verb: char, arg: &Value, precision: Option<usize>) -> String {
    match verb {
        's' | 'v' => {
            let text = go_string(arg);
            match (verb, precision) {
                ('s', Some(max)) => text.chars().take(max).collect(),
                _ => text,
            }
        }
        'q' => go_quote(&go_string(arg)),
        'd' => match arg.as_i64() {
            Some(n) => n.to_string(),
            None => bad_verb(verb, arg),
        },
        'f' | 'F' => match f64::try_from(arg.clone()) {
            Ok(f) if arg.kind() == ValueKind::Number => format!("{f:.*}", precision.unwrap_or(6)),
            _ => bad_verb(verb, arg),
        },
        't' if arg.kind() == ValueKind::Bool => go_string(arg),
        'x' | 'X' => {
            let hex = match (arg.as_i64(), arg.as_str()) {
                (Some(n), _) => format!("{n:x}"),
                (None, Some(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
                _ => return bad_verb(verb, arg),
            };
            if verb == 'X' { hex.to_uppercase() } else { hex }
        }
        _ => bad_verb(verb, arg),
    }
}

fn bad_verb(verb: char, arg: &Value) -> String {
    format!("%!{verb}({}={})", arg.kind(), go_string(arg))
}

fn pad(out: &mut String, text: &str, width: usize, left: bool, zero: bool) {
    let fill = width.saturating_sub(text.chars().count());
    if left {
        out.push_str(text);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if zero {
        let (sign, digits) = text
            .strip_prefix('-')
            .map_or(("", text), |rest| ("-", rest));
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(value: serde_json::Value) -> Value {
        Value::from(minijinja::value::Serde(value))
    }

    #[test]
    fn values_print_like_go() {
        let cases = [
            (json(serde_json::json!("text")), "text"),
            (json(serde_json::json!(true)), "true"),
            (json(serde_json::json!(3)), "3"),
            (json(serde_json::json!(3.0)), "3"),
            (json(serde_json::json!(2.5)), "2.5"),
            (Value::from(1_000_000.0), "1e+06"),
            (Value::from(123_456.0), "123456"),
            (Value::from(1_234_567.0), "1.234567e+06"),
            (Value::from(0.0001), "0.0001"),
            (Value::from(0.00001), "1e-05"),
            (Value::from(-2.5e-7), "-2.5e-07"),
            (Value::from(1_000_000), "1000000"),
            (json(serde_json::json!(null)), "<nil>"),
            (json(serde_json::json!(["a", 1])), "[a 1]"),
            (json(serde_json::json!({"b": 2, "a": "x"})), "map[a:x b:2]"),
        ];
        for (value, expected) in cases {
            assert_eq!(go_string(&value), expected);
        }
    }

    #[test]
    fn quote_escapes_like_strconv() {
        assert_eq!(go_quote("a\"b\\c\nd\u{1}é"), r#""a\"b\\c\nd\x01é""#);
    }

    #[test]
    fn sprintf_handles_common_verbs() {
        let s = |v: &str| Value::from(v);
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            ("%s-%s", vec![s("a"), s("b")], "a-b"),
            ("%d%%", vec![Value::from(42)], "42%"),
            ("%v", vec![json(serde_json::json!([1, 2]))], "[1 2]"),
            ("%q", vec![s("x\"y")], r#""x\"y""#),
            ("%t", vec![Value::from(false)], "false"),
            ("%.2f", vec![Value::from(1.5)], "1.50"),
            (
                "%05d|%-3s|%3s",
                vec![Value::from(-42), s("a"), s("b")],
                "-0042|a  |  b",
            ),
            ("%x", vec![Value::from(255)], "ff"),
            ("%.3s", vec![s("abcdef")], "abc"),
            ("%s %s", vec![s("a")], "a %!s(MISSING)"),
            ("%s", vec![s("a"), s("b")], "a%!(EXTRA b)"),
            ("%d", vec![s("a")], "%!d(string=a)"),
        ];
        for (format, args, expected) in cases {
            assert_eq!(sprintf(format, &args), expected, "{format}");
        }
    }
}

//! sprig's type conversions (`atoi`, `int`, `int64`, `float64`, `toDecimal`) and the lenient
//! number casts (spf13/cast) the math functions share: numbers as they are, numeric strings
//! parsed, booleans as 1 and 0, nil and anything else as 0.

use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error};

use super::string_arg;

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("atoi", |value: Value| {
        let text = string_arg("atoi", &value)?;
        Ok::<_, Error>(Value::from(text.parse::<i64>().unwrap_or(0)))
    });
    env.add_function("int", |value: Value| Value::from(to_int64(&value)));
    env.add_function("int64", |value: Value| Value::from(to_int64(&value)));
    env.add_function("float64", |value: Value| Value::from(to_float64(&value)));
    env.add_function("toDecimal", |value: Value| {
        let text = super::strval(&value);
        Value::from(i64::from_str_radix(&text, 8).unwrap_or(0))
    });
}

/// cast's `ToInt64`: floats truncated, strings parsed with Go's base prefixes (`0x1F`, `017`).
pub(super) fn to_int64(value: &Value) -> i64 {
    match value.kind() {
        ValueKind::Number => value.as_i64().unwrap_or_else(|| {
            #[allow(clippy::cast_possible_truncation)]
            f64::try_from(value.clone()).map_or(0, |f| f.trunc() as i64)
        }),
        ValueKind::Bool => i64::from(value.is_true()),
        ValueKind::String => parse_int(value.as_str().unwrap_or_default()).unwrap_or(0),
        _ => 0,
    }
}

/// cast's `ToFloat64`.
pub(super) fn to_float64(value: &Value) -> f64 {
    match value.kind() {
        ValueKind::Number => f64::try_from(value.clone()).unwrap_or(0.0),
        ValueKind::Bool => f64::from(u8::from(value.is_true())),
        ValueKind::String => value.as_str().unwrap_or_default().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` after cast drops a `.0` ending.
fn parse_int(text: &str) -> Option<i64> {
    let text = text.strip_suffix(".0").unwrap_or(text);
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let digits = digits.replace('_', "");
    let lower = digits.to_ascii_lowercase();
    let magnitude = if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(binary) = lower.strip_prefix("0b") {
        i64::from_str_radix(binary, 2).ok()?
    } else if let Some(octal) = lower.strip_prefix("0o") {
        i64::from_str_radix(octal, 8).ok()?
    } else if lower.len() > 1 && lower.starts_with('0') {
        i64::from_str_radix(&lower[1..], 8).ok()?
    } else {
        lower.parse::<i64>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;

    #[test]
    fn conversions_match_sprig_and_cast() {
        check(&[
            ("{{ atoi \"42\" }} {{ atoi \"x\" }}", "42 0"),
            (
                "{{ int \"12\" }} {{ int .f }} {{ int \"0x1F\" }} {{ int \"017\" }} {{ int true }}",
                "12 2 31 15 1",
            ),
            (
                "{{ int64 \"-5\" }} {{ int .nothing }} {{ int \"3.0\" }}",
                "-5 0 3",
            ),
            (
                "{{ float64 \"1.5\" }} {{ float64 3 }} {{ float64 \"x\" }}",
                "1.5 3 0",
            ),
            ("{{ toDecimal \"0777\" }} {{ toDecimal 777 }}", "511 511"),
        ]);
    }
}

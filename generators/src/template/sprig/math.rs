//! sprig's integer math (`add`, `sub`, `mul`, `div`, `mod`, `max`, `min`, …, on int64 casts), float
//! math (`addf`, `divf`, `maxf`, …, exact in decimal as sprig's decimal library is for sums and
//! products), rounding, and the number sequences `seq`, `until` and `untilStep`.

use minijinja::value::{Rest, Value};
use minijinja::{Environment, Error};

use super::convert::{to_float64, to_int64};
use super::{fail, int_arg};

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("add1", |a: Value| Value::from(to_int64(&a).wrapping_add(1)));
    env.add_function("add", |values: Rest<Value>| {
        Value::from(values.iter().map(to_int64).fold(0i64, i64::wrapping_add))
    });
    env.add_function("sub", |a: Value, b: Value| {
        Value::from(to_int64(&a).wrapping_sub(to_int64(&b)))
    });
    env.add_function("mul", |a: Value, rest: Rest<Value>| {
        Value::from(
            rest.iter()
                .map(to_int64)
                .fold(to_int64(&a), i64::wrapping_mul),
        )
    });
    env.add_function("div", |a: Value, b: Value| {
        to_int64(&a)
            .checked_div(to_int64(&b))
            .map(Value::from)
            .ok_or_else(|| fail("div", "integer divide by zero"))
    });
    env.add_function("mod", |a: Value, b: Value| {
        to_int64(&a)
            .checked_rem(to_int64(&b))
            .map(Value::from)
            .ok_or_else(|| fail("mod", "integer divide by zero"))
    });
    for name in ["max", "biggest"] {
        env.add_function(name, |a: Value, rest: Rest<Value>| {
            Value::from(rest.iter().map(to_int64).fold(to_int64(&a), i64::max))
        });
    }
    env.add_function("min", |a: Value, rest: Rest<Value>| {
        Value::from(rest.iter().map(to_int64).fold(to_int64(&a), i64::min))
    });
    env.add_function("add1f", |a: Value| {
        Value::from(decimal(to_float64(&a) + 1.0))
    });
    env.add_function("addf", |values: Rest<Value>| {
        Value::from(decimal(values.iter().map(to_float64).sum()))
    });
    env.add_function("subf", |a: Value, rest: Rest<Value>| {
        Value::from(decimal(
            rest.iter()
                .map(to_float64)
                .fold(to_float64(&a), |x, y| x - y),
        ))
    });
    env.add_function("mulf", |a: Value, rest: Rest<Value>| {
        Value::from(decimal(
            rest.iter()
                .map(to_float64)
                .fold(to_float64(&a), |x, y| x * y),
        ))
    });
    env.add_function("divf", |a: Value, rest: Rest<Value>| {
        let divisors: Vec<f64> = rest.iter().map(to_float64).collect();
        if divisors.contains(&0.0) {
            return Err(fail("divf", "division by zero"));
        }
        Ok(Value::from(
            divisors.iter().fold(to_float64(&a), |x, y| x / y),
        ))
    });
    env.add_function("maxf", |a: Value, rest: Rest<Value>| {
        Value::from(rest.iter().map(to_float64).fold(to_float64(&a), f64::max))
    });
    env.add_function("minf", |a: Value, rest: Rest<Value>| {
        Value::from(rest.iter().map(to_float64).fold(to_float64(&a), f64::min))
    });
    env.add_function("ceil", |a: Value| Value::from(to_float64(&a).ceil()));
    env.add_function("floor", |a: Value| Value::from(to_float64(&a).floor()));
    env.add_function("round", |a: Value, places: Value, round_on: Rest<Value>| {
        let places = i32::try_from(int_arg("round", &places)?)
            .map_err(|_| fail("round", "too many decimal places"))?;
        let round_on = round_on.first().map_or(0.5, to_float64);
        let scale = 10f64.powi(places);
        let scaled = to_float64(&a) * scale;
        let rounded = if scaled.fract().abs() >= round_on {
            scaled.ceil()
        } else {
            scaled.floor()
        };
        Ok::<_, Error>(Value::from(rounded / scale))
    });
    env.add_function("seq", seq);
    env.add_function("until", |count: Value| {
        let count = int_arg("until", &count)?;
        Ok::<_, Error>(until_step(0, count, if count < 0 { -1 } else { 1 }))
    });
    env.add_function("untilStep", |start: Value, stop: Value, step: Value| {
        Ok::<_, Error>(until_step(
            int_arg("untilStep", &start)?,
            int_arg("untilStep", &stop)?,
            int_arg("untilStep", &step)?,
        ))
    });
}

/// A float sum or product rounded to 15 significant digits, so `addf 0.1 0.2` is 0.3 as with
/// sprig's decimal arithmetic.
fn decimal(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    format!("{value:.14e}").parse().unwrap_or(value)
}

/// Integers from `start` towards `stop` (excluded) by `step`.
fn until_step(start: i64, stop: i64, step: i64) -> Value {
    let mut items = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        items.push(Value::from(i));
        i += step;
    }
    Value::from(items)
}

/// sprig's `seq` (as the shell's): `seq END`, `seq START END`, `seq START STEP END`, counting
/// down when END is smaller; the numbers in one string.
fn seq(bounds: Rest<Value>) -> Result<Value, Error> {
    let numbers: Vec<i64> = bounds
        .iter()
        .map(|b| int_arg("seq", b))
        .collect::<Result<_, _>>()?;
    let (start, step, end) = match numbers.as_slice() {
        [end] => (1, if *end >= 1 { 1 } else { -1 }, *end),
        [start, end] => (*start, if end >= start { 1 } else { -1 }, *end),
        [start, step, end] => (*start, *step, *end),
        _ => return Err(fail("seq", "expects 1 to 3 integers")),
    };
    if step == 0 || (end < start && step > 0) || (end > start && step < 0) {
        return Ok(Value::from(""));
    }
    let mut items = Vec::new();
    let mut i = start;
    while (step > 0 && i <= end) || (step < 0 && i >= end) {
        items.push(i.to_string());
        i += step;
    }
    Ok(Value::from(items.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn math_matches_sprig() {
        check(&[
            (
                "{{ add1 .n }} {{ add 1 2 .n }} {{ sub 5 .n }} {{ mul 2 3 4 }}",
                "4 6 2 24",
            ),
            ("{{ div 7 2 }} {{ mod 7 2 }} {{ add \"2\" 1.9 }}", "3 1 3"),
            ("{{ max 1 5 3 }} {{ biggest 2 9 }} {{ min 4 2 8 }}", "5 9 2"),
            (
                "{{ addf 0.1 0.2 }} {{ add1f 1.5 }} {{ subf 5 1.5 }} {{ mulf 1.5 2 }}",
                "0.3 2.5 3.5 3",
            ),
            (
                "{{ divf 1 4 }} {{ maxf 1 2.5 }} {{ minf 1 2.5 }}",
                "0.25 2.5 1",
            ),
            (
                "{{ ceil 1.2 }} {{ floor 1.8 }} {{ round 123.555555 3 }} {{ round 1.4 0 }}",
                "2 1 123.556 1",
            ),
            (
                "{{ seq 3 }}|{{ seq 2 -2 }}|{{ seq 0 2 10 }}|{{ seq 0 -2 -5 }}",
                "1 2 3|2 1 0 -1 -2|0 2 4 6 8 10|0 -2 -4",
            ),
            (
                "{{ until 3 }} {{ untilStep 3 6 2 }} {{ until -2 }}",
                "[0 1 2] [3 5] [0 -1]",
            ),
            ("{{ range $i := until 2 }}{{ $i }}{{ end }}", "01"),
            (
                "{{ mul .big 10 }} {{ .big }} {{ float64 1234567 }} {{ divf 1 3 }}",
                "10000000 1e+06 1.234567e+06 0.3333333333333333",
            ),
        ]);
        check_errors(&[("{{ div 1 0 }}", "div: integer divide by zero")]);
    }
}

//! Short human durations such as `500ms`, `2s`, `10m` or `1h`, as used by `--ready-after`, the
//! `sim.flotilla.dev/ready-after` annotation, `flotilla sync --timeout` and retry backoffs.

use std::time::Duration;

/// A duration string that is not an unsigned integer followed by `ms`, `s`, `m` or `h`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: expected a whole number followed by ms, s, m or h (e.g. 500ms, 2s)"
)]
pub struct DurationError {
    /// The rejected text.
    pub input: String,
}

/// Parses `<digits><unit>` with unit `ms`, `s`, `m` or `h`.
///
/// # Errors
/// [`DurationError`] when the text is not of that form or overflows.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let error = || DurationError {
        input: input.to_owned(),
    };
    let text = input.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(error)?;
    let (digits, unit) = text.split_at(split);
    let value: u64 = digits.parse().map_err(|_| error())?;
    let millis = match unit {
        "ms" => Some(value),
        "s" => value.checked_mul(1_000),
        "m" => value.checked_mul(60_000),
        "h" => value.checked_mul(3_600_000),
        _ => None,
    };
    millis.map(Duration::from_millis).ok_or_else(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_rejects_everything_else() {
        let cases: &[(&str, Option<u64>)] = &[
            ("500ms", Some(500)),
            ("2s", Some(2_000)),
            ("0s", Some(0)),
            ("1m", Some(60_000)),
            (" 3s ", Some(3_000)),
            ("2", None),
            ("s", None),
            ("1.5s", None),
            ("-1s", None),
            ("2h", Some(7_200_000)),
            ("2d", None),
            ("", None),
            ("99999999999999999999s", None),
        ];
        for (input, expected) in cases {
            let parsed = parse_duration(input).ok();
            assert_eq!(
                parsed,
                expected.map(Duration::from_millis),
                "input {input:?}"
            );
        }
    }
}

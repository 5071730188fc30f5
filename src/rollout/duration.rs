//! Progress deadlines as written in a RollingSync strategy: Go-style durations made of whole
//! numbers with `h`, `m`, `s` or `ms` units, such as `10m`, `90s` or `1h30m`.

use std::time::Duration;

/// A `progressDeadline` that is not a positive duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: expected a positive duration such as 30s, 10m or 1h30m (units h, m, s, ms)"
)]
pub struct DeadlineError {
    /// The rejected text.
    pub input: String,
}

/// Parses a positive Go-style duration.
///
/// # Errors
/// [`DeadlineError`] for empty text, unknown units, a zero total, or overflow.
pub fn parse_deadline(input: &str) -> Result<Duration, DeadlineError> {
    let error = || DeadlineError {
        input: input.to_owned(),
    };
    let mut rest = input.trim();
    if rest.is_empty() {
        return Err(error());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits_end = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(error)?;
        let value: u64 = rest[..digits_end].parse().map_err(|_| error())?;
        let unit_text = &rest[digits_end..];
        let unit_end = unit_text
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(unit_text.len());
        let millis_per_unit = match &unit_text[..unit_end] {
            "h" => 3_600_000,
            "m" => 60_000,
            "s" => 1_000,
            "ms" => 1,
            _ => return Err(error()),
        };
        let millis = value.checked_mul(millis_per_unit).ok_or_else(error)?;
        total = total
            .checked_add(Duration::from_millis(millis))
            .ok_or_else(error)?;
        rest = &unit_text[unit_end..];
    }
    if total.is_zero() {
        return Err(error());
    }
    Ok(total)
}

/// Renders a duration the way users write it (`1h30m`, `10m`, `45s`, `500ms`).
#[must_use]
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1_000) {
        return format!("{millis}ms");
    }
    let seconds = millis / 1_000;
    let (hours, minutes, seconds) = (seconds / 3_600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if seconds > 0 || text.is_empty() {
        text.push_str(&format!("{seconds}s"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_style_durations() {
        let cases: &[(&str, Option<u64>)] = &[
            ("10m", Some(600_000)),
            ("90s", Some(90_000)),
            ("1h30m", Some(5_400_000)),
            ("500ms", Some(500)),
            ("2h0m5s", Some(7_205_000)),
            ("", None),
            ("10", None),
            ("m", None),
            ("-5m", None),
            ("0s", None),
            ("5d", None),
            ("1.5h", None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_deadline(input).ok(),
                expected.map(Duration::from_millis),
                "{input:?}"
            );
        }
    }

    #[test]
    fn formats_like_users_write() {
        let cases: &[(u64, &str)] = &[
            (600_000, "10m"),
            (5_400_000, "1h30m"),
            (45_000, "45s"),
            (500, "500ms"),
            (0, "0s"),
            (3_600_000, "1h"),
        ];
        for (millis, expected) in cases {
            assert_eq!(format_duration(Duration::from_millis(*millis)), *expected);
        }
    }
}

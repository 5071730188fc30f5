//! Durations as users write them, in Go's syntax (`time.ParseDuration`: `1m30s`, `1.5s`, `500ms`,
//! `2h45m`), the one parser and the one formatter of the project: CLI flags, annotations
//! (`flotilla.dev/sync-timeout`, `sim.flotilla.dev/ready-after`), RollingSync deadlines and retry
//! backoffs (where a bare integer means seconds, as in Argo CD) all go through here, and every
//! duration Flotilla prints is written as Go's `Duration.String()` writes it. Templates' date
//! functions (`dateModify`, `ago`, `duration`) use it too, with the sign Go allows there.

use std::fmt;
use std::time::Duration;

const NANOS_PER_SECOND: u128 = 1_000_000_000;
/// Go's largest duration (`1<<63 - 1` nanoseconds, about 292 years); longer text is rejected so
/// that every accepted value means the same to Argo CD.
const MAX_NANOS: u128 = (1 << 63) - 1;

/// Text that is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: {problem} (write numbers with units ns, us, ms, s, m or h, e.g. 1m30s, 1.5s or 500ms)"
)]
pub struct DurationError {
    /// The rejected text.
    pub input: String,
    /// What is wrong with it.
    pub problem: DurationProblem,
}

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationProblem {
    /// Empty, or not of the form `[+-]number unit [number unit]...`.
    Malformed,
    /// A number without a unit (other than `0`).
    MissingUnit,
    /// A unit Go does not know, e.g. `d`.
    UnknownUnit(String),
    /// A duration below zero.
    Negative,
    /// Zero where a positive duration is needed.
    NotPositive,
    /// Longer than Go's largest duration.
    TooLong,
}

impl fmt::Display for DurationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => write!(f, "not a duration"),
            Self::MissingUnit => write!(f, "missing unit"),
            Self::UnknownUnit(unit) => write!(f, "unknown unit {unit:?}"),
            Self::Negative => write!(f, "must not be negative"),
            Self::NotPositive => write!(f, "must be more than zero"),
            Self::TooLong => write!(f, "longer than 2562047h47m16.854775807s"),
        }
    }
}

impl DurationError {
    /// An error about `input`.
    #[must_use]
    pub fn new(input: &str, problem: DurationProblem) -> Self {
        Self {
            input: input.to_owned(),
            problem,
        }
    }
}

/// Parses a duration as Go's `time.ParseDuration` does: a sequence of decimal numbers, each with
/// an optional fraction and a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), e.g. `300ms`, `1.5h`
/// or `2h45m`; `0` needs no unit. A leading `+` is accepted; a negative duration is not.
///
/// # Errors
/// [`DurationError`] naming the text and what is wrong with it.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    match parse_signed_duration(input)? {
        (true, duration) if !duration.is_zero() => {
            Err(DurationError::new(input, DurationProblem::Negative))
        }
        (_, duration) => Ok(duration),
    }
}

/// Parses a duration as [`parse_duration`] does, a leading `-` included (as Go does for
/// templates' `dateModify "-1.5h"`): whether it is negative, and its length.
///
/// # Errors
/// [`DurationError`] naming the text and what is wrong with it.
pub fn parse_signed_duration(input: &str) -> Result<(bool, Duration), DurationError> {
    let error = |problem| DurationError::new(input, problem);
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok((negative, Duration::ZERO));
    }
    if rest.is_empty() {
        return Err(error(DurationProblem::Malformed));
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (nanos, after) = component(rest).map_err(error)?;
        total = total.saturating_add(nanos);
        if total > MAX_NANOS {
            return Err(error(DurationProblem::TooLong));
        }
        rest = after;
    }
    Ok((negative, from_nanos(total)))
}

/// Parses a retry backoff as Argo CD does: a bare integer is a number of seconds (`30`), anything
/// else a duration as [`parse_duration`] reads it (`30s`, `2m`).
///
/// # Errors
/// [`DurationError`] when the text is neither.
pub fn parse_seconds_or_duration(input: &str) -> Result<Duration, DurationError> {
    match input.parse::<i64>() {
        Ok(seconds) if seconds < 0 => Err(DurationError::new(input, DurationProblem::Negative)),
        Ok(seconds) => {
            let nanos = u128::from(seconds.unsigned_abs()) * NANOS_PER_SECOND;
            if nanos > MAX_NANOS {
                return Err(DurationError::new(input, DurationProblem::TooLong));
            }
            Ok(from_nanos(nanos))
        }
        Err(_) => parse_duration(input),
    }
}

/// Writes a duration as Go's `Duration.String()` does: `0s`, `500ms`, `1.5s`, `1m30s`, `10m0s`,
/// `1h2m0.3s`; below a second in the largest unit that keeps a whole part (`1.1µs`, `2.2ms`).
#[must_use]
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < NANOS_PER_SECOND {
        let (scale, unit) = match nanos {
            0..1_000 => (1, "ns"),
            1_000..1_000_000 => (1_000, "µs"),
            _ => (1_000_000, "ms"),
        };
        return format!("{}{unit}", decimal(nanos, scale));
    }
    let seconds = decimal(nanos % (60 * NANOS_PER_SECOND), NANOS_PER_SECOND);
    let minutes = nanos / (60 * NANOS_PER_SECOND);
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{seconds}s"),
        (0, minutes) => format!("{minutes}m{seconds}s"),
        (hours, minutes) => format!("{hours}h{minutes}m{seconds}s"),
    }
}

/// `value / scale` with the fraction's trailing zeros (and a bare point) left out.
fn decimal(value: u128, scale: u128) -> String {
    let whole = value / scale;
    let fraction = value % scale;
    if fraction == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// One `number unit` at the start of `text`: its nanoseconds and the rest of the text.
fn component(text: &str) -> Result<(u128, &str), DurationProblem> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let whole_len = digits(text);
    let whole = &text[..whole_len];
    let mut rest = &text[whole_len..];
    let mut fraction = "";
    if let Some(after_point) = rest.strip_prefix('.') {
        let fraction_len = digits(after_point);
        fraction = &after_point[..fraction_len];
        rest = &after_point[fraction_len..];
    }
    if whole.is_empty() && fraction.is_empty() {
        return Err(DurationProblem::Malformed);
    }
    let unit_len = rest
        .find(|c: char| c == '.' || c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (unit, rest) = rest.split_at(unit_len);
    let per_unit: u128 = match unit {
        "" => return Err(DurationProblem::MissingUnit),
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => NANOS_PER_SECOND,
        "m" => 60 * NANOS_PER_SECOND,
        "h" => 3_600 * NANOS_PER_SECOND,
        other => return Err(DurationProblem::UnknownUnit(other.to_owned())),
    };
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| DurationProblem::TooLong)?
    };
    let fraction_nanos = fraction_of(fraction, per_unit);
    let nanos = whole
        .checked_mul(per_unit)
        .and_then(|n| n.checked_add(fraction_nanos))
        .filter(|n| *n <= MAX_NANOS)
        .ok_or(DurationProblem::TooLong)?;
    Ok((nanos, rest))
}

/// The nanoseconds of `0.<digits>` units, computed as Go does (in floating point, from the digits
/// that fit in 63 bits), so that `0.3333333333333333333h` is exactly 20m as it is for Argo CD.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn fraction_of(digits: &str, per_unit: u128) -> u128 {
    let mut numerator: u64 = 0;
    let mut scale = 1.0_f64;
    for digit in digits.bytes().map(|b| u64::from(b - b'0')) {
        match numerator.checked_mul(10).and_then(|n| n.checked_add(digit)) {
            Some(next) if next <= 1 << 63 => {
                numerator = next;
                scale *= 10.0;
            }
            _ => break,
        }
    }
    (numerator as f64 * (per_unit as f64 / scale)) as u128
}

fn from_nanos(nanos: u128) -> Duration {
    let seconds = u64::try_from(nanos / NANOS_PER_SECOND).unwrap_or(u64::MAX);
    let subsec = u32::try_from(nanos % NANOS_PER_SECOND).unwrap_or(0);
    Duration::new(seconds, subsec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u128 = 1_000_000;
    const S: u128 = 1_000 * MS;
    const MIN: u128 = 60 * S;
    const H: u128 = 60 * MIN;

    /// Go's `parseDurationTests` (src/time/time_test.go) and the examples of its documentation,
    /// with negative durations, which Flotilla never accepts, moved to the errors.
    #[test]
    fn parses_what_go_parses() {
        let cases: &[(&str, u128)] = &[
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("-0s", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * MIN),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * MIN),
            ("10.5s4m", 4 * MIN + 10 * S + 500 * MS),
            ("1h2m3s4ms5us6ns", H + 2 * MIN + 3 * S + 4 * MS + 5_000 + 6),
            ("39h9m14.425s", 39 * H + 9 * MIN + 14 * S + 425 * MS),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * MIN),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", MAX_NANOS),
            ("9223372036854775.807us", MAX_NANOS),
            ("9223372036s854ms775us807ns", MAX_NANOS),
            ("0.100000000000000000000h", 6 * MIN),
            ("0.830103483285477580700h", 49 * MIN + 48 * S + 372_539_827),
            ("1m30s", 90 * S),
            ("1.5s", 1_500 * MS),
            ("500ms", 500 * MS),
            ("2h45m", 2 * H + 45 * MIN),
            ("300ms", 300 * MS),
            ("1h10m10s", 4_210 * S),
            ("1µs", 1_000),
        ];
        for (input, nanos) in cases {
            assert_eq!(
                parse_duration(input).map(|d| d.as_nanos()),
                Ok(*nanos),
                "{input:?}"
            );
        }
    }

    #[test]
    fn rejects_what_go_rejects_and_negative_durations() {
        use DurationProblem::{Malformed, MissingUnit, Negative, TooLong, UnknownUnit};
        let unknown = |unit: &str| UnknownUnit(unit.to_owned());
        let cases = [
            ("", Malformed),
            ("3", MissingUnit),
            ("-", Malformed),
            ("s", Malformed),
            (".", Malformed),
            ("-.", Malformed),
            (".s", Malformed),
            ("+.s", Malformed),
            ("1d", unknown("d")),
            ("2 s", unknown(" s")),
            ("\u{85}\u{85}", Malformed),
            ("1\u{ff}ff", unknown("\u{ff}ff")),
            ("9223372036854775810ns", TooLong),
            ("9223372036854775808ns", TooLong),
            ("9223372036854775807ns1ns", TooLong),
            ("3000000h", TooLong),
            ("99999999999999999999999999999999999999999s", TooLong),
            ("-5s", Negative),
            ("-2m3.4s", Negative),
            ("-1.5h", Negative),
        ];
        for (input, problem) in cases {
            assert_eq!(
                parse_duration(input),
                Err(DurationError::new(input, problem)),
                "{input:?}"
            );
        }
    }

    #[test]
    fn errors_name_the_text_and_the_problem() {
        assert_eq!(
            parse_duration("1d").unwrap_err().to_string(),
            "invalid duration \"1d\": unknown unit \"d\" (write numbers with units ns, us, ms, s, m or h, e.g. 1m30s, 1.5s or 500ms)"
        );
    }

    /// Argo CD reads retry backoffs with `strconv.Atoi` first, then `time.ParseDuration`.
    #[test]
    fn backoffs_read_bare_integers_as_seconds() {
        let cases = [
            ("5", Ok(5 * S)),
            ("0", Ok(0)),
            ("30s", Ok(30 * S)),
            ("2m", Ok(2 * MIN)),
            ("1.5", Err(DurationProblem::MissingUnit)),
            ("-5", Err(DurationProblem::Negative)),
            ("9223372036854775807", Err(DurationProblem::TooLong)),
            ("soon", Err(DurationProblem::Malformed)),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_seconds_or_duration(input).map(|d| d.as_nanos()),
                expected.map_err(|problem| DurationError::new(input, problem)),
                "{input:?}"
            );
        }
    }

    /// Go's `durationTests` and the `Duration.String` examples of its documentation.
    #[test]
    fn formats_as_go_does() {
        let cases: &[(u128, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300 * MS, "3.3s"),
            (4 * MIN + 5 * S, "4m5s"),
            (4 * MIN + 5_001 * MS, "4m5.001s"),
            (5 * H + 6 * MIN + 7_001 * MS, "5h6m7.001s"),
            (8 * MIN + 1, "8m0.000000001s"),
            (MAX_NANOS, "2562047h47m16.854775807s"),
            (H + 2 * MIN + 300 * MS, "1h2m0.3s"),
            (300 * MS, "300ms"),
            (10 * H, "10h0m0s"),
            (4_210 * S, "1h10m10s"),
            (90 * S, "1m30s"),
            (1_500 * MS, "1.5s"),
            (500 * MS, "500ms"),
            (10 * MIN, "10m0s"),
        ];
        for (nanos, text) in cases {
            let duration = from_nanos(*nanos);
            assert_eq!(format_duration(duration), *text, "{nanos} ns");
            assert_eq!(parse_duration(text), Ok(duration), "{text} parses back");
        }
    }
}

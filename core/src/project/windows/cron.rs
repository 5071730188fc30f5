//! Five-field cron schedules as Argo CD reads a sync window's `schedule` (robfig/cron's parser
//! with minute, hour, day-of-month, month and day-of-week fields): each a `*`, a value, a range
//! (`1-5`), a step (`*/15`, `10-50/20`, `5/10`) or a comma list of those; month and weekday names
//! (`JAN`, `mon`); `7` is Sunday too. Argo CD's parser takes no descriptors at all; Flotilla also
//! reads `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight` and `@hourly` (the
//! five-field schedules they stand for) but refuses `@every <duration>`, which names no start
//! time (robfig/cron would count it from the moment it is asked). When both day fields are restricted, a day
//! matches when either does (cron's rule); when one of them is `*` (or `?`), both must.
//! Pure: schedules are matched on civil (wall-clock) times; time zones are the caller's.

use jiff::ToSpan;
use jiff::civil::{Date, DateTime, Time};

/// A schedule that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("expected 5 fields (minute hour day-of-month month day-of-week), found {found}")]
    FieldCount { found: usize },
    #[error("{field} field {text:?}: {problem}")]
    Field {
        field: &'static str,
        text: String,
        problem: String,
    },
    #[error(
        "unknown descriptor {0:?} (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"
    )]
    Descriptor(String),
    #[error(
        "{0:?}: a window starts at cron times, and @every names none (Argo CD refuses it too: its \
         sync windows take five cron fields); write the start, e.g. \"0 * * * *\" for every hour"
    )]
    Every(String),
}

/// One parsed field: the allowed values as bits, and whether it was written as `*`/`?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Field {
    bits: u64,
    star: bool,
}

impl Field {
    fn has(self, value: u32) -> bool {
        self.bits & (1u64 << value) != 0
    }

    /// The smallest allowed value that is at least `value` and below `end`.
    fn next_from(self, value: u32, end: u32) -> Option<u32> {
        let rest = self.bits.checked_shr(value)?;
        (rest != 0)
            .then(|| value + rest.trailing_zeros())
            .filter(|next| *next < end)
    }
}

/// The bounds and names of one field.
struct Spec {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Spec = Spec {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Spec = Spec {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Spec = Spec {
    name: "day-of-month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Spec = Spec {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAY_OF_WEEK: Spec = Spec {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    minute: Field,
    hour: Field,
    day_of_month: Field,
    month: Field,
    day_of_week: Field,
}

/// How many years ahead [`CronSchedule::next_after`] looks before giving up (`0 0 30 2 *`).
const YEARS_AHEAD: i16 = 5;

impl CronSchedule {
    /// Parses `text`.
    ///
    /// # Errors
    /// A field count other than five, a value out of range, an unknown name or descriptor.
    pub fn parse(text: &str) -> Result<Self, CronError> {
        let text = text.trim();
        let expanded = match text.strip_prefix('@') {
            None => text,
            Some(descriptor) => match descriptor.to_ascii_lowercase().as_str() {
                "yearly" | "annually" => "0 0 1 1 *",
                "monthly" => "0 0 1 * *",
                "weekly" => "0 0 * * 0",
                "daily" | "midnight" => "0 0 * * *",
                "hourly" => "0 * * * *",
                every if every.starts_with("every") => {
                    return Err(CronError::Every(text.to_owned()));
                }
                _ => return Err(CronError::Descriptor(text.to_owned())),
            },
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day_of_month, month, day_of_week] = fields.as_slice() else {
            return Err(CronError::FieldCount {
                found: fields.len(),
            });
        };
        let mut day_of_week = field(day_of_week, &DAY_OF_WEEK)?;
        if day_of_week.has(7) {
            day_of_week.bits = (day_of_week.bits & !(1 << 7)) | 1;
        }
        Ok(Self {
            minute: field(minute, &MINUTE)?,
            hour: field(hour, &HOUR)?,
            day_of_month: field(day_of_month, &DAY_OF_MONTH)?,
            month: field(month, &MONTH)?,
            day_of_week,
        })
    }

    /// Whether the schedule fires on `date` (the day-of-month/day-of-week rule).
    fn day_matches(&self, date: Date) -> bool {
        let dom = self
            .day_of_month
            .has(u32::try_from(date.day()).unwrap_or(0));
        let dow = self.day_of_week.has(u32::from(
            date.weekday().to_sunday_zero_offset().unsigned_abs(),
        ));
        if self.day_of_month.star || self.day_of_week.star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first wall-clock minute strictly after `after` at which the schedule fires, within
    /// five years.
    #[must_use]
    pub fn next_after(&self, after: DateTime) -> Option<DateTime> {
        let minute_start = after.with().second(0).subsec_nanosecond(0).build().ok()?;
        let mut t = minute_start.checked_add(1.minute()).ok()?;
        let last_year = after.year().saturating_add(YEARS_AHEAD);
        while t.year() <= last_year {
            let month = u32::try_from(t.month()).unwrap_or(0);
            if !self.month.has(month) {
                let first = t.date().first_of_month().checked_add(1.month()).ok()?;
                t = first.to_datetime(Time::midnight());
                continue;
            }
            if !self.day_matches(t.date()) {
                t = t
                    .date()
                    .checked_add(1.day())
                    .ok()?
                    .to_datetime(Time::midnight());
                continue;
            }
            // Straight to the next allowed hour and minute: stepping one at a time made a
            // month of a daily window's starts cost thousands of steps.
            let hour = u32::try_from(t.hour()).unwrap_or(0);
            if !self.hour.has(hour) {
                t = match self.hour.next_from(hour, 24) {
                    Some(next) => t.with().hour(to_i8(next)?).minute(0).build().ok()?,
                    None => t
                        .date()
                        .checked_add(1.day())
                        .ok()?
                        .to_datetime(Time::midnight()),
                };
                continue;
            }
            let minute = u32::try_from(t.minute()).unwrap_or(0);
            if !self.minute.has(minute) {
                t = match self.minute.next_from(minute, 60) {
                    Some(next) => t.with().minute(to_i8(next)?).build().ok()?,
                    None => t
                        .with()
                        .minute(0)
                        .build()
                        .ok()?
                        .checked_add(1.hour())
                        .ok()?,
                };
                continue;
            }
            return Some(t);
        }
        None
    }
}

/// An hour or minute as jiff takes it.
fn to_i8(value: u32) -> Option<i8> {
    i8::try_from(value).ok()
}

/// Parses one field: a comma list of `*`, values, ranges and steps.
fn field(text: &str, spec: &Spec) -> Result<Field, CronError> {
    let error = |problem: String| CronError::Field {
        field: spec.name,
        text: text.to_owned(),
        problem,
    };
    let mut parsed = Field {
        bits: 0,
        star: false,
    };
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| error(format!("step {step:?} is not a number")))?;
                if step == 0 {
                    return Err(error("a step must be at least 1".to_owned()));
                }
                (range, Some(step))
            }
            None => (part, None),
        };
        let (low, high, star) = if range == "*" || range == "?" {
            (spec.min, spec.max, true)
        } else {
            match range.split_once('-') {
                Some((low, high)) => (value(low, spec, &error)?, value(high, spec, &error)?, false),
                None => {
                    let low = value(range, spec, &error)?;
                    // `5/10` runs from 5 to the end of the range, as in robfig/cron.
                    (low, if step.is_some() { spec.max } else { low }, false)
                }
            }
        };
        if low > high {
            return Err(error(format!("range {low}-{high} runs backwards")));
        }
        let step = step.unwrap_or(1);
        parsed.star |= star && step == 1;
        parsed.bits |= (low..=high)
            .step_by(usize::try_from(step).unwrap_or(1))
            .fold(0u64, |bits, v| bits | (1u64 << v));
    }
    Ok(parsed)
}

/// One value of a field: a number within bounds or a name.
fn value(text: &str, spec: &Spec, error: &impl Fn(String) -> CronError) -> Result<u32, CronError> {
    let lower = text.to_ascii_lowercase();
    if let Some(index) = spec.names.iter().position(|name| *name == lower) {
        let index = u32::try_from(index).unwrap_or(0);
        return Ok(if spec.min == 1 { index + 1 } else { index });
    }
    let number: u32 = text
        .parse()
        .map_err(|_| error(format!("{text:?} is not a number or a name")))?;
    if number < spec.min || number > spec.max {
        return Err(error(format!(
            "{number} is outside {}-{}",
            spec.min, spec.max
        )));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime {
        text.parse().unwrap()
    }

    #[test]
    fn next_firing_after_a_wall_clock_time() {
        // (schedule, after, next)
        let cases = [
            ("* * * * *", "2026-12-04T15:30:20", "2026-12-04T15:31"),
            ("0 16 * * 5", "2026-12-04T15:30", "2026-12-04T16:00"),
            ("0 16 * * 5", "2026-12-04T16:00", "2026-12-11T16:00"),
            ("0 16 * * fri", "2026-12-04T16:00", "2026-12-11T16:00"),
            ("*/15 * * * *", "2026-12-04T15:31", "2026-12-04T15:45"),
            ("10-50/20 * * * *", "2026-12-04T15:31", "2026-12-04T15:50"),
            ("5/20 * * * *", "2026-12-04T15:26", "2026-12-04T15:45"),
            ("0 8 * * 1-5", "2026-12-04T09:00", "2026-12-07T08:00"),
            ("0 8 * * MON-fri", "2026-12-04T09:00", "2026-12-07T08:00"),
            ("0 0 * * 7", "2026-12-04T09:00", "2026-12-06T00:00"),
            ("0 22 1,15 * *", "2026-12-04T09:00", "2026-12-15T22:00"),
            ("0 0 1 jan *", "2026-12-04T09:00", "2027-01-01T00:00"),
            ("0 0 29 2 *", "2026-12-04T09:00", "2028-02-29T00:00"),
            // Both day fields restricted: either matches (the 13th, or any Friday).
            ("0 0 13 * 5", "2026-12-04T09:00", "2026-12-11T00:00"),
            ("0 0 13 * 5", "2026-12-11T09:00", "2026-12-13T00:00"),
            // One of them `*`: both must (every Friday; the 13th every month).
            ("0 0 * * 5", "2026-12-04T09:00", "2026-12-11T00:00"),
            ("0 0 13 * *", "2026-12-04T09:00", "2026-12-13T00:00"),
            // A stepped star restricts: days 1, 11, 21, 31 OR Saturdays.
            ("0 0 */10 * 6", "2026-12-04T09:00", "2026-12-05T00:00"),
            ("@hourly", "2026-12-04T09:00", "2026-12-04T10:00"),
            ("@daily", "2026-12-04T09:00", "2026-12-05T00:00"),
            ("@midnight", "2026-12-04T09:00", "2026-12-05T00:00"),
            ("@weekly", "2026-12-04T09:00", "2026-12-06T00:00"),
            ("@monthly", "2026-12-04T09:00", "2027-01-01T00:00"),
            ("@yearly", "2026-12-04T09:00", "2027-01-01T00:00"),
            ("@annually", "2026-12-04T09:00", "2027-01-01T00:00"),
        ];
        for (schedule, after, next) in cases {
            let parsed = CronSchedule::parse(schedule).unwrap();
            assert_eq!(
                parsed.next_after(at(after)),
                Some(at(next)),
                "{schedule} after {after}"
            );
        }
        let never = CronSchedule::parse("0 0 30 2 *").unwrap();
        assert_eq!(never.next_after(at("2026-12-04T09:00")), None);
    }

    #[test]
    fn jumps_to_the_next_allowed_hour_and_minute_as_stepping_each_minute_would() {
        let wraps = [
            ("30 9,17 * * *", "2026-12-04T17:45", "2026-12-05T09:30"),
            ("15,45 * * * *", "2026-12-04T10:50", "2026-12-04T11:15"),
            ("0 23 * * *", "2026-12-31T23:00", "2027-01-01T23:00"),
            ("59 23 31 12 *", "2026-12-31T23:59", "2027-12-31T23:59"),
        ];
        for (schedule, after, next) in wraps {
            let parsed = CronSchedule::parse(schedule).unwrap();
            assert_eq!(parsed.next_after(at(after)), Some(at(next)), "{schedule}");
        }
        // Against the definition: the first minute after `after` whose fields all match.
        let schedules = [
            "0 22 * * *",
            "*/7 3-5 * * *",
            "45 */5 * * 1-5",
            "0,59 0,23 * * *",
            "10 12 1,15 * *",
            "5 4 * * 0",
        ];
        let instants = [
            "2026-12-04T15:30:20",
            "2026-12-31T23:59",
            "2027-02-28T22:00",
            "2026-03-29T01:59",
        ];
        for schedule in schedules {
            let parsed = CronSchedule::parse(schedule).unwrap();
            for after in instants {
                let mut t = at(after).with().second(0).build().unwrap();
                let expected = loop {
                    t = t.checked_add(1.minute()).unwrap();
                    let fields = [
                        (parsed.hour, t.hour()),
                        (parsed.minute, t.minute()),
                        (parsed.month, t.month()),
                    ];
                    if parsed.day_matches(t.date())
                        && fields
                            .iter()
                            .all(|(field, value)| field.has(u32::try_from(*value).unwrap()))
                    {
                        break t;
                    }
                };
                assert_eq!(
                    parsed.next_after(at(after)),
                    Some(expected),
                    "{schedule} after {after}"
                );
            }
        }
    }

    #[test]
    fn errors_name_the_field_and_the_problem() {
        let cases = [
            (
                "0 16 * *",
                "expected 5 fields (minute hour day-of-month month day-of-week), found 4",
            ),
            ("60 * * * *", r#"minute field "60": 60 is outside 0-59"#),
            ("0 24 * * *", r#"hour field "24": 24 is outside 0-23"#),
            ("0 0 0 * *", r#"day-of-month field "0": 0 is outside 1-31"#),
            (
                "0 0 * foo *",
                r#"month field "foo": "foo" is not a number or a name"#,
            ),
            ("0 0 * * 8", r#"day-of-week field "8": 8 is outside 0-7"#),
            (
                "*/0 * * * *",
                r#"minute field "*/0": a step must be at least 1"#,
            ),
            (
                "5-1 * * * *",
                r#"minute field "5-1": range 5-1 runs backwards"#,
            ),
            (
                "@every 1h",
                r#""@every 1h": a window starts at cron times, and @every names none (Argo CD refuses it too: its sync windows take five cron fields); write the start, e.g. "0 * * * *" for every hour"#,
            ),
            (
                "@fortnightly",
                r#"unknown descriptor "@fortnightly" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"#,
            ),
        ];
        for (schedule, message) in cases {
            assert_eq!(
                CronSchedule::parse(schedule).unwrap_err().to_string(),
                message,
                "{schedule}"
            );
        }
    }
}

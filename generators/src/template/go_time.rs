//! Go's `time` as templates see it: instants in a location ([`GoTime`], printed as Go's
//! `Time.String()` prints them), locations (`UTC`, `Local`, and IANA names read from the system's
//! zoneinfo files), and formatting and parsing with Go's reference-time layouts
//! (`2006-01-02T15:04:05Z07:00`). A time past a zone's last listed transition keeps that
//! transition's offset (the rule in the file's footer is not read).

use std::fmt;
use std::sync::Arc;

use minijinja::value::{Object, ObjectRepr};

/// Where zoneinfo files are.
const ZONEINFO: &str = "/usr/share/zoneinfo";
/// Seconds from 0001-01-01 (Go's zero time) to 1970-01-01.
const ZERO_TIME_UNIX: i64 = -62_135_596_800;
/// What Go's `Time.String()` writes.
const STRING_LAYOUT: &str = "2006-01-02 15:04:05.999999999 -0700 MST";

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// A time zone: its offsets from UTC and when each starts.
#[derive(Debug)]
pub(crate) struct Location {
    /// `(from unix second, index into zones)`, in time order.
    transitions: Vec<(i64, usize)>,
    /// `(offset in seconds east of UTC, abbreviation)`; the first applies before any transition.
    zones: Vec<(i32, String)>,
}

impl Location {
    /// Coordinated Universal Time.
    pub(crate) fn utc() -> Arc<Self> {
        Self::fixed("UTC", 0)
    }

    /// A zone with one offset, named `name`.
    fn fixed(name: &str, offset: i32) -> Arc<Self> {
        Arc::new(Self {
            transitions: Vec::new(),
            zones: vec![(offset, name.to_string())],
        })
    }

    /// Go's `time.LoadLocation`: `""` and `UTC` are UTC, `Local` the machine's zone (`$TZ`, else
    /// `/etc/localtime`, else UTC), anything else an IANA name such as `Europe/Paris`.
    pub(crate) fn load(name: &str) -> Result<Arc<Self>, String> {
        match name {
            "" | "UTC" => Ok(Self::utc()),
            "Local" => Ok(Self::local()),
            _ if name.starts_with('/') || name.split('/').any(|part| part == "..") => {
                Err(format!("invalid time zone name {name:?}"))
            }
            _ => {
                let bytes = std::fs::read(format!("{ZONEINFO}/{name}"))
                    .map_err(|_| format!("unknown time zone {name}"))?;
                Self::from_tzif(&bytes)
                    .map(Arc::new)
                    .ok_or_else(|| format!("unreadable time zone {name}"))
            }
        }
    }

    /// The machine's zone, called `Local` as Go calls it.
    pub(crate) fn local() -> Arc<Self> {
        let from_tz = std::env::var("TZ").ok().filter(|tz| !tz.is_empty());
        let bytes = match &from_tz {
            Some(tz) => std::fs::read(format!("{ZONEINFO}/{}", tz.trim_start_matches(':'))),
            None => std::fs::read("/etc/localtime"),
        };
        bytes
            .ok()
            .and_then(|bytes| Self::from_tzif(&bytes))
            .map_or_else(|| Self::fixed("UTC", 0), Arc::new)
    }

    /// Reads a TZif file (RFC 8536): the 64-bit data of version 2 and later, else version 1's.
    fn from_tzif(bytes: &[u8]) -> Option<Self> {
        let header = |at: usize| -> Option<[usize; 6]> {
            if bytes.get(at..at + 4)? != b"TZif" {
                return None;
            }
            let mut counts = [0; 6];
            for (i, count) in counts.iter_mut().enumerate() {
                let start = at + 20 + i * 4;
                let raw: [u8; 4] = bytes.get(start..start + 4)?.try_into().ok()?;
                *count = u32::from_be_bytes(raw) as usize;
            }
            Some(counts)
        };
        let [isut, isstd, leap, time, types, chars] = header(0)?;
        let v1_size = time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
        let (start, width) = if bytes.get(4).copied().unwrap_or(0) >= b'2' {
            (44 + v1_size, 8)
        } else {
            (0, 4)
        };
        let [_, _, _, time, types, chars] = header(start)?;
        let mut at = start + 44;
        let mut take = |n: usize| -> Option<&[u8]> {
            let slice = bytes.get(at..at + n)?;
            at += n;
            Some(slice)
        };
        let times: Vec<i64> = take(time * width)?
            .chunks(width)
            .map(|raw| match raw.len() {
                8 => i64::from_be_bytes(raw.try_into().unwrap_or([0; 8])),
                _ => i64::from(i32::from_be_bytes(raw.try_into().unwrap_or([0; 4]))),
            })
            .collect();
        let indices = take(time)?.to_vec();
        let infos = take(types * 6)?.to_vec();
        let abbreviations = take(chars)?;
        let zones = infos
            .chunks(6)
            .map(|info| {
                let offset = i32::from_be_bytes(info[..4].try_into().unwrap_or([0; 4]));
                let from = usize::from(info[5]);
                let end = abbreviations[from..].iter().position(|&b| b == 0)? + from;
                Some((
                    offset,
                    String::from_utf8_lossy(&abbreviations[from..end]).into_owned(),
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        if zones.is_empty() {
            return None;
        }
        let transitions = times
            .into_iter()
            .zip(indices.into_iter().map(usize::from))
            .filter(|&(_, index)| index < zones.len())
            .collect();
        Some(Self { transitions, zones })
    }

    /// The offset and abbreviation in effect at `unix`.
    fn zone_at(&self, unix: i64) -> (i32, &str) {
        let index = match self.transitions.partition_point(|&(from, _)| from <= unix) {
            0 => 0,
            after => self.transitions[after - 1].1,
        };
        let (offset, name) = &self.zones[index];
        (*offset, name)
    }

    /// The zone this location calls `abbreviation`, if any.
    fn offset_named(&self, abbreviation: &str) -> Option<i32> {
        self.zones
            .iter()
            .find(|(_, name)| name == abbreviation)
            .map(|(offset, _)| *offset)
    }
}

/// An instant and the location it is shown in, as Go's `time.Time`.
#[derive(Debug, Clone)]
pub(crate) struct GoTime {
    /// Seconds since 1970-01-01 UTC.
    pub(crate) unix: i64,
    /// Nanoseconds within the second.
    pub(crate) nanos: u32,
    pub(crate) location: Arc<Location>,
}

impl GoTime {
    /// Now, in the machine's zone.
    pub(crate) fn now() -> Self {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            unix: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            nanos: since.subsec_nanos(),
            location: Location::local(),
        }
    }

    /// Go's zero time, 0001-01-01 00:00:00 UTC.
    pub(crate) fn zero() -> Self {
        Self {
            unix: ZERO_TIME_UNIX,
            nanos: 0,
            location: Location::utc(),
        }
    }

    /// The same instant in `location`.
    pub(crate) fn in_location(&self, location: Arc<Location>) -> Self {
        Self {
            location,
            ..self.clone()
        }
    }

    /// Nanoseconds since 1970-01-01 UTC.
    pub(crate) fn unix_nanos(&self) -> i128 {
        i128::from(self.unix) * 1_000_000_000 + i128::from(self.nanos)
    }

    /// The instant `nanos` nanoseconds later (earlier when negative).
    pub(crate) fn add_nanos(&self, nanos: i128) -> Self {
        let total = self.unix_nanos() + nanos;
        Self {
            unix: i64::try_from(total.div_euclid(1_000_000_000)).unwrap_or(i64::MAX),
            nanos: u32::try_from(total.rem_euclid(1_000_000_000)).unwrap_or(0),
            location: self.location.clone(),
        }
    }

    /// Go's `Time.Format`.
    pub(crate) fn format(&self, layout: &str) -> String {
        let (offset, abbreviation) = self.location.zone_at(self.unix);
        let local = self.unix + i64::from(offset);
        let days = local.div_euclid(86_400);
        let second_of_day = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let (hour, minute, second) = (
            second_of_day / 3_600,
            second_of_day / 60 % 60,
            second_of_day % 60,
        );
        let weekday = usize::try_from((days + 4).rem_euclid(7)).unwrap_or(0);
        let year_day = days - days_from_civil(year, 1, 1) + 1;
        let month_name = MONTHS[usize::try_from(month - 1).unwrap_or(0)];
        let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
        let mut out = String::with_capacity(layout.len() + 8);
        let mut rest = layout;
        while !rest.is_empty() {
            let Some((chunk, len)) = next_chunk(rest) else {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            };
            rest = &rest[len..];
            let text = match chunk {
                Chunk::LongYear => format!("{year:04}"),
                Chunk::Year => format!("{:02}", year.rem_euclid(100)),
                Chunk::LongMonth => month_name.to_string(),
                Chunk::Month => month_name[..3].to_string(),
                Chunk::NumMonth => month.to_string(),
                Chunk::ZeroMonth => format!("{month:02}"),
                Chunk::LongWeekDay => WEEKDAYS[weekday].to_string(),
                Chunk::WeekDay => WEEKDAYS[weekday][..3].to_string(),
                Chunk::Day => day.to_string(),
                Chunk::UnderDay => format!("{day:>2}"),
                Chunk::ZeroDay => format!("{day:02}"),
                Chunk::UnderYearDay => format!("{year_day:>3}"),
                Chunk::ZeroYearDay => format!("{year_day:03}"),
                Chunk::Hour => format!("{hour:02}"),
                Chunk::Hour12 => hour12.to_string(),
                Chunk::ZeroHour12 => format!("{hour12:02}"),
                Chunk::Minute => minute.to_string(),
                Chunk::ZeroMinute => format!("{minute:02}"),
                Chunk::Second => second.to_string(),
                Chunk::ZeroSecond => format!("{second:02}"),
                Chunk::PM => if hour >= 12 { "PM" } else { "AM" }.to_string(),
                Chunk::Pm => if hour >= 12 { "pm" } else { "am" }.to_string(),
                Chunk::TZ => {
                    if abbreviation.is_empty() {
                        format_offset(offset, OffsetWidth::Minutes { colon: false })
                    } else {
                        abbreviation.to_string()
                    }
                }
                Chunk::Offset { z: true, .. } if offset == 0 => "Z".to_string(),
                Chunk::Offset { width, .. } => format_offset(offset, width),
                Chunk::Fraction { digits, trim } => {
                    let fraction = format!("{:09}", self.nanos);
                    let mut fraction = fraction[..digits].to_string();
                    if trim {
                        fraction = fraction.trim_end_matches('0').to_string();
                    }
                    let separator = &layout[layout.len() - rest.len() - len..][..1];
                    if fraction.is_empty() {
                        String::new()
                    } else {
                        format!("{separator}{fraction}")
                    }
                }
            };
            out.push_str(&text);
        }
        out
    }

    /// Go's `time.ParseInLocation`: `text` read with `layout`; a time without a zone is in
    /// `location`.
    pub(crate) fn parse(
        layout: &str,
        text: &str,
        location: &Arc<Location>,
    ) -> Result<Self, String> {
        let mismatch = || format!("parsing time {text:?} as {layout:?}: cannot parse");
        let (mut year, mut month, mut day, mut year_day) = (1_i64, 1_i64, 1_i64, None);
        let (mut hour, mut minute, mut second, mut nanos) = (0_i64, 0_i64, 0_i64, 0_u32);
        let (mut pm, mut offset, mut zone_name) = (None, None, None::<String>);
        let (mut rest_layout, mut rest) = (layout, text);
        while !rest_layout.is_empty() {
            let Some((chunk, len)) = next_chunk(rest_layout) else {
                let c = rest_layout.chars().next().unwrap_or_default();
                rest = rest.strip_prefix(c).ok_or_else(mismatch)?;
                rest_layout = &rest_layout[c.len_utf8()..];
                continue;
            };
            rest_layout = &rest_layout[len..];
            match chunk {
                Chunk::LongYear => year = take_number(&mut rest, 4, 4).ok_or_else(mismatch)?,
                Chunk::Year => {
                    let short = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?;
                    year = if short >= 69 {
                        1900 + short
                    } else {
                        2000 + short
                    };
                }
                Chunk::NumMonth => month = take_number(&mut rest, 1, 2).ok_or_else(mismatch)?,
                Chunk::ZeroMonth => month = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?,
                Chunk::Day | Chunk::UnderDay => {
                    rest = rest.trim_start_matches(' ');
                    day = take_number(&mut rest, 1, 2).ok_or_else(mismatch)?;
                }
                Chunk::ZeroDay => day = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?,
                Chunk::UnderYearDay | Chunk::ZeroYearDay => {
                    rest = rest.trim_start_matches(' ');
                    year_day = Some(take_number(&mut rest, 1, 3).ok_or_else(mismatch)?);
                }
                Chunk::Hour => hour = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?,
                Chunk::Hour12 => hour = take_number(&mut rest, 1, 2).ok_or_else(mismatch)?,
                Chunk::ZeroHour12 => hour = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?,
                Chunk::Minute => minute = take_number(&mut rest, 1, 2).ok_or_else(mismatch)?,
                Chunk::ZeroMinute => minute = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?,
                Chunk::Second | Chunk::ZeroSecond => {
                    second = take_number(&mut rest, if chunk == Chunk::Second { 1 } else { 2 }, 2)
                        .ok_or_else(mismatch)?;
                    // Go accepts a fraction after the seconds even when the layout has none.
                    if next_chunk(rest_layout)
                        .is_none_or(|(next, _)| !matches!(next, Chunk::Fraction { .. }))
                        && rest.starts_with(['.', ','])
                        && rest[1..].starts_with(|c: char| c.is_ascii_digit())
                    {
                        let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
                        nanos = fraction_nanos(&rest[1..=digits]);
                        rest = &rest[digits + 1..];
                    }
                }
                Chunk::Fraction { digits, trim } => {
                    let Some(after) = rest.strip_prefix(['.', ',']) else {
                        if trim {
                            continue;
                        }
                        return Err(mismatch());
                    };
                    let count = after.bytes().take_while(u8::is_ascii_digit).count();
                    if (!trim && count != digits) || count == 0 {
                        return Err(mismatch());
                    }
                    nanos = fraction_nanos(&after[..count]);
                    rest = &after[count..];
                }
                Chunk::LongMonth | Chunk::Month => {
                    let long = chunk == Chunk::LongMonth;
                    let (index, name_len) = MONTHS
                        .iter()
                        .enumerate()
                        .find_map(|(i, name)| {
                            let name = if long { name } else { &name[..3] };
                            starts_with_ignore_case(rest, name).then_some((i, name.len()))
                        })
                        .ok_or_else(mismatch)?;
                    month = i64::try_from(index).unwrap_or(0) + 1;
                    rest = &rest[name_len..];
                }
                Chunk::LongWeekDay | Chunk::WeekDay => {
                    let long = chunk == Chunk::LongWeekDay;
                    let name_len = WEEKDAYS
                        .iter()
                        .find_map(|name| {
                            let name = if long { name } else { &name[..3] };
                            starts_with_ignore_case(rest, name).then_some(name.len())
                        })
                        .ok_or_else(mismatch)?;
                    rest = &rest[name_len..];
                }
                Chunk::PM | Chunk::Pm => {
                    let marker = rest.get(..2).ok_or_else(mismatch)?.to_ascii_uppercase();
                    pm = Some(match marker.as_str() {
                        "PM" => true,
                        "AM" => false,
                        _ => return Err(mismatch()),
                    });
                    rest = &rest[2..];
                }
                Chunk::Offset { z, .. } if z && rest.starts_with('Z') => {
                    offset = Some(0);
                    rest = &rest[1..];
                }
                Chunk::Offset { .. } => {
                    let sign = match rest.chars().next() {
                        Some('+') => 1,
                        Some('-') => -1,
                        _ => return Err(mismatch()),
                    };
                    rest = &rest[1..];
                    let hours = take_number(&mut rest, 2, 2).ok_or_else(mismatch)?;
                    rest = rest.strip_prefix(':').unwrap_or(rest);
                    let minutes = take_number(&mut rest, 0, 2).unwrap_or(0);
                    rest = rest.strip_prefix(':').unwrap_or(rest);
                    let seconds = take_number(&mut rest, 0, 2).unwrap_or(0);
                    offset = Some(sign * (hours * 3_600 + minutes * 60 + seconds));
                }
                Chunk::TZ => {
                    let len = rest.bytes().take_while(u8::is_ascii_uppercase).count();
                    if len < 3 {
                        return Err(mismatch());
                    }
                    zone_name = Some(rest[..len].to_string());
                    rest = &rest[len..];
                }
            }
        }
        if !rest.is_empty() {
            return Err(format!("parsing time {text:?}: extra text {rest:?}"));
        }
        match pm {
            Some(true) if hour < 12 => hour += 12,
            Some(false) if hour == 12 => hour = 0,
            _ => {}
        }
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return Err(format!("parsing time {text:?}: value out of range"));
        }
        let days = match year_day {
            Some(year_day) => days_from_civil(year, 1, 1) + year_day - 1,
            None => days_from_civil(year, month, day),
        };
        let local = days * 86_400 + hour * 3_600 + minute * 60 + second;
        let (unix, shown_in) = match (offset, zone_name) {
            (Some(0), _) => (local, Location::utc()),
            (Some(offset), _) => (
                local - offset,
                Location::fixed("", i32::try_from(offset).unwrap_or(0)),
            ),
            (None, Some(name)) if name == "UTC" || name == "GMT" => {
                (local, Location::fixed(&name, 0))
            }
            (None, Some(name)) => match location.offset_named(&name) {
                Some(offset) => (local - i64::from(offset), location.clone()),
                None => (local, Location::fixed(&name, 0)),
            },
            (None, None) => {
                // The offset in effect at that local time (tried at the UTC reading, then fixed).
                let (guess, _) = location.zone_at(local);
                let (offset, _) = location.zone_at(local - i64::from(guess));
                (local - i64::from(offset), location.clone())
            }
        };
        Ok(Self {
            unix,
            nanos,
            location: shown_in,
        })
    }
}

impl Object for GoTime {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.format(STRING_LAYOUT))
    }
}

/// A piece of a layout that stands for part of the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    TZ,
    /// `-0700`, `-07:00`, `-07`, `-070000`, `-07:00:00`; with `z`, `Z` for UTC.
    Offset {
        z: bool,
        width: OffsetWidth,
    },
    /// `.000` (fixed digits) or `.999` (trailing zeros trimmed).
    Fraction {
        digits: usize,
        trim: bool,
    },
}

/// How much of an offset a layout writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OffsetWidth {
    /// `-07`.
    Hours,
    /// `-0700` (`colon`: `-07:00`).
    Minutes { colon: bool },
    /// `-070000` (`colon`: `-07:00:00`).
    Seconds { colon: bool },
}

/// The chunk `layout` starts with and its length, as Go's `nextStdChunk` finds them.
fn next_chunk(layout: &str) -> Option<(Chunk, usize)> {
    const WORDS: &[(&str, Chunk)] = &[
        ("January", Chunk::LongMonth),
        ("Jan", Chunk::Month),
        ("Monday", Chunk::LongWeekDay),
        ("Mon", Chunk::WeekDay),
        ("MST", Chunk::TZ),
        ("2006", Chunk::LongYear),
        ("002", Chunk::ZeroYearDay),
        ("01", Chunk::ZeroMonth),
        ("02", Chunk::ZeroDay),
        ("03", Chunk::ZeroHour12),
        ("04", Chunk::ZeroMinute),
        ("05", Chunk::ZeroSecond),
        ("06", Chunk::Year),
        ("15", Chunk::Hour),
        ("1", Chunk::NumMonth),
        ("__2", Chunk::UnderYearDay),
        ("_2", Chunk::UnderDay),
        ("2", Chunk::Day),
        ("3", Chunk::Hour12),
        ("4", Chunk::Minute),
        ("5", Chunk::Second),
        ("PM", Chunk::PM),
        ("pm", Chunk::Pm),
    ];
    const OFFSETS: &[(&str, OffsetWidth)] = &[
        ("07:00:00", OffsetWidth::Seconds { colon: true }),
        ("070000", OffsetWidth::Seconds { colon: false }),
        ("07:00", OffsetWidth::Minutes { colon: true }),
        ("0700", OffsetWidth::Minutes { colon: false }),
        ("07", OffsetWidth::Hours),
    ];
    if let Some(sign) = layout.chars().next().filter(|c| matches!(c, '-' | 'Z')) {
        for (pattern, width) in OFFSETS {
            if layout[1..].starts_with(pattern) {
                let chunk = Chunk::Offset {
                    z: sign == 'Z',
                    width: *width,
                };
                return Some((chunk, 1 + pattern.len()));
            }
        }
    }
    if layout.starts_with(['.', ',']) {
        let digit = layout[1..]
            .chars()
            .next()
            .filter(|c| matches!(c, '0' | '9'))?;
        let run = layout[1..].chars().take_while(|&c| c == digit).count();
        let after = &layout[1 + run..];
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        return Some((
            Chunk::Fraction {
                digits: run.min(9),
                trim: digit == '9',
            },
            1 + run,
        ));
    }
    WORDS
        .iter()
        .find(|(word, _)| layout.starts_with(word))
        .map(|(word, chunk)| (*chunk, word.len()))
}

/// `offset` seconds east of UTC written `width` wide: `+09`, `+0900`, `+09:00`, `+090000`.
fn format_offset(offset: i32, width: OffsetWidth) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let abs = offset.unsigned_abs();
    let (h, m, s) = (abs / 3_600, abs / 60 % 60, abs % 60);
    match width {
        OffsetWidth::Hours => format!("{sign}{h:02}"),
        OffsetWidth::Minutes { colon } => {
            let separator = if colon { ":" } else { "" };
            format!("{sign}{h:02}{separator}{m:02}")
        }
        OffsetWidth::Seconds { colon } => {
            let separator = if colon { ":" } else { "" };
            format!("{sign}{h:02}{separator}{m:02}{separator}{s:02}")
        }
    }
}

/// Reads `min` to `max` digits at the start of `rest` and moves past them.
fn take_number(rest: &mut &str, min: usize, max: usize) -> Option<i64> {
    let digits = rest
        .bytes()
        .take(max)
        .take_while(u8::is_ascii_digit)
        .count();
    if digits < min || digits == 0 {
        return None;
    }
    let value = rest[..digits].parse().ok()?;
    *rest = &rest[digits..];
    Some(value)
}

fn fraction_nanos(digits: &str) -> u32 {
    let mut padded: String = digits.chars().take(9).collect();
    while padded.len() < 9 {
        padded.push('0');
    }
    padded.parse().unwrap_or(0)
}

fn starts_with_ignore_case(text: &str, word: &str) -> bool {
    text.get(..word.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(word))
}

/// The civil date of a day count from 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The day count from 1970-01-01 of a civil date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(unix: i64, nanos: u32, zone: &str) -> GoTime {
        GoTime {
            unix,
            nanos,
            location: Location::load(zone).unwrap(),
        }
    }

    #[test]
    fn formats_with_go_layouts() {
        // 2009-11-10 23:00:00 UTC, Go's playground time.
        let t = at(1_257_894_000, 123_450_000, "UTC");
        let cases = [
            ("2006-01-02T15:04:05Z07:00", "2009-11-10T23:00:00Z"),
            (
                "2006-01-02 15:04:05.999999999 -0700 MST",
                "2009-11-10 23:00:00.12345 +0000 UTC",
            ),
            ("Mon Jan _2 15:04:05 2006", "Tue Nov 10 23:00:00 2009"),
            ("Monday, 02-Jan-06 3:04PM", "Tuesday, 10-Nov-09 11:00PM"),
            (
                "January 2, 2006 at 03:04:05.000 pm",
                "November 10, 2009 at 11:00:00.123 pm",
            ),
            ("002 __2 1/2", "314 314 11/10"),
            ("-07:00 -0700 -07 Z0700", "+00:00 +0000 +00 Z"),
        ];
        for (layout, expected) in cases {
            assert_eq!(t.format(layout), expected, "{layout}");
        }
        let tokyo = at(1_257_894_000, 0, "Asia/Tokyo");
        assert_eq!(
            tokyo.format("2006-01-02 15:04 MST -07:00"),
            "2009-11-11 08:00 JST +09:00"
        );
        let new_york = at(1_120_000_000, 0, "America/New_York");
        assert_eq!(new_york.format("15:04 MST"), "19:06 EDT");
        assert_eq!(
            GoTime::zero().format(STRING_LAYOUT),
            "0001-01-01 00:00:00 +0000 UTC"
        );
        assert_eq!(
            at(-1, 0, "UTC").format("2006-01-02 15:04:05"),
            "1969-12-31 23:59:59"
        );
    }

    #[test]
    fn parses_with_go_layouts() {
        let utc = Location::utc();
        let cases = [
            ("2006-01-02", "2009-11-10", 1_257_811_200, 0),
            (
                "2006-01-02T15:04:05Z07:00",
                "2009-11-10T23:00:00+01:00",
                1_257_890_400,
                0,
            ),
            (
                "2006-01-02T15:04:05Z07:00",
                "2009-11-10T23:00:00Z",
                1_257_894_000,
                0,
            ),
            (
                "2006-01-02 15:04:05",
                "2009-11-10 23:00:00.5",
                1_257_894_000,
                500_000_000,
            ),
            (
                "Jan _2 2006 3:04PM",
                "Nov 10 2009 11:00PM",
                1_257_894_000,
                0,
            ),
            ("02/01/06 15:04 MST", "10/11/09 23:00 UTC", 1_257_894_000, 0),
        ];
        for (layout, text, unix, nanos) in cases {
            let parsed = GoTime::parse(layout, text, &utc).unwrap();
            assert_eq!(
                (parsed.unix, parsed.nanos),
                (unix, nanos),
                "{layout} {text}"
            );
        }
        let tokyo = Location::load("Asia/Tokyo").unwrap();
        assert_eq!(
            GoTime::parse("2006-01-02 15:04", "2009-11-11 08:00", &tokyo)
                .unwrap()
                .unix,
            1_257_894_000
        );
        assert!(GoTime::parse("2006-01-02", "2009-13-10", &utc).is_err());
        assert!(GoTime::parse("2006-01-02", "yesterday", &utc).is_err());
        assert!(Location::load("Nowhere/Town").is_err());
        assert!(Location::load("../etc/passwd").is_err());
    }
}

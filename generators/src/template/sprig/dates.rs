//! sprig's date functions on Go times ([`GoTime`]): `now`, `date`, `dateInZone`/`date_in_zone`,
//! `htmlDate`, `htmlDateInZone`, `toDate`, `dateModify`/`date_modify`, `ago`, `unixEpoch`,
//! `duration`, `durationRound` and their `must*` twins. As in sprig, a date argument is a time
//! or an integer (Unix seconds); anything else means now. (An ApplicationSet using `now` changes
//! its Applications on every render, as in Argo CD.)

use std::sync::Arc;
use std::time::Duration;

use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error};

use super::super::go_time::{GoTime, Location};
use super::{fail, string_arg};
use crate::duration::{format_duration, parse_signed_duration};

/// The time a date argument stands for.
fn time_of(value: &Value) -> GoTime {
    if let Some(time) = value.downcast_object_ref::<GoTime>() {
        return time.clone();
    }
    match value.as_i64() {
        Some(unix) if value.is_integer() => GoTime {
            unix,
            nanos: 0,
            location: Location::local(),
        },
        _ => GoTime::now(),
    }
}

/// A time argument that must be a time (`unixEpoch`, `dateModify`).
fn time_arg(function: &str, value: &Value) -> Result<GoTime, Error> {
    value
        .downcast_object_ref::<GoTime>()
        .cloned()
        .ok_or_else(|| fail(function, format!("expected a time, got {}", value.kind())))
}

/// sprig's `dateInZone`: an unknown zone is UTC.
fn date_in_zone(layout: &str, date: &Value, zone: &str) -> String {
    let location = Location::load(zone).unwrap_or_else(|_| Location::utc());
    time_of(date).in_location(location).format(layout)
}

/// Go's `Duration.String()` of a signed number of nanoseconds.
fn signed_duration(nanos: i128) -> String {
    let length = Duration::from_nanos(u64::try_from(nanos.unsigned_abs()).unwrap_or(u64::MAX));
    let text = format_duration(length);
    if nanos < 0 { format!("-{text}") } else { text }
}

fn nanos_since(time: &GoTime) -> i128 {
    GoTime::now().unix_nanos() - time.unix_nanos()
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("now", || Value::from_object(GoTime::now()));
    env.add_function("date", |layout: Value, date: Value| {
        Ok::<_, Error>(Value::from(date_in_zone(
            &string_arg("date", &layout)?,
            &date,
            "Local",
        )))
    });
    for name in ["dateInZone", "date_in_zone"] {
        env.add_function(name, move |layout: Value, date: Value, zone: Value| {
            let zone = string_arg(name, &zone)?;
            Ok::<_, Error>(Value::from(date_in_zone(
                &string_arg(name, &layout)?,
                &date,
                &zone,
            )))
        });
    }
    env.add_function("htmlDate", |date: Value| {
        Value::from(date_in_zone("2006-01-02", &date, "Local"))
    });
    env.add_function("htmlDateInZone", |date: Value, zone: Value| {
        let zone = string_arg("htmlDateInZone", &zone)?;
        Ok::<_, Error>(Value::from(date_in_zone("2006-01-02", &date, &zone)))
    });
    for (name, must) in [("toDate", false), ("mustToDate", true)] {
        env.add_function(name, move |layout: Value, text: Value| {
            let local: Arc<Location> = Location::local();
            match GoTime::parse(
                &string_arg(name, &layout)?,
                &string_arg(name, &text)?,
                &local,
            ) {
                Ok(time) => Ok(Value::from_object(time)),
                Err(message) if must => Err(fail(name, message)),
                Err(_) => Ok(Value::from_object(GoTime::zero())),
            }
        });
    }
    for (name, must) in [
        ("dateModify", false),
        ("date_modify", false),
        ("mustDateModify", true),
    ] {
        env.add_function(name, move |modifier: Value, date: Value| {
            let time = time_arg(name, &date)?;
            match parse_signed_duration(&string_arg(name, &modifier)?) {
                Ok((negative, length)) => {
                    let nanos = i128::try_from(length.as_nanos()).unwrap_or(i128::MAX);
                    Ok(Value::from_object(time.add_nanos(if negative {
                        -nanos
                    } else {
                        nanos
                    })))
                }
                Err(error) if must => Err(fail(name, error)),
                Err(_) => Ok(date),
            }
        });
    }
    env.add_function("ago", |date: Value| {
        // Rounded to the second, as sprig rounds it.
        let nanos = nanos_since(&time_of(&date));
        let seconds = (nanos + nanos.signum() * 500_000_000) / 1_000_000_000;
        Value::from(signed_duration(seconds * 1_000_000_000))
    });
    env.add_function("unixEpoch", |date: Value| {
        Ok::<_, Error>(Value::from(time_arg("unixEpoch", &date)?.unix.to_string()))
    });
    env.add_function("duration", |seconds: Value| {
        let seconds = match seconds.kind() {
            ValueKind::String => seconds
                .as_str()
                .unwrap_or_default()
                .parse::<i64>()
                .unwrap_or(0),
            _ if seconds.is_integer() => seconds.as_i64().unwrap_or(0),
            _ => 0,
        };
        Value::from(signed_duration(i128::from(seconds) * 1_000_000_000))
    });
    env.add_function("durationRound", |value: Value| {
        let nanos: i128 = if let Some(time) = value.downcast_object_ref::<GoTime>() {
            nanos_since(time)
        } else if value.kind() == ValueKind::String {
            parse_signed_duration(value.as_str().unwrap_or_default()).map_or(0, |(_, length)| {
                i128::try_from(length.as_nanos()).unwrap_or(0)
            })
        } else if value.is_integer() {
            i128::from(value.as_i64().unwrap_or(0))
        } else {
            0
        };
        Value::from(round_duration(nanos.unsigned_abs()))
    });
}

/// sprig's `durationRound`: the largest whole unit (`2y`, `3mo`, `4d`, `5h`, `6m`, `7s`).
fn round_duration(nanos: u128) -> String {
    const SECOND: u128 = 1_000_000_000;
    let units: [(u128, &str); 6] = [
        (SECOND * 3_600 * 24 * 365, "y"),
        (SECOND * 3_600 * 24 * 30, "mo"),
        (SECOND * 3_600 * 24, "d"),
        (SECOND * 3_600, "h"),
        (SECOND * 60, "m"),
        (SECOND, "s"),
    ];
    units.iter().find(|(unit, _)| nanos > *unit).map_or_else(
        || "0s".to_string(),
        |(unit, name)| format!("{}{name}", nanos / unit),
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors, render};

    #[test]
    fn dates_format_and_parse_as_go() {
        check(&[
            (
                "{{ toDate \"2006-01-02\" \"2017-12-31\" | date \"02/01/2006\" }}",
                "31/12/2017",
            ),
            (
                "{{ dateInZone \"2006-01-02 15:04 MST\" (toDate \"2006-01-02T15:04:05Z07:00\" \"2009-11-10T23:00:00Z\") \"Asia/Tokyo\" }}",
                "2009-11-11 08:00 JST",
            ),
            (
                "{{ date_in_zone \"15:04\" 0 \"UTC\" }} {{ htmlDateInZone 86400 \"UTC\" }}",
                "00:00 1970-01-02",
            ),
            (
                "{{ toDate \"2006-01-02\" \"2017-12-31\" | unixEpoch }}",
                "1514678400",
            ),
            (
                "{{ toDate \"2006-01-02\" \"2017-12-31\" | dateModify \"-1.5h\" | date \"2006-01-02 15:04\" }}",
                "2017-12-30 22:30",
            ),
            (
                "{{ toDate \"2006-01-02\" \"2017-12-31\" | date_modify \"bad\" | date \"2006-01-02\" }}",
                "2017-12-31",
            ),
            (
                "{{ toDate \"2006-01-02\" \"not a date\" }}",
                "0001-01-01 00:00:00 +0000 UTC",
            ),
            (
                "{{ toDate \"2006-01-02 15:04\" \"2017-12-31 10:20\" }}",
                "2017-12-31 10:20:00 +0000 UTC",
            ),
            (
                "{{ duration \"95\" }} {{ duration 3600 }} {{ duration \"x\" }}",
                "1m35s 1h0m0s 0s",
            ),
            (
                "{{ durationRound \"2h10m5s\" }} {{ durationRound \"400h\" }} {{ durationRound \"9000h\" }} {{ durationRound \"1s\" }}",
                "2h 16d 1y 0s",
            ),
            (
                "{{ htmlDate (toDate \"2006-01-02\" \"2020-02-29\") }}",
                "2020-02-29",
            ),
        ]);
        check_errors(&[
            (
                "{{ mustToDate \"2006-01-02\" \"oops\" }}",
                "mustToDate: parsing time \"oops\"",
            ),
            (
                "{{ mustDateModify \"1d\" now }}",
                "mustDateModify: invalid duration \"1d\"",
            ),
            ("{{ unixEpoch \"x\" }}", "unixEpoch: expected a time"),
        ]);
        let year: i64 = render("{{ now | date \"2006\" }}")
            .unwrap()
            .parse()
            .unwrap();
        assert!(year >= 2024);
        assert_eq!(render("{{ ago now }}").unwrap(), "0s");
        assert_eq!(
            render("{{ now | dateModify \"-2h\" | ago }}").unwrap(),
            "2h0m0s"
        );
        assert_eq!(
            render("{{ durationRound (now | dateModify \"-49h\") }}").unwrap(),
            "2d"
        );
    }
}

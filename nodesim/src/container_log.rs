//! What the simulated containers print, and the kubelet's log request over it. A container's log
//! is the lines of its pod's [`LOG_ANNOTATION`] (or, for one container, `LOG_ANNOTATION.NAME`),
//! each stamped with the time the simulator first saw it: a test appends lines by patching the
//! annotation. The previous (terminated) instance prints [`PREVIOUS_LOG_ANNOTATION`]'s lines.
//! [`LogRequest`] reads the kubelet's `/containerLogs` query (`follow`, `previous`, `tailLines`,
//! `timestamps`, `sinceSeconds`, `sinceTime`, `limitBytes`) and [`LogRequest::select`] picks
//! and formats lines as the kubelet does. Pure: the caller supplies the clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use flotilla::web::routes::percent_decode as decode;
use k8s_openapi::jiff::{Timestamp, ToSpan as _};

/// The running container's log lines (one per line of the value), for every container.
pub const LOG_ANNOTATION: &str = "sim.flotilla.dev/log";
/// The previous (terminated) instance's log lines, for every container.
pub const PREVIOUS_LOG_ANNOTATION: &str = "sim.flotilla.dev/previous-log";

/// One line a container printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// When the simulator first saw the line.
    pub time: Timestamp,
    /// The line, without its end of line.
    pub text: String,
}

/// The lines of `annotation` that apply to `container`: `annotation.CONTAINER` if the pod has
/// it, else `annotation`; `None` when it has neither.
#[must_use]
pub fn written<'a>(
    annotations: &'a BTreeMap<String, String>,
    annotation: &str,
    container: &str,
) -> Option<Vec<&'a str>> {
    annotations
        .get(&format!("{annotation}.{container}"))
        .or_else(|| annotations.get(annotation))
        .map(|value| value.lines().collect())
}

/// Appends to `log` the lines of `written` beyond those it holds, stamped `now` (lines are only
/// ever added: a rewritten annotation adds what it has beyond the count already printed).
pub fn append(log: &mut Vec<LogLine>, written: &[&str], now: Timestamp) {
    log.extend(written.iter().skip(log.len()).map(|text| LogLine {
        time: now,
        text: (*text).to_owned(),
    }));
}

/// A query parameter the kubelet would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid query parameter {name}={value:?}: {why}")]
pub struct LogQueryError {
    /// The parameter.
    pub name: String,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// A `/containerLogs` request's options (Kubernetes' `PodLogOptions`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogRequest {
    /// Keep the answer open and send lines as they are printed.
    pub follow: bool,
    /// The previous (terminated) instance's log.
    pub previous: bool,
    /// Only the last this many lines.
    pub tail_lines: Option<usize>,
    /// Each line prefixed with its RFC 3339 time (nanoseconds) and a space.
    pub timestamps: bool,
    /// Only lines printed within this many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines printed at or after this time.
    pub since_time: Option<Timestamp>,
    /// At most this many bytes (the kubelet cuts inside a line).
    pub limit_bytes: Option<usize>,
}

impl LogRequest {
    /// The options of a form-encoded `query` (without the `?`). Unknown parameters are left
    /// alone, as the kubelet leaves them.
    ///
    /// # Errors
    /// [`LogQueryError`] naming a parameter whose value does not parse.
    pub fn parse(query: &str) -> Result<Self, LogQueryError> {
        let mut request = Self::default();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value);
            let invalid = |why| LogQueryError {
                name: name.to_owned(),
                value: value.clone(),
                why,
            };
            let flag = || match value.as_str() {
                "" | "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(invalid("not a boolean")),
            };
            let count = || value.parse::<usize>().map_err(|_| invalid("not a count"));
            match name {
                "follow" => request.follow = flag()?,
                "previous" => request.previous = flag()?,
                "timestamps" => request.timestamps = flag()?,
                "tailLines" => request.tail_lines = Some(count()?),
                "limitBytes" => request.limit_bytes = Some(count()?),
                "sinceSeconds" => {
                    let seconds = value
                        .parse::<i64>()
                        .ok()
                        .filter(|seconds| *seconds > 0)
                        .ok_or_else(|| invalid("not a positive number of seconds"))?;
                    request.since_seconds = Some(seconds);
                }
                "sinceTime" => {
                    request.since_time = Some(
                        value
                            .parse::<Timestamp>()
                            .map_err(|_| invalid("not an RFC 3339 time"))?,
                    );
                }
                _ => {}
            }
        }
        Ok(request)
    }

    /// The earliest time a line may have to be shown, at `now`.
    fn since(&self, now: Timestamp) -> Option<Timestamp> {
        let by_seconds = self
            .since_seconds
            .and_then(|seconds| now.checked_sub(seconds.seconds()).ok());
        by_seconds.max(self.since_time)
    }

    /// The index of the first of `lines` to send at `now`: after the `since` filter, the last
    /// `tailLines` of what is left.
    #[must_use]
    pub fn first(&self, lines: &[LogLine], now: Timestamp) -> usize {
        let since = self.since(now);
        let from = lines
            .iter()
            .position(|line| since.is_none_or(|since| line.time >= since))
            .unwrap_or(lines.len());
        let tail = self.tail_lines.unwrap_or(usize::MAX);
        from.max(lines.len().saturating_sub(tail))
    }

    /// `lines` as the kubelet sends them: one per line, with their time if asked.
    #[must_use]
    pub fn format(&self, lines: &[LogLine]) -> String {
        let mut out = String::new();
        for line in lines {
            if self.timestamps {
                let _ = write!(out, "{:.9} ", line.time);
            }
            out.push_str(&line.text);
            out.push('\n');
        }
        out
    }

    /// What the answer to this request holds of `lines` at `now` (before following).
    #[must_use]
    pub fn select(&self, lines: &[LogLine], now: Timestamp) -> String {
        let mut out = self.format(&lines[self.first(lines, now)..]);
        if let Some(limit) = self.limit_bytes {
            let mut cut = limit.min(out.len());
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    fn lines() -> Vec<LogLine> {
        let mut log = Vec::new();
        append(&mut log, &["one", "two"], at(0));
        append(&mut log, &["one", "two", "three"], at(10));
        log
    }

    #[test]
    fn lines_come_from_the_containers_annotation_or_the_pods_and_are_only_appended() {
        let annotations: BTreeMap<String, String> =
            [(LOG_ANNOTATION, "a\nb"), ("sim.flotilla.dev/log.side", "s")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        assert_eq!(
            written(&annotations, LOG_ANNOTATION, "app"),
            Some(vec!["a", "b"])
        );
        assert_eq!(
            written(&annotations, LOG_ANNOTATION, "side"),
            Some(vec!["s"])
        );
        assert_eq!(written(&annotations, PREVIOUS_LOG_ANNOTATION, "app"), None);
        let log = lines();
        assert_eq!(
            log.iter()
                .map(|l| (l.text.as_str(), l.time))
                .collect::<Vec<_>>(),
            [("one", at(0)), ("two", at(0)), ("three", at(10))]
        );
    }

    #[test]
    fn tail_since_timestamps_and_limit_select_as_the_kubelet_does() {
        let log = lines();
        let now = at(12);
        let select = |query: &str| LogRequest::parse(query).unwrap().select(&log, now);
        assert_eq!(select(""), "one\ntwo\nthree\n");
        assert_eq!(select("tailLines=2"), "two\nthree\n");
        assert_eq!(select("tailLines=0"), "");
        assert_eq!(select("sinceSeconds=5"), "three\n");
        assert_eq!(select("sinceTime=2023-11-14T22%3A13%3A25Z"), "three\n");
        assert_eq!(select("limitBytes=5"), "one\nt");
        assert_eq!(
            select("timestamps=true&tailLines=1"),
            "2023-11-14T22:13:30.000000000Z three\n"
        );
        let request = LogRequest::parse("follow=true&previous=true").unwrap();
        assert!(request.follow && request.previous);
        assert_eq!(
            LogRequest::parse("tailLines=x").unwrap_err().to_string(),
            "invalid query parameter tailLines=\"x\": not a count"
        );
        assert!(LogRequest::parse("sinceSeconds=0").is_err());
    }
}

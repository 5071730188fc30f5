//! The analysis of a RollingSync step (`analysis`, a Flotilla extension): once every Application
//! of the step is Healthy on its target revisions and the bake, if any, is over, a check must
//! pass before the step completes — a Job that must succeed, or an HTTP GET that must answer
//! 2xx (and carry a value at a JSON path), tried every `interval` until it has failed
//! `failureLimit` times, or a metric measured `count` times ([`super::metric`]: a Prometheus
//! query or a JSON endpoint, judged by conditions). A failed analysis fails the step, so
//! `onFailure` applies.
//!
//! Pure: the controller (and the simulator) asks [`probes`] what to look at before a pass,
//! looks — reads the Job, sends the GET, judged by [`judge_answer`] — and hands the results
//! to the step function as [`AnalysisObservation`]s; the step's record (`status.rolloutSteps`)
//! keeps the Job's name, the failures, the measurements and the next attempt, so a restart
//! resumes the same
//! analysis and never runs its Job twice (the name is derived from the ApplicationSet, the step
//! and the target revisions).
//!
//! A Job analysis runs on the destination cluster of the step's Applications: one Job, of the
//! same name and in the same namespace, on each distinct cluster they name (recorded in
//! `analysis.clusters`), and it passes only when every one of them succeeded; one failed Job
//! fails it.

use std::time::Duration;

use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::config::RolloutConfig;
use super::input::RolloutInput;
use super::json_path::JsonPath;
use super::metric::{MetricCheck, MetricError, Verdict};
use super::step_record::Gate;
use crate::api::application_set::{RollingSyncStep, StepAnalysis};
use crate::api::application_set_status::{AnalysisCluster, AnalysisStatus, RolloutStepStatus};
use crate::stable_hash::stable_hash;
use flotilla_generators::duration::{
    DurationError, DurationProblem, format_duration, parse_duration,
};

/// How long between two attempts of an HTTP analysis without `interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// How many failed attempts fail an HTTP analysis without `failureLimit`.
pub const DEFAULT_FAILURE_LIMIT: u32 = 3;
/// How much of an answer a message quotes.
const QUOTED: usize = 120;

/// A validated analysis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalysisCheck {
    /// A Job in `namespace` (unset: the destination namespace of the step's first Application).
    Job { namespace: Option<String> },
    /// An HTTP GET.
    Http(HttpCheck),
    /// A metric measured `count` times (Prometheus, or a JSON endpoint).
    Metric(Box<MetricCheck>),
}

/// A validated HTTP analysis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpCheck {
    pub url: String,
    /// The dotted path (`status.phase`); empty: none.
    pub json_path: JsonPath,
    /// The value the field must have.
    pub value: Option<String>,
    pub interval: Duration,
    pub failure_limit: u32,
}

/// Why an `analysis` cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    #[error("set exactly one of job, http, prometheus and web")]
    NotOneKind,
    #[error("http.url {0:?} is not an http:// or https:// URL")]
    Url(String),
    #[error("http.jsonPath {0:?} is not a dotted path of field names (status.phase)")]
    JsonPath(String),
    #[error("http.value needs http.jsonPath: the field it is compared with")]
    ValueWithoutPath,
    #[error("http.interval: {0}")]
    Interval(#[source] DurationError),
    #[error("http.failureLimit must be at least 1")]
    FailureLimit,
    #[error(transparent)]
    Metric(#[from] MetricError),
}

/// An `interval`: a duration above zero; unset, [`DEFAULT_INTERVAL`].
pub(super) fn positive_interval(text: Option<&str>) -> Result<Duration, DurationError> {
    let Some(text) = text else {
        return Ok(DEFAULT_INTERVAL);
    };
    match parse_duration(text)? {
        Duration::ZERO => Err(DurationError::new(text, DurationProblem::NotPositive)),
        interval => Ok(interval),
    }
}

impl AnalysisCheck {
    /// Validates a step's `analysis`.
    ///
    /// # Errors
    /// Not exactly one kind, a URL that is not http(s), an empty path segment, a value without
    /// a path, an interval that is not a positive duration, a failure limit of 0, and a metric
    /// analysis' errors ([`MetricError`]).
    pub fn from_spec(spec: &StepAnalysis) -> Result<Self, AnalysisError> {
        match (&spec.job, &spec.http, &spec.prometheus, &spec.web) {
            (Some(job), None, None, None) => Ok(Self::Job {
                namespace: job.namespace.clone(),
            }),
            (None, None, Some(prometheus), None) => {
                Ok(Self::Metric(Box::new(MetricCheck::prometheus(prometheus)?)))
            }
            (None, None, None, Some(web)) => Ok(Self::Metric(Box::new(MetricCheck::web(web)?))),
            (None, Some(http), None, None) => {
                let url = http.url.trim();
                let rest = url
                    .strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"));
                if rest.is_none_or(str::is_empty) {
                    return Err(AnalysisError::Url(http.url.clone()));
                }
                let json_path = match http.json_path.as_deref().map(str::trim) {
                    None => JsonPath::default(),
                    Some(path) => JsonPath::parse(path)
                        .ok_or_else(|| AnalysisError::JsonPath(path.to_owned()))?,
                };
                if http.value.is_some() && json_path.is_empty() {
                    return Err(AnalysisError::ValueWithoutPath);
                }
                let interval =
                    positive_interval(http.interval.as_deref()).map_err(AnalysisError::Interval)?;
                let failure_limit = http.failure_limit.unwrap_or(DEFAULT_FAILURE_LIMIT);
                if failure_limit == 0 {
                    return Err(AnalysisError::FailureLimit);
                }
                Ok(Self::Http(HttpCheck {
                    url: url.to_owned(),
                    json_path,
                    value: http.value.clone(),
                    interval,
                    failure_limit,
                }))
            }
            _ => Err(AnalysisError::NotOneKind),
        }
    }

    /// `Job`, `HTTP GET <url>`, `Prometheus <address>` or `web GET <url>`, for reports.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Job { .. } => "Job".to_owned(),
            Self::Http(check) => format!("HTTP GET {}", check.url),
            Self::Metric(check) => check.describe(),
        }
    }
}

/// What the controller saw of a step's analysis before a pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisObservation {
    /// The step, 1-based.
    pub step: usize,
    pub outcome: AnalysisOutcome,
    /// What was seen, e.g. `HTTP 500: {"ready":false}` or the Job's failure message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The cluster whose Job was read (none for an HTTP analysis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<AnalysisCluster>,
}

/// The result of one look at an analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnalysisOutcome {
    /// The Job succeeded; the GET answered as required.
    Passed,
    /// The Job failed; the GET did not answer as required (one attempt); a measurement failed.
    Failed,
    /// A measurement of a metric analysis was neither successful nor failed, or could not be
    /// taken.
    Inconclusive,
    /// The Job exists and runs; an HTTP attempt without a verdict yet (not counted).
    Running,
}

/// What the controller must look at before a pass: the Job of each Job analysis in progress,
/// and the GET of each HTTP analysis whose next attempt is due at `now`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Read the Job `namespace/name` on `cluster`.
    Job {
        step: usize,
        cluster: AnalysisCluster,
        namespace: String,
        name: String,
    },
    /// Send the GET and judge the answer with [`judge_answer`].
    Http { step: usize, check: HttpCheck },
    /// Take a measurement ([`MetricCheck::request`]) and judge it with
    /// [`MetricCheck::measure`].
    Metric {
        step: usize,
        check: Box<MetricCheck>,
    },
}

/// A Job the controller must make sure exists now (created if absent: its name makes the
/// creation happen once).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisJob {
    /// The step, 1-based.
    pub step: usize,
    /// The destination cluster it runs on.
    pub cluster: AnalysisCluster,
    pub namespace: String,
    pub name: String,
    pub spec: JobSpec,
}

/// The probes for the analyses in progress in `input`'s prior records (none for an invalid
/// strategy).
#[must_use]
pub fn probes(input: &RolloutInput) -> Vec<Probe> {
    let Ok(config) = RolloutConfig::from_strategy(&input.strategy) else {
        return Vec::new();
    };
    input
        .prior_step_status
        .iter()
        .filter(|record| record.failed_at.is_none())
        .flat_map(|record| {
            let Some(analysis) = record.analysis.as_ref().filter(|a| a.passed_at.is_none()) else {
                return Vec::new();
            };
            let Some((step, check)) = usize::try_from(record.step).ok().and_then(|step| {
                Some((
                    step,
                    config.steps.get(step.checked_sub(1)?)?.analysis.as_ref()?,
                ))
            }) else {
                return Vec::new();
            };
            let due = analysis
                .next_attempt_at
                .as_ref()
                .is_none_or(|at| at.0 <= input.now);
            match check {
                AnalysisCheck::Job { .. } => {
                    let Some((namespace, name)) = analysis.job.split_once('/') else {
                        return Vec::new();
                    };
                    analysis
                        .clusters
                        .iter()
                        .map(|cluster| Probe::Job {
                            step,
                            cluster: cluster.clone(),
                            namespace: namespace.to_owned(),
                            name: name.to_owned(),
                        })
                        .collect()
                }
                AnalysisCheck::Http(check) if due => vec![Probe::Http {
                    step,
                    check: check.clone(),
                }],
                AnalysisCheck::Metric(check) if due => vec![Probe::Metric {
                    step,
                    check: check.clone(),
                }],
                AnalysisCheck::Http(_) | AnalysisCheck::Metric(_) => Vec::new(),
            }
        })
        .collect()
}

/// What a Job analysis on `clusters` shows as one observation, from what was seen of its Job
/// on each: failed when one failed (naming the cluster), passed when all succeeded, none when
/// one was not found (so the missing Jobs are created; existing ones are kept), else running.
#[must_use]
pub fn combine_jobs(
    clusters: &[AnalysisCluster],
    observed: &[&AnalysisObservation],
) -> Option<AnalysisObservation> {
    let step = observed.first()?.step;
    let seen: Vec<Option<&AnalysisObservation>> = clusters
        .iter()
        .map(|cluster| {
            observed
                .iter()
                .copied()
                .find(|o| o.cluster.as_ref() == Some(cluster))
        })
        .collect();
    let on = |cluster: &AnalysisCluster, message: &str| {
        if clusters.len() == 1 {
            message.to_owned()
        } else {
            format!("on {cluster}{}", detail(message))
        }
    };
    let with = |outcome, message| {
        Some(AnalysisObservation {
            step,
            outcome,
            message,
            cluster: None,
        })
    };
    if let Some((cluster, failed)) = clusters.iter().zip(&seen).find_map(|(c, o)| {
        o.filter(|o| o.outcome == AnalysisOutcome::Failed)
            .map(|o| (c, o))
    }) {
        return with(AnalysisOutcome::Failed, on(cluster, &failed.message));
    }
    if clusters.is_empty() || seen.iter().any(Option::is_none) {
        return None;
    }
    if seen
        .iter()
        .flatten()
        .all(|o| o.outcome == AnalysisOutcome::Passed)
    {
        let message = if clusters.len() == 1 {
            String::new()
        } else {
            format!("on {} clusters", clusters.len())
        };
        return with(AnalysisOutcome::Passed, message);
    }
    let running: Vec<String> = clusters
        .iter()
        .zip(seen.iter().flatten())
        .filter(|(_, o)| o.outcome == AnalysisOutcome::Running)
        .map(|(c, o)| on(c, &o.message))
        .collect();
    with(AnalysisOutcome::Running, running.join("; "))
}

/// Judges one answer of an HTTP analysis: `(passed, message)`. It passes on a 2xx status whose
/// body, when the check has a `jsonPath`, is JSON with a field there (equal to `value`, if set;
/// a string compares as is, anything else as its JSON text).
#[must_use]
pub fn judge_answer(check: &HttpCheck, status: u16, body: &[u8]) -> (bool, String) {
    let quoted = || {
        let text: String = String::from_utf8_lossy(body).chars().take(QUOTED).collect();
        text.trim().to_owned()
    };
    if !(200..300).contains(&status) {
        return (false, format!("HTTP {status}: {}", quoted()));
    }
    if check.json_path.is_empty() {
        return (true, format!("HTTP {status}"));
    }
    let path = check.json_path.text();
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (false, format!("HTTP {status}, not JSON: {}", quoted()));
    };
    let Some(found) = check.json_path.find(&json) else {
        return (false, format!("HTTP {status}, no field {path}"));
    };
    let text = match found {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match &check.value {
        Some(value) if *value != text => (
            false,
            format!("HTTP {status}, {path} is {text:?}, not {value:?}"),
        ),
        _ => (true, format!("HTTP {status}, {path} is {text:?}")),
    }
}

/// The name of a step's analysis Job: the ApplicationSet's name (cut to fit), the step, and a
/// hash of the step's target revisions — one Job per rollout of the step, the same after a
/// restart.
#[must_use]
pub fn job_name(appset: &str, step: usize, revisions: &[&str]) -> String {
    let mut revisions: Vec<&str> = revisions.to_vec();
    revisions.sort_unstable();
    revisions.dedup();
    let hash = stable_hash(format!("{appset}\n{step}\n{}", revisions.join("\n")).as_bytes());
    let suffix = format!("-analysis-{step}-{:010x}", hash & 0xff_ffff_ffff);
    let room = 63usize.saturating_sub(suffix.len());
    let prefix: String = appset.chars().take(room).collect();
    format!("{}{suffix}", prefix.trim_end_matches(['-', '.']))
}

/// Where a step's analysis stands, for the gate.
pub(super) struct Analysed {
    pub gate: Gate,
    /// The Job to create now, when a Job analysis was not seen.
    pub create: bool,
}

impl RolloutStepStatus {
    /// Moves the record's analysis along once the step is otherwise complete. `job`: the Job's
    /// `namespace/name` and the clusters it runs on, for a Job analysis; `observed`: what the
    /// controller saw before this pass (for a Job analysis, [`combine_jobs`]'s; none: a Job
    /// was not found, or no attempt was due).
    pub(super) fn analyse(
        &mut self,
        check: &AnalysisCheck,
        job: impl FnOnce() -> (String, Vec<AnalysisCluster>),
        observed: Option<&AnalysisObservation>,
        now: Timestamp,
    ) -> Analysed {
        let open = |since, next| Analysed {
            gate: Gate::Analysing { since, next },
            create: false,
        };
        if self
            .analysis
            .as_ref()
            .is_some_and(|a| a.passed_at.is_some())
        {
            return Analysed {
                gate: Gate::Complete,
                create: false,
            };
        }
        let Some(analysis) = self.analysis.as_mut() else {
            let ((job, clusters), next_attempt_at) = match check {
                AnalysisCheck::Job { .. } => (job(), None),
                AnalysisCheck::Http(_) | AnalysisCheck::Metric(_) => {
                    ((String::new(), Vec::new()), Some(Time(now)))
                }
            };
            let message = match check {
                AnalysisCheck::Job { .. } => format!("Job {job} created"),
                AnalysisCheck::Http(check) => format!("first GET {} now", check.url),
                AnalysisCheck::Metric(check) => {
                    format!("first measurement of {} now", check.describe())
                }
            };
            self.analysis = Some(AnalysisStatus {
                started_at: Time(now),
                job,
                clusters,
                failures: 0,
                measurements: 0,
                inconclusive: 0,
                next_attempt_at,
                passed_at: None,
                message,
            });
            return Analysed {
                gate: Gate::Analysing {
                    since: now,
                    next: Some(now),
                },
                create: matches!(check, AnalysisCheck::Job { .. }),
            };
        };
        let since = analysis.started_at.0;
        match check {
            AnalysisCheck::Job { .. } => match observed.map(|o| (o.outcome, &o.message)) {
                Some((AnalysisOutcome::Passed, message)) => {
                    analysis.passed_at = Some(Time(now));
                    analysis.message = format!("Job {} succeeded{}", analysis.job, detail(message));
                    Analysed {
                        gate: Gate::Complete,
                        create: false,
                    }
                }
                Some((AnalysisOutcome::Failed | AnalysisOutcome::Inconclusive, message)) => {
                    analysis.message = format!("Job {} failed{}", analysis.job, detail(message));
                    self.failure = format!("analysis {}", analysis.message);
                    self.failed_at = Some(Time(now));
                    Analysed {
                        gate: Gate::Failed,
                        create: false,
                    }
                }
                Some((AnalysisOutcome::Running, message)) => {
                    analysis.message = format!("Job {} running{}", analysis.job, detail(message));
                    open(since, None)
                }
                None => {
                    analysis.message = format!("Job {} created", analysis.job);
                    Analysed {
                        create: true,
                        ..open(since, None)
                    }
                }
            },
            AnalysisCheck::Http(check) => {
                let due = analysis
                    .next_attempt_at
                    .as_ref()
                    .is_none_or(|at| at.0 <= now);
                match observed.filter(|_| due).map(|o| (o.outcome, &o.message)) {
                    Some((AnalysisOutcome::Passed, message)) => {
                        analysis.passed_at = Some(Time(now));
                        analysis.next_attempt_at = None;
                        analysis.message = format!("GET {} passed: {message}", check.url);
                        Analysed {
                            gate: Gate::Complete,
                            create: false,
                        }
                    }
                    Some((AnalysisOutcome::Running, message)) => {
                        // No verdict yet (the simulator's `after:`): not a failure.
                        analysis.message = format!("GET {}: {message}", check.url);
                        let next = now.checked_add(check.interval).unwrap_or(Timestamp::MAX);
                        analysis.next_attempt_at = Some(Time(next));
                        open(since, Some(next))
                    }
                    Some((AnalysisOutcome::Failed | AnalysisOutcome::Inconclusive, message)) => {
                        analysis.failures += 1;
                        analysis.message = format!(
                            "GET {} failed ({}/{}): {message}",
                            check.url, analysis.failures, check.failure_limit
                        );
                        if analysis.failures >= check.failure_limit {
                            analysis.next_attempt_at = None;
                            self.failure = format!("analysis {}", analysis.message);
                            self.failed_at = Some(Time(now));
                            return Analysed {
                                gate: Gate::Failed,
                                create: false,
                            };
                        }
                        let next = now.checked_add(check.interval).unwrap_or(Timestamp::MAX);
                        analysis.next_attempt_at = Some(Time(next));
                        open(since, Some(next))
                    }
                    None => open(since, analysis.next_attempt_at.as_ref().map(|t| t.0)),
                }
            }
            AnalysisCheck::Metric(check) => {
                let due = analysis
                    .next_attempt_at
                    .as_ref()
                    .is_none_or(|at| at.0 <= now);
                let Some((outcome, message)) =
                    observed.filter(|_| due).map(|o| (o.outcome, &o.message))
                else {
                    return open(since, analysis.next_attempt_at.as_ref().map(|t| t.0));
                };
                let next = now.checked_add(check.interval).unwrap_or(Timestamp::MAX);
                if outcome == AnalysisOutcome::Running {
                    // No verdict yet (the simulator's `after:`): not a measurement.
                    analysis.message = format!("{}: {message}", check.describe());
                    analysis.next_attempt_at = Some(Time(next));
                    return open(since, Some(next));
                }
                analysis.measurements += 1;
                match outcome {
                    AnalysisOutcome::Failed => analysis.failures += 1,
                    AnalysisOutcome::Inconclusive => analysis.inconclusive += 1,
                    AnalysisOutcome::Passed | AnalysisOutcome::Running => {}
                }
                analysis.message = format!(
                    "{} measurement {}/{}: {message}",
                    check.describe(),
                    analysis.measurements,
                    check.count
                );
                match check.verdict(
                    analysis.measurements,
                    analysis.failures,
                    analysis.inconclusive,
                ) {
                    Verdict::Passed => {
                        analysis.passed_at = Some(Time(now));
                        analysis.next_attempt_at = None;
                        Analysed {
                            gate: Gate::Complete,
                            create: false,
                        }
                    }
                    Verdict::Failed(why) => {
                        analysis.next_attempt_at = None;
                        analysis.message = format!("{}; {why}", analysis.message);
                        self.failure = format!("analysis {}", analysis.message);
                        self.failed_at = Some(Time(now));
                        Analysed {
                            gate: Gate::Failed,
                            create: false,
                        }
                    }
                    Verdict::Measuring => {
                        analysis.next_attempt_at = Some(Time(next));
                        open(since, Some(next))
                    }
                }
            }
        }
    }
}

/// `": message"`, or nothing.
fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

/// The analysis of `step`, validated (for [`super::config`]).
///
/// # Errors
/// See [`AnalysisCheck::from_spec`].
pub(super) fn of_step(step: &RollingSyncStep) -> Result<Option<AnalysisCheck>, AnalysisError> {
    step.analysis
        .as_ref()
        .map(AnalysisCheck::from_spec)
        .transpose()
}

/// `every 10s, at most 3 failures`, for reports.
#[must_use]
pub fn retry_text(check: &HttpCheck) -> String {
    format!(
        "every {}, at most {} failure(s)",
        format_duration(check.interval),
        check.failure_limit
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::application_set::HttpAnalysis;

    fn http(json_path: Option<&str>, value: Option<&str>) -> StepAnalysis {
        StepAnalysis {
            http: Some(HttpAnalysis {
                url: "https://status.example.com/ready".into(),
                json_path: json_path.map(str::to_owned),
                value: value.map(str::to_owned),
                ..HttpAnalysis::default()
            }),
            ..StepAnalysis::default()
        }
    }

    fn check(json_path: Option<&str>, value: Option<&str>) -> HttpCheck {
        match AnalysisCheck::from_spec(&http(json_path, value)) {
            Ok(AnalysisCheck::Http(check)) => check,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_answer_passes_on_2xx_and_the_value_at_its_path() {
        let plain = check(None, None);
        assert_eq!(plain.interval, DEFAULT_INTERVAL);
        assert_eq!(plain.failure_limit, DEFAULT_FAILURE_LIMIT);
        assert_eq!(judge_answer(&plain, 204, b""), (true, "HTTP 204".into()));
        assert_eq!(
            judge_answer(&plain, 500, b" boom \n"),
            (false, "HTTP 500: boom".into())
        );
        let phase = check(Some("$.status.phase"), Some("Ready"));
        assert_eq!(phase.json_path.text(), "status.phase");
        let body = br#"{"status": {"phase": "Ready"}}"#;
        assert_eq!(
            judge_answer(&phase, 200, body),
            (true, r#"HTTP 200, status.phase is "Ready""#.into())
        );
        assert_eq!(
            judge_answer(&phase, 200, br#"{"status": {"phase": "Starting"}}"#),
            (
                false,
                r#"HTTP 200, status.phase is "Starting", not "Ready""#.into()
            )
        );
        assert_eq!(
            judge_answer(&phase, 200, b"<html>"),
            (false, "HTTP 200, not JSON: <html>".into())
        );
        assert_eq!(
            judge_answer(&phase, 200, b"{}"),
            (false, "HTTP 200, no field status.phase".into())
        );
        let number = check(Some("checks.1.ok"), Some("true"));
        assert!(judge_answer(&number, 200, br#"{"checks": [{}, {"ok": true}]}"#).0);
        let any = check(Some("version"), None);
        assert!(judge_answer(&any, 200, br#"{"version": 3}"#).0);
    }

    #[test]
    fn a_bad_analysis_is_refused_naming_the_field() {
        let refused = |spec: StepAnalysis| AnalysisCheck::from_spec(&spec).unwrap_err().to_string();
        assert_eq!(
            refused(StepAnalysis::default()),
            "set exactly one of job, http, prometheus and web"
        );
        let mut ftp = http(None, None);
        if let Some(h) = ftp.http.as_mut() {
            h.url = "ftp://x".into();
        }
        assert_eq!(
            refused(ftp),
            "http.url \"ftp://x\" is not an http:// or https:// URL"
        );
        assert!(refused(http(Some("a..b"), None)).starts_with("http.jsonPath \"a..b\""));
        assert_eq!(
            refused(http(None, Some("x"))),
            "http.value needs http.jsonPath: the field it is compared with"
        );
        let mut zero = http(None, None);
        if let Some(h) = zero.http.as_mut() {
            h.failure_limit = Some(0);
        }
        assert_eq!(refused(zero), "http.failureLimit must be at least 1");
        let mut instant = http(None, None);
        if let Some(h) = instant.http.as_mut() {
            h.interval = Some("0s".into());
        }
        assert!(refused(instant).starts_with("http.interval: "));
    }

    #[test]
    fn job_names_are_stable_short_and_per_revision() {
        let a = job_name("shop", 2, &["abc", "def"]);
        assert_eq!(a, job_name("shop", 2, &["def", "abc", "abc"]));
        assert_ne!(a, job_name("shop", 2, &["abc"]));
        assert_ne!(a, job_name("shop", 3, &["abc", "def"]));
        let long = job_name(&"x".repeat(100), 12, &["abc"]);
        assert!(long.len() <= 63 && long.contains("-analysis-12-"), "{long}");
        assert!(job_name("a-b-", 1, &[]).starts_with("a-b-analysis-1-"));
    }
}

//! Metric analyses of a RollingSync step (`analysis.prometheus`, `analysis.web`; Flotilla
//! extensions after Argo Rollouts' metrics): a query measured every `interval`, `count` times,
//! each measurement's `result` judged by `successCondition` / `failureCondition`
//! ([`super::condition`]); more failed measurements than `failureLimit` fail the analysis, more
//! inconclusive ones than `inconclusiveLimit` fail it as inconclusive, and it passes once
//! `count` measurements were taken within both limits.
//!
//! Pure: [`MetricCheck::request`] says what to GET, the shell sends it (with the credentials
//! its Secret holds, which never reach this module), and [`MetricCheck::measure`] judges the
//! answer. A measurement that got no usable answer (no connection, not 2xx, not the expected
//! JSON, a condition that cannot be evaluated, such as `result[0]` of an empty result) is
//! inconclusive: a metric that cannot be read is never taken as good or bad.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::analysis::{AnalysisOutcome, positive_interval};
use super::condition::{Condition, ConditionError};
use super::json_path::JsonPath;
use crate::api::application_set::{MetricMeasurement, PrometheusAnalysis, WebAnalysis};
use flotilla_generators::duration::{DurationError, format_duration};

/// How many measurements a metric analysis without `count` takes.
pub const DEFAULT_COUNT: u32 = 1;
/// How much of an answer a message quotes.
const QUOTED: usize = 120;

/// A validated metric analysis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricCheck {
    pub source: MetricSource,
    #[serde(skip)]
    pub success: Option<Condition>,
    #[serde(skip)]
    pub failure: Option<Condition>,
    pub interval: Duration,
    pub count: u32,
    pub failure_limit: u32,
    pub inconclusive_limit: u32,
}

/// What a metric analysis measures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MetricSource {
    /// An instant query of a Prometheus server.
    Prometheus {
        address: String,
        query: String,
        /// The Secret holding `token`, or `username` and `password`.
        credentials_secret: Option<String>,
    },
    /// A JSON endpoint.
    Web {
        url: String,
        json_path: JsonPath,
        /// The Secret whose entries are the request's headers.
        headers_secret: Option<String>,
    },
}

/// The GET a measurement sends (without credentials: the shell adds them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricRequest {
    pub url: String,
    /// The Secret to read the credentials (Prometheus) or headers (web) from.
    pub secret: Option<String>,
    /// Whether the Secret holds credentials (`token`, or `username` and `password`) rather
    /// than headers.
    pub credentials: bool,
}

/// Why a metric analysis cannot be followed; each names its field (`prometheus.query`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    #[error("{field} {value:?} is not an http:// or https:// URL")]
    Url { field: &'static str, value: String },
    #[error("{field} is empty")]
    Empty { field: &'static str },
    #[error("{field}: {error}")]
    Condition {
        field: &'static str,
        #[source]
        error: ConditionError,
    },
    #[error("{kind}: set successCondition, failureCondition or both")]
    NoCondition { kind: &'static str },
    #[error("{field}: {error}")]
    Interval {
        field: &'static str,
        #[source]
        error: DurationError,
    },
    #[error("{field} must be at least 1")]
    Count { field: &'static str },
    #[error("{field} {value:?} is not a dotted path of field names (data.errorRate)")]
    JsonPath { field: &'static str, value: String },
}

/// The fields of each kind, as errors name them.
struct Fields {
    kind: &'static str,
    success: &'static str,
    failure: &'static str,
    interval: &'static str,
    count: &'static str,
}

const PROMETHEUS: Fields = Fields {
    kind: "prometheus",
    success: "prometheus.successCondition",
    failure: "prometheus.failureCondition",
    interval: "prometheus.interval",
    count: "prometheus.count",
};

const WEB: Fields = Fields {
    kind: "web",
    success: "web.successCondition",
    failure: "web.failureCondition",
    interval: "web.interval",
    count: "web.count",
};

/// An `http://` or `https://` URL, trimmed.
fn url(field: &'static str, value: &str) -> Result<String, MetricError> {
    let trimmed = value.trim();
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"));
    if rest.is_none_or(str::is_empty) {
        return Err(MetricError::Url {
            field,
            value: value.to_owned(),
        });
    }
    Ok(trimmed.to_owned())
}

impl MetricCheck {
    /// Validates `analysis.prometheus`.
    ///
    /// # Errors
    /// An address that is not http(s), an empty query, a condition that does not parse, no
    /// condition, an interval that is not a positive duration, a count of 0.
    pub fn prometheus(spec: &PrometheusAnalysis) -> Result<Self, MetricError> {
        let address = url("prometheus.address", &spec.address)?;
        if spec.query.trim().is_empty() {
            return Err(MetricError::Empty {
                field: "prometheus.query",
            });
        }
        let source = MetricSource::Prometheus {
            address: address.trim_end_matches('/').to_owned(),
            query: spec.query.trim().to_owned(),
            credentials_secret: spec.credentials_secret.clone(),
        };
        Self::measured(source, &spec.measurement, &PROMETHEUS)
    }

    /// Validates `analysis.web`.
    ///
    /// # Errors
    /// As [`Self::prometheus`], and a `jsonPath` with an empty segment.
    pub fn web(spec: &WebAnalysis) -> Result<Self, MetricError> {
        let url = url("web.url", &spec.url)?;
        let json_path = match spec.json_path.as_deref() {
            None => JsonPath::default(),
            Some(text) => JsonPath::parse(text).ok_or_else(|| MetricError::JsonPath {
                field: "web.jsonPath",
                value: text.to_owned(),
            })?,
        };
        let source = MetricSource::Web {
            url,
            json_path,
            headers_secret: spec.headers_secret.clone(),
        };
        Self::measured(source, &spec.measurement, &WEB)
    }

    fn measured(
        source: MetricSource,
        spec: &MetricMeasurement,
        fields: &Fields,
    ) -> Result<Self, MetricError> {
        let condition = |field: &'static str, text: Option<&String>| {
            text.map(|text| Condition::parse(text))
                .transpose()
                .map_err(|error| MetricError::Condition { field, error })
        };
        let success = condition(fields.success, spec.success_condition.as_ref())?;
        let failure = condition(fields.failure, spec.failure_condition.as_ref())?;
        if success.is_none() && failure.is_none() {
            return Err(MetricError::NoCondition { kind: fields.kind });
        }
        let interval =
            positive_interval(spec.interval.as_deref()).map_err(|error| MetricError::Interval {
                field: fields.interval,
                error,
            })?;
        let count = spec.count.unwrap_or(DEFAULT_COUNT);
        if count == 0 {
            return Err(MetricError::Count {
                field: fields.count,
            });
        }
        Ok(Self {
            source,
            success,
            failure,
            interval,
            count,
            failure_limit: spec.failure_limit.unwrap_or(0),
            inconclusive_limit: spec.inconclusive_limit.unwrap_or(0),
        })
    }

    /// `Prometheus http://prometheus:9090` or `web GET https://status.example.com/rate`.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.source {
            MetricSource::Prometheus { address, .. } => format!("Prometheus {address}"),
            MetricSource::Web { url, .. } => format!("web GET {url}"),
        }
    }

    /// What a measurement GETs: for Prometheus, its instant query API with the query.
    #[must_use]
    pub fn request(&self) -> MetricRequest {
        match &self.source {
            MetricSource::Prometheus {
                address,
                query,
                credentials_secret,
            } => MetricRequest {
                url: format!("{address}/api/v1/query?query={}", percent_encoded(query)),
                secret: credentials_secret.clone(),
                credentials: true,
            },
            MetricSource::Web {
                url,
                headers_secret,
                ..
            } => MetricRequest {
                url: url.clone(),
                secret: headers_secret.clone(),
                credentials: false,
            },
        }
    }

    /// Judges one measurement from the answer (`status`, `body`): its outcome and what was
    /// seen (`result [0.004]: successful (result[0] < 0.01)`).
    #[must_use]
    pub fn measure(&self, status: u16, body: &[u8]) -> (AnalysisOutcome, String) {
        let quoted = |bytes: &[u8]| -> String {
            let text: String = String::from_utf8_lossy(bytes)
                .chars()
                .take(QUOTED)
                .collect();
            text.trim().to_owned()
        };
        if !(200..300).contains(&status) {
            return (
                AnalysisOutcome::Inconclusive,
                format!("HTTP {status}: {}", quoted(body)),
            );
        }
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            return (
                AnalysisOutcome::Inconclusive,
                format!("HTTP {status}, not JSON: {}", quoted(body)),
            );
        };
        let result = match &self.source {
            MetricSource::Prometheus { .. } => prometheus_result(&json),
            MetricSource::Web { json_path, .. } => json_path
                .find(&json)
                .cloned()
                .ok_or_else(|| format!("no field {} in the answer", json_path.text())),
        };
        let result = match result {
            Ok(result) => result,
            Err(problem) => return (AnalysisOutcome::Inconclusive, problem),
        };
        let seen = quoted(result.to_string().as_bytes());
        let judged = |condition: Option<&'_ Condition>| {
            condition
                .map(|c| {
                    c.evaluate(&result)
                        .map(|holds| (holds, c.text().to_owned()))
                })
                .transpose()
        };
        let both = judged(self.success.as_ref())
            .and_then(|success| Ok((success, judged(self.failure.as_ref())?)));
        let (success, failure) = match both {
            Ok(both) => both,
            Err(error) => {
                return (
                    AnalysisOutcome::Inconclusive,
                    format!("result {seen}: {error}"),
                );
            }
        };
        let (outcome, why) = match (success, failure) {
            (_, Some((true, failure))) => (AnalysisOutcome::Failed, format!("failed ({failure})")),
            (Some((true, success)), _) => {
                (AnalysisOutcome::Passed, format!("successful ({success})"))
            }
            (Some((false, success)), None) => {
                (AnalysisOutcome::Failed, format!("failed (not {success})"))
            }
            (None, Some((false, failure))) => (
                AnalysisOutcome::Passed,
                format!("successful (not {failure})"),
            ),
            (Some((false, success)), Some((false, failure))) => (
                AnalysisOutcome::Inconclusive,
                format!("inconclusive (neither {success} nor {failure})"),
            ),
            (None, None) => (AnalysisOutcome::Inconclusive, "no condition".to_owned()),
        };
        (outcome, format!("result {seen}: {why}"))
    }

    /// The analysis' verdict after `measurements` measurements of which `failures` failed and
    /// `inconclusive` were inconclusive.
    #[must_use]
    pub fn verdict(&self, measurements: u32, failures: u32, inconclusive: u32) -> Verdict {
        if failures > self.failure_limit {
            Verdict::Failed(format!(
                "{failures} failed measurement(s), more than failureLimit {}",
                self.failure_limit
            ))
        } else if inconclusive > self.inconclusive_limit {
            Verdict::Failed(format!(
                "inconclusive: {inconclusive} inconclusive measurement(s), more than inconclusiveLimit {}",
                self.inconclusive_limit
            ))
        } else if measurements >= self.count {
            Verdict::Passed
        } else {
            Verdict::Measuring
        }
    }

    /// `3 measurements every 30s, at most 0 failed and 1 inconclusive`, for reports.
    #[must_use]
    pub fn plan_text(&self) -> String {
        format!(
            "{} measurement(s) every {}, at most {} failed and {} inconclusive",
            self.count,
            format_duration(self.interval),
            self.failure_limit,
            self.inconclusive_limit
        )
    }
}

/// Where a metric analysis stands after a measurement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `count` measurements taken within the limits.
    Passed,
    /// A limit exceeded, and why.
    Failed(String),
    /// More measurements to take.
    Measuring,
}

/// The `result` of a Prometheus query API answer: the values of an instant vector's samples
/// (numbers; `NaN` and infinities as `null`), or a scalar's or string's value as a list of one.
fn prometheus_result(json: &Value) -> Result<Value, String> {
    if json.get("status").and_then(Value::as_str) != Some("success") {
        let kind = json.get("errorType").and_then(Value::as_str).unwrap_or("");
        let error = json.get("error").and_then(Value::as_str).unwrap_or("");
        return Err(format!("Prometheus answered an error: {kind}: {error}"));
    }
    let data = json.get("data").unwrap_or(&Value::Null);
    let result = data.get("result").unwrap_or(&Value::Null);
    let sample = |pair: &Value| -> Result<Value, String> {
        let text = pair
            .get(1)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a sample that is not [time, value]: {pair}"))?;
        Ok(match text.parse::<f64>() {
            Ok(n) => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
            Err(_) => Value::String(text.to_owned()),
        })
    };
    match data.get("resultType").and_then(Value::as_str) {
        Some("vector") => result
            .as_array()
            .map(|samples| {
                samples
                    .iter()
                    .map(|s| sample(s.get("value").unwrap_or(&Value::Null)))
                    .collect::<Result<Vec<Value>, String>>()
                    .map(Value::Array)
            })
            .unwrap_or_else(|| Err(format!("a vector result that is not a list: {result}"))),
        Some("scalar" | "string") => Ok(Value::Array(vec![sample(result)?])),
        Some(other) => Err(format!(
            "the query answered a {other}; query an instant vector or a scalar"
        )),
        None => Err("the answer has no data.resultType".to_owned()),
    }
}

/// `text` percent-encoded for a URL's query (every byte but `A-Za-z0-9-_.~`).
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use AnalysisOutcome::{Failed, Inconclusive, Passed};

    fn prometheus(success: Option<&str>, failure: Option<&str>) -> PrometheusAnalysis {
        PrometheusAnalysis {
            address: "http://127.0.0.1:9090/".into(),
            query: "sum(rate(errors[1m])) / sum(rate(requests[1m]))".into(),
            credentials_secret: Some("prom".into()),
            measurement: MetricMeasurement {
                success_condition: success.map(str::to_owned),
                failure_condition: failure.map(str::to_owned),
                ..MetricMeasurement::default()
            },
        }
    }

    fn check(success: Option<&str>, failure: Option<&str>) -> MetricCheck {
        MetricCheck::prometheus(&prometheus(success, failure)).expect("valid")
    }

    fn vector(values: &[&str]) -> Vec<u8> {
        let samples: Vec<Value> = values
            .iter()
            .map(|v| serde_json::json!({"metric": {}, "value": [1.7e9, v]}))
            .collect();
        serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": samples}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn the_request_is_the_instant_query_api() {
        let request = check(Some("result[0] < 0.01"), None).request();
        assert_eq!(
            request.url,
            "http://127.0.0.1:9090/api/v1/query?query=sum%28rate%28errors%5B1m%5D%29%29%20%2F%20sum%28rate%28requests%5B1m%5D%29%29"
        );
        assert_eq!(request.secret.as_deref(), Some("prom"));
        assert!(request.credentials);
    }

    #[test]
    fn a_measurement_is_judged_as_argo_rollouts_judges_it() {
        let success = check(Some("result[0] < 0.01"), None);
        assert_eq!(
            success.measure(200, &vector(&["0.004"])),
            (
                Passed,
                "result [0.004]: successful (result[0] < 0.01)".into()
            )
        );
        assert_eq!(
            success.measure(200, &vector(&["0.2"])),
            (Failed, "result [0.2]: failed (not result[0] < 0.01)".into())
        );
        let failure = check(None, Some("result[0] >= 0.05"));
        assert_eq!(failure.measure(200, &vector(&["0.01"])).0, Passed);
        assert_eq!(failure.measure(200, &vector(&["0.05"])).0, Failed);
        let both = check(Some("result[0] < 0.01"), Some("result[0] >= 0.05"));
        assert_eq!(
            both.measure(200, &vector(&["0.02"])),
            (
                Inconclusive,
                "result [0.02]: inconclusive (neither result[0] < 0.01 nor result[0] >= 0.05)"
                    .into()
            )
        );
        assert_eq!(both.measure(200, &vector(&["0.001"])).0, Passed);
        assert_eq!(both.measure(200, &vector(&["0.5"])).0, Failed);
    }

    #[test]
    fn no_usable_answer_is_inconclusive() {
        let rate = check(Some("result[0] < 0.01"), None);
        assert_eq!(
            rate.measure(200, &vector(&[])),
            (
                Inconclusive,
                "result []: result[0] does not exist (result is [])".into()
            )
        );
        assert_eq!(
            rate.measure(200, &vector(&["NaN"])),
            (
                Inconclusive,
                "result [null]: cannot order null and 0.01 (both must be numbers or both strings)"
                    .into()
            )
        );
        assert_eq!(
            rate.measure(503, b"down"),
            (Inconclusive, "HTTP 503: down".into())
        );
        let error = br#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        assert_eq!(
            rate.measure(200, error),
            (
                Inconclusive,
                "Prometheus answered an error: bad_data: parse error".into()
            )
        );
        let scalar =
            br#"{"status":"success","data":{"resultType":"scalar","result":[1.7e9,"0.001"]}}"#;
        assert_eq!(rate.measure(200, scalar).0, Passed);
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert_eq!(
            rate.measure(200, matrix).1,
            "the query answered a matrix; query an instant vector or a scalar"
        );
    }

    #[test]
    fn a_web_measurement_reads_its_json_path() {
        let web = MetricCheck::web(&WebAnalysis {
            url: "https://status.example.com/rate".into(),
            json_path: Some("{$.data.errorRate}".into()),
            headers_secret: None,
            measurement: MetricMeasurement {
                success_condition: Some("result <= 0.01".into()),
                ..MetricMeasurement::default()
            },
        })
        .expect("valid");
        assert_eq!(web.request().url, "https://status.example.com/rate");
        assert!(!web.request().credentials);
        assert_eq!(
            web.measure(200, br#"{"data": {"errorRate": 0.005}}"#).0,
            Passed
        );
        assert_eq!(
            web.measure(200, br#"{"data": {}}"#),
            (Inconclusive, "no field data.errorRate in the answer".into())
        );
    }

    #[test]
    fn verdicts_follow_the_limits() {
        let mut limits = check(Some("result[0] < 0.01"), None);
        limits.count = 3;
        limits.failure_limit = 1;
        limits.inconclusive_limit = 0;
        assert_eq!(limits.verdict(1, 1, 0), Verdict::Measuring);
        assert_eq!(limits.verdict(3, 1, 0), Verdict::Passed);
        assert_eq!(
            limits.verdict(2, 2, 0),
            Verdict::Failed("2 failed measurement(s), more than failureLimit 1".into())
        );
        assert_eq!(
            limits.verdict(2, 0, 1),
            Verdict::Failed(
                "inconclusive: 1 inconclusive measurement(s), more than inconclusiveLimit 0".into()
            )
        );
    }

    #[test]
    fn a_bad_metric_analysis_is_refused_naming_the_field() {
        let refused =
            |spec: PrometheusAnalysis| MetricCheck::prometheus(&spec).unwrap_err().to_string();
        assert_eq!(
            refused(prometheus(None, None)),
            "prometheus: set successCondition, failureCondition or both"
        );
        assert_eq!(
            refused(prometheus(Some("result[0] <"), None)),
            "prometheus.successCondition: \"result[0] <\" at character 12: expected a number, a string, true, false, null, result or len(result)"
        );
        assert!(
            refused(prometheus(None, Some("x > 1")))
                .starts_with("prometheus.failureCondition: \"x > 1\" at character 1")
        );
        let mut no_address = prometheus(Some("true"), None);
        no_address.address = "prometheus:9090".into();
        assert_eq!(
            refused(no_address),
            "prometheus.address \"prometheus:9090\" is not an http:// or https:// URL"
        );
        let mut no_query = prometheus(Some("true"), None);
        no_query.query = " ".into();
        assert_eq!(refused(no_query), "prometheus.query is empty");
        let mut zero = prometheus(Some("true"), None);
        zero.measurement.count = Some(0);
        assert_eq!(refused(zero), "prometheus.count must be at least 1");
        let mut instant = prometheus(Some("true"), None);
        instant.measurement.interval = Some("0s".into());
        assert!(refused(instant).starts_with("prometheus.interval: "));
        let web = MetricCheck::web(&WebAnalysis {
            url: "https://x".into(),
            json_path: Some("a..b".into()),
            ..WebAnalysis::default()
        })
        .unwrap_err();
        assert_eq!(
            web.to_string(),
            "web.jsonPath \"a..b\" is not a dotted path of field names (data.errorRate)"
        );
    }
}

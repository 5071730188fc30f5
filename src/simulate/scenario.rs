//! What happens around a simulated rollout that no cluster decides: each step's analysis
//! outcome (`--analysis STEP=pass|fail|after:DURATION`), who approves a manual step when
//! (`--approve STEP@DURATION`), and which Application turns Degraded when (`--degrade
//! APP@DURATION`). Times are virtual, from the start. The driver turns these into the same
//! observations and annotation the controller would hand the step function
//! ([`flotilla_core::rollout::analysis`]); nothing here decides the rollout.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use flotilla_core::api::application_set_status::RolloutStepStatus;
use flotilla_core::rollout::analysis::{AnalysisObservation, AnalysisOutcome, Probe};
use flotilla_generators::duration::{format_duration, parse_duration};

/// A step's scripted analysis outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnalysisScript {
    /// It passes at the first look.
    Pass,
    /// It fails at every look (an HTTP analysis fails at its `failureLimit`).
    Fail,
    /// It runs (no verdict) for this long after it started, then passes.
    After(Duration),
}

/// `--analysis STEP=pass|fail|after:DURATION`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisFlag {
    /// The step, 1-based.
    pub step: usize,
    pub script: AnalysisScript,
}

/// `--approve STEP@DURATION`: step `step` approved `at` after the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApproveFlag {
    pub step: usize,
    pub at: Duration,
}

/// `--degrade APP@DURATION`: Application `app` turns Degraded `at` after the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DegradeFlag {
    pub app: String,
    pub at: Duration,
}

/// A flag that does not parse, with what it should look like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {value:?}: expected {expected}")]
pub struct ScenarioFlagError {
    flag: &'static str,
    value: String,
    expected: &'static str,
}

/// `N` of a step, 1 or more.
fn step_number(text: &str) -> Option<usize> {
    text.trim().parse::<usize>().ok().filter(|&n| n > 0)
}

impl FromStr for AnalysisFlag {
    type Err = ScenarioFlagError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ScenarioFlagError {
            flag: "--analysis",
            value: text.to_owned(),
            expected: "STEP=pass, STEP=fail or STEP=after:DURATION (2=after:5m)",
        };
        let (step, outcome) = text.split_once('=').ok_or_else(error)?;
        let step = step_number(step).ok_or_else(error)?;
        let script = match outcome.trim() {
            "pass" => AnalysisScript::Pass,
            "fail" => AnalysisScript::Fail,
            other => AnalysisScript::After(
                other
                    .strip_prefix("after:")
                    .and_then(|d| parse_duration(d).ok())
                    .ok_or_else(error)?,
            ),
        };
        Ok(Self { step, script })
    }
}

/// `NAME@DURATION`.
fn at(text: &str) -> Option<(&str, Duration)> {
    let (name, at) = text.split_once('@')?;
    let name = name.trim();
    (!name.is_empty()).then_some(())?;
    Some((name, parse_duration(at.trim()).ok()?))
}

impl FromStr for ApproveFlag {
    type Err = ScenarioFlagError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ScenarioFlagError {
            flag: "--approve",
            value: text.to_owned(),
            expected: "STEP@DURATION (2@30m)",
        };
        let (step, at) = at(text).ok_or_else(error)?;
        Ok(Self {
            step: step_number(step).ok_or_else(error)?,
            at,
        })
    }
}

impl FromStr for DegradeFlag {
    type Err = ScenarioFlagError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (app, at) = at(text).ok_or_else(|| ScenarioFlagError {
            flag: "--degrade",
            value: text.to_owned(),
            expected: "APP@DURATION (prod-backend@12m)",
        })?;
        Ok(Self {
            app: app.to_owned(),
            at,
        })
    }
}

impl fmt::Display for DegradeFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.app, format_duration(self.at))
    }
}

/// Everything scripted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scenario {
    pub analysis: Vec<AnalysisFlag>,
    pub approvals: Vec<ApproveFlag>,
    pub degrades: Vec<DegradeFlag>,
}

impl Scenario {
    /// What the controller would see of each probed analysis at `now` (`records`: the steps'
    /// records, for when each analysis started). A step without `--analysis` passes.
    #[must_use]
    pub fn observe(
        &self,
        probes: &[Probe],
        records: &[RolloutStepStatus],
        now: Timestamp,
    ) -> Vec<AnalysisObservation> {
        probes
            .iter()
            .map(|probe| {
                let (step, cluster) = match probe {
                    Probe::Job { step, cluster, .. } => (*step, Some(cluster.clone())),
                    Probe::Http { step, .. } | Probe::Metric { step, .. } => (*step, None),
                };
                let started = records
                    .iter()
                    .find(|r| usize::try_from(r.step).is_ok_and(|s| s == step))
                    .and_then(|r| r.analysis.as_ref())
                    .map_or(now, |a| a.started_at.0);
                let (outcome, message) = match self.script(step) {
                    AnalysisScript::Pass => (AnalysisOutcome::Passed, "passed (--analysis)"),
                    AnalysisScript::Fail => (AnalysisOutcome::Failed, "failed (--analysis)"),
                    AnalysisScript::After(d) if started.checked_add(d).is_ok_and(|t| t <= now) => {
                        (AnalysisOutcome::Passed, "passed (--analysis after)")
                    }
                    AnalysisScript::After(_) => {
                        (AnalysisOutcome::Running, "running (--analysis after)")
                    }
                };
                AnalysisObservation {
                    step,
                    outcome,
                    message: message.to_owned(),
                    cluster,
                }
            })
            .collect()
    }

    /// When step `step`'s analysis, started at `started`, has its verdict.
    #[must_use]
    pub fn verdict_at(&self, step: usize, started: Timestamp) -> Timestamp {
        match self.script(step) {
            AnalysisScript::After(d) => started.checked_add(d).unwrap_or(Timestamp::MAX),
            AnalysisScript::Pass | AnalysisScript::Fail => started,
        }
    }

    fn script(&self, step: usize) -> AnalysisScript {
        self.analysis
            .iter()
            .rev()
            .find(|flag| flag.step == step)
            .map_or(AnalysisScript::Pass, |flag| flag.script)
    }

    /// The approval due at `elapsed` that is not `consumed` yet (the earliest): what the
    /// `flotilla.dev/promote` annotation says then.
    #[must_use]
    pub fn approval(&self, elapsed: Duration, consumed: &[usize]) -> Option<&ApproveFlag> {
        self.approvals
            .iter()
            .filter(|a| a.at <= elapsed && !consumed.contains(&a.step))
            .min_by_key(|a| a.at)
    }

    /// When step `step` is approved next after `elapsed`, if ever.
    #[must_use]
    pub fn next_approval(&self, step: usize, elapsed: Duration) -> Option<Duration> {
        self.approvals
            .iter()
            .filter(|a| a.step == step && a.at > elapsed)
            .map(|a| a.at)
            .min()
    }

    /// Since when `app` is Degraded at `elapsed`, if it is.
    #[must_use]
    pub fn degraded(&self, app: &str, elapsed: Duration) -> Option<Duration> {
        self.degrades
            .iter()
            .filter(|d| d.app == app && d.at <= elapsed)
            .map(|d| d.at)
            .min()
    }

    /// The first time after `elapsed` at which an Application turns Degraded.
    #[must_use]
    pub fn next_degrade(&self, elapsed: Duration) -> Option<Duration> {
        self.degrades
            .iter()
            .map(|d| d.at)
            .filter(|&at| at > elapsed)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_bad_ones_say_what_they_expect() {
        assert_eq!(
            "2=after:5m".parse::<AnalysisFlag>(),
            Ok(AnalysisFlag {
                step: 2,
                script: AnalysisScript::After(Duration::from_secs(300))
            })
        );
        assert_eq!(
            "1=fail".parse::<AnalysisFlag>().map(|f| f.script),
            Ok(AnalysisScript::Fail)
        );
        assert_eq!(
            "2@30m".parse::<ApproveFlag>(),
            Ok(ApproveFlag {
                step: 2,
                at: Duration::from_secs(1800)
            })
        );
        assert_eq!(
            "web@90s".parse::<DegradeFlag>().map(|d| d.to_string()),
            Ok("web@1m30s".to_owned())
        );
        for bad in ["0=pass", "x=pass", "1=maybe", "1=after:soon", "1"] {
            let error = bad.parse::<AnalysisFlag>().unwrap_err().to_string();
            assert!(error.starts_with("--analysis"), "{error}");
        }
        assert!("2".parse::<ApproveFlag>().is_err());
        assert!("@5m".parse::<DegradeFlag>().is_err());
    }
}

//! Validating a RollingSync strategy into numbered steps (selectors checked, `maxUpdate` and
//! `progressDeadline` parsed) and assigning Applications to them. Anything ambiguous is an error
//! naming the step as users count it (1-based): the rollout never guesses.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use flotilla_generators::selector::{LabelSelectorRequirement, SelectorError};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::analysis::{self, AnalysisCheck, AnalysisError};
use super::graph::{self, GraphError};
use crate::api::application_set::{
    ApplicationSetStep, Approval, OnFailure, RolloutStrategy, StrategyType,
};
use flotilla_generators::duration::{DurationError, DurationProblem, parse_duration};

/// How many Applications of a step may be Pending or Progressing at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxUpdate {
    /// `maxUpdate` unset: no limit.
    Unlimited,
    /// An absolute number; `0` holds the step.
    Count(usize),
    /// A percentage (0–100) of the step's Applications, rounded down but at least 1 above 0%.
    Percent(u8),
}

impl MaxUpdate {
    /// Parses `maxUpdate`: an integer, a quoted integer (`"3"`) or a percentage (`"25%"`).
    ///
    /// # Errors
    /// A negative number, a percentage over 100%, or text that is neither.
    pub fn parse(value: Option<&IntOrString>) -> Result<Self, &'static str> {
        let text = match value {
            None => return Ok(Self::Unlimited),
            Some(IntOrString::Int(n)) => {
                return usize::try_from(*n)
                    .map(Self::Count)
                    .map_err(|_| "must not be negative");
            }
            Some(IntOrString::String(text)) => text.trim(),
        };
        if let Some(percent) = text.strip_suffix('%') {
            if percent.starts_with('-') {
                return Err("must not be negative");
            }
            if percent.is_empty() || !percent.bytes().all(|b| b.is_ascii_digit()) {
                return Err("is not an integer or a percentage such as 25%");
            }
            return match percent.parse::<u8>() {
                Ok(p) if p <= 100 => Ok(Self::Percent(p)),
                _ => Err("must not exceed 100%"),
            };
        }
        if text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit()) && text.len() > 1
        {
            return Err("must not be negative");
        }
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err("is not an integer or a percentage such as 25%");
        }
        text.parse::<usize>()
            .map(Self::Count)
            .map_err(|_| "is too large")
    }

    /// The number of slots in a step of `apps` Applications; `None` when unlimited.
    #[must_use]
    pub fn limit(self, apps: usize) -> Option<usize> {
        match self {
            Self::Unlimited => None,
            Self::Count(n) => Some(n),
            Self::Percent(0) => Some(0),
            Self::Percent(p) => Some((apps * usize::from(p) / 100).max(1)),
        }
    }
}

impl fmt::Display for MaxUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unlimited => f.write_str("unlimited"),
            Self::Count(n) => write!(f, "{n}"),
            Self::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// One validated step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutStep {
    /// 1-based, as users count steps and as `status.applicationStatus[].step` shows them.
    pub number: usize,
    pub match_expressions: Vec<LabelSelectorRequirement>,
    pub max_update: MaxUpdate,
    /// The step's own deadline, or the rollout's default.
    pub progress_deadline: Option<Duration>,
    /// How long its Applications must stay Healthy before the step completes (`bakeTime`).
    pub bake_time: Option<Duration>,
    /// The step waits for a person's approval before it syncs (`approval: manual`).
    pub manual_approval: bool,
    /// The check that must pass before the step completes (`analysis`).
    pub analysis: Option<AnalysisCheck>,
    /// Its `name`, if it has one.
    pub name: Option<String>,
    /// The steps (0-based) it waits for: those `dependsOn` names, or the one before it.
    pub depends_on: Vec<usize>,
    /// The steps of other ApplicationSets it waits for (`dependsOn` entries with
    /// `applicationSet`).
    pub external: Vec<ApplicationSetStep>,
}

impl RolloutStep {
    /// How messages name it: `step 2`, or `step 2 (backend-eu)` when it has a name.
    #[must_use]
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("step {} ({name})", self.number),
            None => format!("step {}", self.number),
        }
    }
}

impl RolloutStep {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        // Every expression was validated in `RolloutConfig::from_strategy`, so evaluation
        // cannot fail; an error would mean "no match".
        self.match_expressions
            .iter()
            .all(|r| r.matches(labels).unwrap_or(false))
    }
}

/// A RollingSync strategy that can be followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutConfig {
    pub steps: Vec<RolloutStep>,
    /// Promote nothing new while true.
    pub paused: bool,
    /// What a failed step does (`onFailure`).
    pub on_failure: OnFailure,
    /// With `onFailure: rollback`, earlier steps roll back too (`rollbackCompletedSteps`).
    pub rollback_completed_steps: bool,
    /// The steps (0-based) in dependency order: each after the steps it waits for, otherwise
    /// in list order ([`super::graph`]).
    pub order: Vec<usize>,
}

/// Why a strategy cannot be followed. Each variant names the step (1-based) where it applies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolloutConfigError {
    #[error("strategy.type is {0:?}, not RollingSync")]
    NotRollingSync(StrategyType),
    #[error("strategy.rollingSync.steps is empty: a RollingSync rollout needs at least one step")]
    NoSteps,
    #[error("step {step}: matchExpressions: {error}")]
    Selector {
        step: usize,
        #[source]
        error: SelectorError,
    },
    #[error("step {step}: maxUpdate {value:?} {problem}")]
    MaxUpdate {
        step: usize,
        value: String,
        problem: &'static str,
    },
    #[error("step {step}: progressDeadline: {error}")]
    StepDeadline {
        step: usize,
        #[source]
        error: DurationError,
    },
    #[error("step {step}: bakeTime: {error}")]
    BakeTime {
        step: usize,
        #[source]
        error: DurationError,
    },
    #[error("step {step}: analysis: {error}")]
    Analysis {
        step: usize,
        #[source]
        error: AnalysisError,
    },
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error("rollingSync.progressDeadline: {0}")]
    RolloutDeadline(#[source] DurationError),
    #[error("rollingSync.rollbackCompletedSteps: true needs onFailure: rollback")]
    RollbackCompletedStepsWithoutRollback,
    #[error(
        "step {second}: Application {application:?} is also selected by step {first}; each Application must match exactly one step"
    )]
    SelectedTwice {
        application: String,
        first: usize,
        second: usize,
    },
}

/// A `progressDeadline` or `bakeTime`: a duration above zero.
fn parse_deadline(text: &str) -> Result<Duration, DurationError> {
    match parse_duration(text)? {
        Duration::ZERO => Err(DurationError::new(text, DurationProblem::NotPositive)),
        deadline => Ok(deadline),
    }
}

impl RolloutConfig {
    /// Validates every step of `strategy`.
    ///
    /// # Errors
    /// The first problem found, in step order.
    pub fn from_strategy(strategy: &RolloutStrategy) -> Result<Self, RolloutConfigError> {
        let rolling_sync = match (strategy.type_, &strategy.rolling_sync) {
            (StrategyType::RollingSync, Some(rolling_sync)) => rolling_sync,
            (StrategyType::RollingSync, None) => return Err(RolloutConfigError::NoSteps),
            (other, _) => return Err(RolloutConfigError::NotRollingSync(other)),
        };
        if rolling_sync.steps.is_empty() {
            return Err(RolloutConfigError::NoSteps);
        }
        let default_deadline = rolling_sync
            .progress_deadline
            .as_deref()
            .map(parse_deadline)
            .transpose()
            .map_err(RolloutConfigError::RolloutDeadline)?;
        let steps = rolling_sync
            .steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                let number = index + 1;
                for requirement in &step.match_expressions {
                    requirement
                        .operator()
                        .map_err(|error| RolloutConfigError::Selector {
                            step: number,
                            error,
                        })?;
                }
                let max_update = MaxUpdate::parse(step.max_update.as_ref()).map_err(|problem| {
                    RolloutConfigError::MaxUpdate {
                        step: number,
                        value: match &step.max_update {
                            Some(IntOrString::Int(n)) => n.to_string(),
                            Some(IntOrString::String(s)) => s.clone(),
                            None => String::new(),
                        },
                        problem,
                    }
                })?;
                let progress_deadline = match &step.progress_deadline {
                    Some(text) => Some(parse_deadline(text).map_err(|error| {
                        RolloutConfigError::StepDeadline {
                            step: number,
                            error,
                        }
                    })?),
                    None => default_deadline,
                };
                let bake_time = step
                    .bake_time
                    .as_deref()
                    .map(parse_deadline)
                    .transpose()
                    .map_err(|error| RolloutConfigError::BakeTime {
                        step: number,
                        error,
                    })?;
                Ok(RolloutStep {
                    number,
                    name: step.name.clone(),
                    depends_on: Vec::new(),
                    external: Vec::new(),
                    match_expressions: step.match_expressions.clone(),
                    max_update,
                    progress_deadline,
                    bake_time,
                    manual_approval: step.approval == Some(Approval::Manual),
                    analysis: analysis::of_step(step).map_err(|error| {
                        RolloutConfigError::Analysis {
                            step: number,
                            error,
                        }
                    })?,
                })
            })
            .collect::<Result<Vec<RolloutStep>, RolloutConfigError>>()?;
        let (steps, order) = graph::link(steps, &rolling_sync.steps)?;
        let on_failure = rolling_sync.on_failure.unwrap_or_default();
        if rolling_sync.rollback_completed_steps && on_failure != OnFailure::Rollback {
            return Err(RolloutConfigError::RollbackCompletedStepsWithoutRollback);
        }
        Ok(Self {
            steps,
            paused: strategy.paused,
            on_failure,
            rollback_completed_steps: rolling_sync.rollback_completed_steps,
            order,
        })
    }

    /// The index (0-based) of the one step whose expressions all match `labels`, or `None`.
    ///
    /// # Errors
    /// [`RolloutConfigError::SelectedTwice`] when two steps match.
    pub fn step_of(
        &self,
        application: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<Option<usize>, RolloutConfigError> {
        let mut found = None;
        for (index, step) in self.steps.iter().enumerate() {
            if !step.matches(labels) {
                continue;
            }
            if let Some(first) = found {
                return Err(RolloutConfigError::SelectedTwice {
                    application: application.to_string(),
                    first: first + 1,
                    second: step.number,
                });
            }
            found = Some(index);
        }
        Ok(found)
    }

    /// [`Self::step_of`] for every `(name, labels)`, in order. The selectors are evaluated once
    /// per distinct combination of the label values they read, so large fleets cost little.
    ///
    /// # Errors
    /// [`RolloutConfigError::SelectedTwice`] for the first Application two steps select.
    pub fn assign<'a>(
        &self,
        applications: impl Iterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
    ) -> Result<Vec<Option<usize>>, RolloutConfigError> {
        let keys: Vec<&str> = self
            .steps
            .iter()
            .flat_map(|step| step.match_expressions.iter().map(|r| r.key.as_str()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut known: HashMap<Vec<Option<&str>>, Option<usize>> = HashMap::new();
        applications
            .map(|(name, labels)| {
                let values: Vec<Option<&str>> = keys
                    .iter()
                    .map(|key| labels.get(*key).map(String::as_str))
                    .collect();
                if let Some(step) = known.get(&values) {
                    return Ok(*step);
                }
                let step = self.step_of(name, labels)?;
                known.insert(values, step);
                Ok(step)
            })
            .collect()
    }
}

impl RolloutConfigError {
    /// The reason of the `InvalidRolloutConfig` condition.
    #[must_use]
    pub fn reason(&self) -> ConfigReason {
        match self {
            Self::NotRollingSync(_) => ConfigReason::NotRollingSync,
            Self::NoSteps => ConfigReason::NoSteps,
            Self::Selector { .. } => ConfigReason::InvalidMatchExpression,
            Self::MaxUpdate { .. } => ConfigReason::InvalidMaxUpdate,
            Self::StepDeadline { .. } | Self::RolloutDeadline(_) => {
                ConfigReason::InvalidProgressDeadline
            }
            Self::BakeTime { .. } => ConfigReason::InvalidBakeTime,
            Self::Analysis { .. } => ConfigReason::InvalidAnalysis,
            Self::RollbackCompletedStepsWithoutRollback => ConfigReason::InvalidOnFailure,
            Self::SelectedTwice { .. } => ConfigReason::ApplicationInTwoSteps,
            Self::Graph(_) => ConfigReason::InvalidStepGraph,
        }
    }
}

/// Why a RollingSync strategy cannot be followed: the reason of the `InvalidRolloutConfig`
/// condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigReason {
    /// The strategy's `type` is not one Flotilla knows.
    NotRollingSync,
    /// `type: RollingSync` without steps.
    NoSteps,
    /// A step's `matchExpressions` entry cannot be read (operator, values).
    InvalidMatchExpression,
    /// A step's `maxUpdate` is neither a count nor a percentage.
    InvalidMaxUpdate,
    /// A step's or the rollout's `progressDeadline` is not a duration.
    InvalidProgressDeadline,
    /// A step's `bakeTime` is not a duration.
    InvalidBakeTime,
    /// A step's `analysis` sets neither or both of `job` and `http`, or a field of it is invalid.
    InvalidAnalysis,
    /// `rollbackCompletedSteps: true` without `onFailure: rollback`.
    InvalidOnFailure,
    /// Two steps select the same Application.
    ApplicationInTwoSteps,
    /// A step's `name` or `dependsOn` cannot be followed: a name used twice or empty, a
    /// dependency on a name no step has, or a cycle.
    InvalidStepGraph,
}

impl ConfigReason {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 10] = [
        Self::NotRollingSync,
        Self::NoSteps,
        Self::InvalidMatchExpression,
        Self::InvalidMaxUpdate,
        Self::InvalidProgressDeadline,
        Self::InvalidBakeTime,
        Self::InvalidAnalysis,
        Self::InvalidOnFailure,
        Self::ApplicationInTwoSteps,
        Self::InvalidStepGraph,
    ];

    /// The value as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotRollingSync => "NotRollingSync",
            Self::NoSteps => "NoSteps",
            Self::InvalidMatchExpression => "InvalidMatchExpression",
            Self::InvalidMaxUpdate => "InvalidMaxUpdate",
            Self::InvalidProgressDeadline => "InvalidProgressDeadline",
            Self::InvalidBakeTime => "InvalidBakeTime",
            Self::InvalidAnalysis => "InvalidAnalysis",
            Self::InvalidOnFailure => "InvalidOnFailure",
            Self::ApplicationInTwoSteps => "ApplicationInTwoSteps",
            Self::InvalidStepGraph => "InvalidStepGraph",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::NotRollingSync => "The strategy's `type` is not one Flotilla knows.",
            Self::NoSteps => "`type: RollingSync` without steps.",
            Self::InvalidMatchExpression => {
                "A step's `matchExpressions` entry cannot be read (operator, values)."
            }
            Self::InvalidMaxUpdate => "A step's `maxUpdate` is neither a count nor a percentage.",
            Self::InvalidProgressDeadline => {
                "A step's or the rollout's `progressDeadline` is not a duration."
            }
            Self::InvalidBakeTime => "A step's `bakeTime` is not a duration.",
            Self::InvalidAnalysis => {
                "A step's `analysis` sets neither or both of `job` and `http`, or a field of it is invalid."
            }
            Self::InvalidOnFailure => {
                "`rollbackCompletedSteps: true` without `onFailure: rollback`."
            }
            Self::ApplicationInTwoSteps => "Two steps select the same Application.",
            Self::InvalidStepGraph => {
                "A step's `name` or `dependsOn` cannot be followed: a name used twice or empty, a dependency on a name no step has, or a cycle."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::application_set::RollingSyncStep;
    use crate::rollout::tests::strategy;

    fn int(n: i32) -> Option<IntOrString> {
        Some(IntOrString::Int(n))
    }

    fn text(s: &str) -> Option<IntOrString> {
        Some(IntOrString::String(s.to_string()))
    }

    #[test]
    fn max_update_parses_and_scales() {
        // (value, apps in step, expected limit or error)
        type Case = (
            Option<IntOrString>,
            usize,
            Result<Option<usize>, &'static str>,
        );
        let cases: &[Case] = &[
            (None, 8, Ok(None)),
            (int(2), 8, Ok(Some(2))),
            (int(0), 8, Ok(Some(0))),
            (text("3"), 8, Ok(Some(3))),
            (text(" 3 "), 8, Ok(Some(3))),
            (text("25%"), 8, Ok(Some(2))),
            (text("25%"), 3, Ok(Some(1))),
            (text("1%"), 8, Ok(Some(1))),
            (text("0%"), 8, Ok(Some(0))),
            (text("0"), 8, Ok(Some(0))),
            (text("100%"), 8, Ok(Some(8))),
            (text("50%"), 7, Ok(Some(3))),
            (
                text("abc"),
                8,
                Err("is not an integer or a percentage such as 25%"),
            ),
            (
                text("%"),
                8,
                Err("is not an integer or a percentage such as 25%"),
            ),
            (
                text("2.5"),
                8,
                Err("is not an integer or a percentage such as 25%"),
            ),
            (text("150%"), 8, Err("must not exceed 100%")),
            (text("-1"), 8, Err("must not be negative")),
            (text("-10%"), 8, Err("must not be negative")),
            (int(-1), 8, Err("must not be negative")),
        ];
        for (value, apps, expected) in cases {
            let actual = MaxUpdate::parse(value.as_ref()).map(|m| m.limit(*apps));
            assert_eq!(actual, *expected, "{value:?} of {apps}");
        }
    }

    fn step(key: &str, operator: &str, values: &[&str]) -> RollingSyncStep {
        RollingSyncStep {
            match_expressions: vec![LabelSelectorRequirement {
                key: key.into(),
                operator: operator.into(),
                values: values.iter().map(|v| (*v).to_string()).collect(),
            }],
            ..RollingSyncStep::default()
        }
    }

    #[test]
    fn invalid_strategies_name_the_step() {
        let bad_max = RollingSyncStep {
            max_update: text("abc"),
            ..step("env", "In", &["prod"])
        };
        let bad_deadline = RollingSyncStep {
            progress_deadline: Some("soon".into()),
            ..step("env", "In", &["prod"])
        };
        let zero_deadline = RollingSyncStep {
            progress_deadline: Some("0s".into()),
            ..step("env", "In", &["prod"])
        };
        let cases: Vec<(RolloutStrategy, &str)> = vec![
            (strategy(vec![]), "steps is empty"),
            (
                strategy(vec![step("env", "In", &["a"]), step("env", "Near", &["b"])]),
                "step 2: matchExpressions: unknown operator \"Near\"",
            ),
            (
                strategy(vec![step("env", "In", &[])]),
                "step 1: matchExpressions: operator In for key \"env\" needs at least one value",
            ),
            (
                strategy(vec![step("env", "Exists", &[]), bad_max]),
                "step 2: maxUpdate \"abc\" is not an integer",
            ),
            (
                strategy(vec![bad_deadline]),
                "step 1: progressDeadline: invalid duration \"soon\": not a duration",
            ),
            (
                strategy(vec![zero_deadline]),
                "step 1: progressDeadline: invalid duration \"0s\": must be more than zero",
            ),
            (
                strategy(vec![RollingSyncStep {
                    bake_time: Some("0s".into()),
                    ..step("env", "In", &["prod"])
                }]),
                "step 1: bakeTime: invalid duration \"0s\": must be more than zero",
            ),
            (
                strategy(vec![RollingSyncStep {
                    bake_time: Some("a while".into()),
                    ..step("env", "In", &["prod"])
                }]),
                "step 1: bakeTime: invalid duration \"a while\"",
            ),
            (RolloutStrategy::default(), "strategy.type is AllAtOnce"),
        ];
        for (strategy, expected) in cases {
            let error = RolloutConfig::from_strategy(&strategy).unwrap_err();
            assert!(
                error.to_string().contains(expected),
                "{error} !~ {expected}"
            );
        }
    }

    #[test]
    fn operators_select_like_kubernetes_and_two_matches_are_an_error() {
        let config = RolloutConfig::from_strategy(&strategy(vec![
            step("tier", "In", &["db"]),
            step("tier", "NotIn", &["db", "web"]),
            step("canary", "Exists", &[]),
            step("tier", "DoesNotExist", &[]),
        ]))
        .unwrap();
        assert_eq!(
            config.steps[0].progress_deadline,
            Some(Duration::from_secs(600))
        );
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        };
        type Case = (
            &'static [(&'static str, &'static str)],
            Result<Option<usize>, usize>,
        );
        let cases: &[Case] = &[
            (&[("tier", "db")], Ok(Some(0))),
            (&[("tier", "api")], Ok(Some(1))),
            (&[("tier", "web")], Ok(None)),
            (&[("tier", "web"), ("canary", "yes")], Ok(Some(2))),
            (&[("tier", "api"), ("canary", "yes")], Err(3)),
            (&[("other", "x")], Err(4)), // NotIn matches a missing key, so does DoesNotExist
        ];
        for (pairs, expected) in cases {
            let actual = config.step_of("app", &labels(pairs)).map_err(|e| match e {
                RolloutConfigError::SelectedTwice { second, .. } => second,
                other => panic!("unexpected {other}"),
            });
            assert_eq!(actual, *expected, "{pairs:?}");
        }
    }
}

//! How a simulated pod behaves, read from its `sim.flotilla.dev/*` annotations (usually copied
//! from a workload's pod template): the vocabulary shared by the node simulator (crate
//! `flotilla-node-sim`), which runs such pods on a test control plane, and `flotilla simulate`,
//! which predicts them.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::duration::{DurationError, parse_duration};

/// `"true"`: the container exits with code 1 (Job pods fail, other pods crash-loop).
pub const FAIL_ANNOTATION: &str = "sim.flotilla.dev/fail";
/// `"true"`: the image never pulls; the pod stays Pending in `ImagePullBackOff`.
pub const IMAGE_PULL_ERROR_ANNOTATION: &str = "sim.flotilla.dev/image-pull-error";
/// A duration (`500ms`, `5s`): how long this pod takes to start, overriding the simulator default.
pub const READY_AFTER_ANNOTATION: &str = "sim.flotilla.dev/ready-after";

/// What the pod's containers do once started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Containers run (or, for run-to-completion pods, exit 0).
    Healthy,
    /// Containers exit with code 1.
    Fail,
    /// Images cannot be pulled; containers never start.
    ImagePullError,
}

/// The simulated behaviour of one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behavior {
    /// What happens once the pod starts.
    pub outcome: Outcome,
    /// Time between the pod being bound and its containers reaching their outcome.
    pub ready_after: Duration,
}

/// An annotation whose value cannot be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BehaviorError {
    /// A flag annotation that is neither `"true"` nor `"false"`.
    #[error("annotation {key}: expected \"true\" or \"false\", got {value:?}")]
    Flag {
        /// The annotation key.
        key: &'static str,
        /// The rejected value.
        value: String,
    },
    /// A malformed `sim.flotilla.dev/ready-after`.
    #[error("annotation {READY_AFTER_ANNOTATION}: {0}")]
    ReadyAfter(#[from] DurationError),
}

impl Behavior {
    /// Reads the behaviour from pod annotations; `default_ready_after` applies when the pod does
    /// not set its own. An image-pull error wins over a failure (the container never runs).
    ///
    /// # Errors
    /// [`BehaviorError`] naming the annotation with an unreadable value.
    pub fn from_annotations(
        annotations: &BTreeMap<String, String>,
        default_ready_after: Duration,
    ) -> Result<Self, BehaviorError> {
        let flag = |key: &'static str| match annotations.get(key).map(String::as_str) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(value) => Err(BehaviorError::Flag {
                key,
                value: value.to_owned(),
            }),
        };
        let outcome = if flag(IMAGE_PULL_ERROR_ANNOTATION)? {
            Outcome::ImagePullError
        } else if flag(FAIL_ANNOTATION)? {
            Outcome::Fail
        } else {
            Outcome::Healthy
        };
        let ready_after = match annotations.get(READY_AFTER_ANNOTATION) {
            Some(text) => parse_duration(text)?,
            None => default_ready_after,
        };
        Ok(Self {
            outcome,
            ready_after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn reads_outcome_and_delay() {
        let default = Duration::from_secs(1);
        type Case = (&'static [(&'static str, &'static str)], Outcome, u64);
        let cases: &[Case] = &[
            (&[], Outcome::Healthy, 1_000),
            (&[(FAIL_ANNOTATION, "true")], Outcome::Fail, 1_000),
            (&[(FAIL_ANNOTATION, "false")], Outcome::Healthy, 1_000),
            (
                &[(IMAGE_PULL_ERROR_ANNOTATION, "true")],
                Outcome::ImagePullError,
                1_000,
            ),
            (
                &[
                    (IMAGE_PULL_ERROR_ANNOTATION, "true"),
                    (FAIL_ANNOTATION, "true"),
                ],
                Outcome::ImagePullError,
                1_000,
            ),
            (&[(READY_AFTER_ANNOTATION, "5s")], Outcome::Healthy, 5_000),
            (&[("other", "x")], Outcome::Healthy, 1_000),
        ];
        for (pairs, outcome, millis) in cases {
            let behavior = Behavior::from_annotations(&annotations(pairs), default).unwrap();
            assert_eq!(behavior.outcome, *outcome, "{pairs:?}");
            assert_eq!(
                behavior.ready_after,
                Duration::from_millis(*millis),
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn rejects_unreadable_values_naming_the_annotation() {
        let bad_flag =
            Behavior::from_annotations(&annotations(&[(FAIL_ANNOTATION, "yes")]), Duration::ZERO);
        assert_eq!(
            bad_flag.unwrap_err().to_string(),
            "annotation sim.flotilla.dev/fail: expected \"true\" or \"false\", got \"yes\""
        );
        let bad_delay = Behavior::from_annotations(
            &annotations(&[(READY_AFTER_ANNOTATION, "soon")]),
            Duration::ZERO,
        );
        assert!(
            bad_delay
                .unwrap_err()
                .to_string()
                .starts_with("annotation sim.flotilla.dev/ready-after: invalid duration")
        );
    }
}

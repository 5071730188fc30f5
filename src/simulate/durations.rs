//! How long each kind takes to become ready in the simulation: defaults per kind, overridden
//! from the command line (`--duration Job=45s`) and per object by the
//! `sim.flotilla.dev/ready-after` annotation (read in [`super::cluster`]).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use flotilla_generators::duration::{DurationError, parse_duration};

/// Default durations: a Deployment's whole rollout, one StatefulSet pod, a Job's run, a CRD
/// until Established, and so on. Kinds not listed are ready at once.
const DEFAULTS: &[(&str, u64)] = &[
    ("Deployment", 20),
    ("StatefulSet", 15),
    ("DaemonSet", 15),
    ("ReplicaSet", 10),
    ("Pod", 5),
    ("Job", 30),
    ("CustomResourceDefinition", 2),
    ("PersistentVolumeClaim", 5),
    ("Service", 10),
    ("Ingress", 10),
];

/// Ready-after durations by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindDurations {
    by_kind: BTreeMap<String, Duration>,
}

impl Default for KindDurations {
    fn default() -> Self {
        Self {
            by_kind: DEFAULTS
                .iter()
                .map(|(kind, seconds)| ((*kind).to_owned(), Duration::from_secs(*seconds)))
                .collect(),
        }
    }
}

impl KindDurations {
    /// The defaults with `overrides` applied.
    #[must_use]
    pub fn with(overrides: &[KindDuration]) -> Self {
        let mut durations = Self::default();
        for KindDuration { kind, duration } in overrides {
            durations.by_kind.insert(kind.clone(), *duration);
        }
        durations
    }

    /// How long an object of `kind` takes unless it says otherwise.
    #[must_use]
    pub fn of(&self, kind: &str) -> Duration {
        self.by_kind.get(kind).copied().unwrap_or_default()
    }
}

/// One `KIND=DURATION` override, e.g. `Deployment=1m`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindDuration {
    /// The kind, e.g. `Job`.
    pub kind: String,
    /// Its duration.
    pub duration: Duration,
}

/// A `KIND=DURATION` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindDurationError {
    /// No `=`, or nothing before it.
    #[error("{0:?}: expected KIND=DURATION, e.g. Job=45s")]
    Shape(String),
    /// The duration part is invalid.
    #[error("{kind}: {error}")]
    Duration {
        /// The kind it was for.
        kind: String,
        /// Why.
        #[source]
        error: DurationError,
    },
}

impl FromStr for KindDuration {
    type Err = KindDurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (kind, duration) = text
            .split_once('=')
            .filter(|(kind, _)| !kind.trim().is_empty())
            .ok_or_else(|| KindDurationError::Shape(text.to_owned()))?;
        let kind = kind.trim().to_owned();
        let duration = parse_duration(duration).map_err(|error| KindDurationError::Duration {
            kind: kind.clone(),
            error,
        })?;
        Ok(Self { kind, duration })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_win_over_defaults() {
        let overrides: Vec<KindDuration> = ["Job=45s", "Widget=1m"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        let durations = KindDurations::with(&overrides);
        assert_eq!(durations.of("Job"), Duration::from_secs(45));
        assert_eq!(durations.of("Widget"), Duration::from_secs(60));
        assert_eq!(durations.of("Deployment"), Duration::from_secs(20));
        assert_eq!(durations.of("ConfigMap"), Duration::ZERO);
        for bad in ["Job", "=5s", "Job=soon"] {
            assert!(bad.parse::<KindDuration>().is_err(), "{bad}");
        }
    }
}

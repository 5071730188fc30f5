//! The health vocabulary: the six states and a health verdict with its message.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Argo CD's health states: the one health vocabulary of objects, Applications and rollouts.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum HealthStatus {
    /// Working as intended.
    Healthy,
    /// Not yet healthy, may still become so.
    Progressing,
    /// Failed, or will not become healthy without intervention.
    Degraded,
    /// Paused or suspended on purpose.
    Suspended,
    /// Does not exist.
    Missing,
    /// Cannot be assessed.
    #[default]
    Unknown,
}

impl HealthStatus {
    /// The name as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Healthy => "Healthy",
            Self::Progressing => "Progressing",
            Self::Degraded => "Degraded",
            Self::Suspended => "Suspended",
            Self::Missing => "Missing",
            Self::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown health status string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown health status {0:?}")]
pub struct UnknownHealthStatus(pub String);

impl FromStr for HealthStatus {
    type Err = UnknownHealthStatus;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "Healthy" => Self::Healthy,
            "Progressing" => Self::Progressing,
            "Degraded" => Self::Degraded,
            "Suspended" => Self::Suspended,
            "Missing" => Self::Missing,
            "Unknown" => Self::Unknown,
            other => return Err(UnknownHealthStatus(other.to_owned())),
        })
    }
}

/// A health verdict: status and a human message (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// The state.
    pub status: HealthStatus,
    /// Why, in words from the object's status.
    pub message: String,
}

impl Health {
    /// A verdict with a message.
    #[must_use]
    pub fn new(status: HealthStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// The verdict for an object that does not exist.
    #[must_use]
    pub fn missing() -> Self {
        Self::new(HealthStatus::Missing, "")
    }
}

/// `Status` or `Status: message`.
impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.status)
        } else {
            write!(f, "{}: {}", self.status, self.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_status() {
        for status in [
            HealthStatus::Healthy,
            HealthStatus::Progressing,
            HealthStatus::Degraded,
            HealthStatus::Suspended,
            HealthStatus::Missing,
            HealthStatus::Unknown,
        ] {
            assert_eq!(status.to_string().parse::<HealthStatus>(), Ok(status));
        }
        assert_eq!(
            "healthy".parse::<HealthStatus>(),
            Err(UnknownHealthStatus("healthy".into()))
        );
    }

    #[test]
    fn displays_message() {
        assert_eq!(
            Health::new(HealthStatus::Degraded, "boom").to_string(),
            "Degraded: boom"
        );
        assert_eq!(Health::missing().to_string(), "Missing");
    }
}

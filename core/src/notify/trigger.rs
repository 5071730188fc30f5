//! The events notifications can be sent on, by their trigger names; any other name is refused,
//! never silently ignored. Pure.

/// An event notifications can be sent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trigger {
    /// A RollingSync step started rolling out a revision.
    StepStarted,
    /// Every Application of a step is Healthy at the revision rolled out.
    StepCompleted,
    /// The rollout stalled (a deadline passed, an Application Degraded or failed to sync).
    StepStalled,
    /// A step with `approval: manual` waits for `flotilla rollout promote`.
    StepWaitingForApproval,
    /// A failed step was rolled back (`onFailure: rollback`).
    RolledBack,
    /// An Application's sync operation failed.
    SyncFailed,
    /// An Application became Degraded.
    HealthDegraded,
}

impl Trigger {
    /// Every trigger.
    pub const ALL: [Self; 7] = [
        Self::StepStarted,
        Self::StepCompleted,
        Self::StepStalled,
        Self::StepWaitingForApproval,
        Self::RolledBack,
        Self::SyncFailed,
        Self::HealthDegraded,
    ];

    /// Its name (`trigger.<name>` in the ConfigMap).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StepStarted => "on-step-started",
            Self::StepCompleted => "on-step-completed",
            Self::StepStalled => "on-step-stalled",
            Self::StepWaitingForApproval => "on-step-waiting-for-approval",
            Self::RolledBack => "on-rolled-back",
            Self::SyncFailed => "on-sync-failed",
            Self::HealthDegraded => "on-health-degraded",
        }
    }

    /// The trigger called `name`.
    ///
    /// # Errors
    /// An unknown name, with the names there are.
    pub fn parse(name: &str) -> Result<Self, String> {
        if let Some(found) = Self::ALL.into_iter().find(|t| t.as_str() == name) {
            return Ok(found);
        }
        let known: Vec<&str> = Self::ALL.iter().map(|t| t.as_str()).collect();
        Err(format!(
            "unknown trigger {name:?} (triggers: {})",
            known.join(", ")
        ))
    }
}

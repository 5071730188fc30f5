//! One Application as the simulation takes it: its name and labels (for RollingSync), the
//! cluster it deploys to, and how to build its sync plan.

use std::collections::BTreeMap;

use crate::manifest::ValidationErrors;
use crate::sync::SyncPlan;
use crate::sync::execute::ExecuteSettings;

/// Builds an Application's plan for an operation id.
pub type PlanBuilder = Box<dyn Fn(&str) -> Result<SyncPlan, ValidationErrors> + Send + Sync>;

/// A generated Application, ready to simulate.
pub struct SimApp {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels` (RollingSync steps select on them).
    pub labels: BTreeMap<String, String>,
    /// The destination cluster (`server` or `name`); each gets its own embedded cluster.
    pub destination: String,
    /// The commit synced, when the source is a git repository.
    pub revision: Option<String>,
    /// Timeouts, retries, pruning as the Application's sync policy says.
    pub settings: ExecuteSettings,
    /// Its sync plan.
    pub plan: PlanBuilder,
}

//! One Application as the simulation takes it: its name and labels (for RollingSync), the
//! cluster it deploys to, how to build its sync plan, and the sync windows that apply to it.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::sync::execute::ExecuteSettings;
use flotilla_core::manifest::ValidationErrors;
use flotilla_core::project::windows::Window;
use flotilla_core::sync::SyncPlan;

/// Builds an Application's plan for an operation id.
pub type PlanBuilder = Box<dyn Fn(&str) -> Result<SyncPlan, ValidationErrors> + Send + Sync>;

/// How an Application's sync plan is built, and the plan built to validate it, kept for its sync
/// when the plan is the same for every operation.
pub struct AppPlan {
    build: PlanBuilder,
    same_for_every_operation: bool,
    kept: Mutex<Option<SyncPlan>>,
}

impl AppPlan {
    /// Plans from `build`; `same_for_every_operation` when they do not depend on the operation id
    /// (see [`SyncPlan::depends_on_operation`]).
    #[must_use]
    pub fn new(build: PlanBuilder, same_for_every_operation: bool) -> Self {
        Self {
            build,
            same_for_every_operation,
            kept: Mutex::new(None),
        }
    }

    /// Builds the plan for `operation_id`, or hands on the one kept by [`Self::keep`].
    ///
    /// # Errors
    /// The manifests do not build a plan.
    pub fn for_operation(&self, operation_id: &str) -> Result<SyncPlan, ValidationErrors> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        kept.map_or_else(|| (self.build)(operation_id), Ok)
    }

    /// Keeps `plan` (built by [`Self::for_operation`]) for the next operation, unless plans
    /// differ between operations.
    pub fn keep(&self, plan: SyncPlan) {
        if self.same_for_every_operation {
            *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(plan);
        }
    }
}

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
    pub plan: AppPlan,
    /// The sync windows of its project that apply to it.
    pub sync_windows: Vec<Window>,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_kept_plan_is_handed_on_once_and_only_when_the_same_for_every_operation() {
        for (same, builds) in [(true, 2), (false, 3)] {
            let count = Arc::new(AtomicUsize::new(0));
            let counted = Arc::clone(&count);
            let build: PlanBuilder = Box::new(move |_: &str| {
                counted.fetch_add(1, Ordering::Relaxed);
                Ok(SyncPlan {
                    tasks: Vec::new(),
                    on_delete: Vec::new(),
                    skipped: Vec::new(),
                })
            });
            let plan = AppPlan::new(build, same);
            let validated = plan.for_operation("validate").unwrap();
            plan.keep(validated);
            plan.for_operation("op-1").unwrap();
            plan.for_operation("op-2").unwrap();
            assert_eq!(count.load(Ordering::Relaxed), builds, "same: {same}");
        }
    }
}

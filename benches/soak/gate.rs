//! The soak's check of the RollingSync gate, from a watch of the Applications and one of the
//! ApplicationSet: when each Application first reported itself Healthy on each revision
//! (complete, as the rollout judges it: `ApplicationState::healthy_on_target` over
//! `observed_status`, the functions the controller's gate calls), and each promotion the
//! controller wrote — an Application's rollout entry turned Pending for a revision — with the
//! ApplicationSet's list as it stood in that same write. A violation is a promotion of a step k+1
//! Application before an Application of step k listed in that write was Healthy on the revision.
//! Times are the controller's own (`reconciledAt`, the entry's `lastTransitionTime`, whole
//! seconds): a step opens in a pass whose clock is at or after its Applications' last compare,
//! so a correct gate never shows a promotion earlier than a Healthy it waited for, and neither
//! the watches' delays nor the time an operation waits to start count.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use flotilla_core::api::application_set_status::RolloutApplicationState;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_input::observed_status;
use flotilla_core::rollout::ApplicationState;
use k8s_openapi::jiff::Timestamp;

/// What the watches saw of the rollout, and the step of every element ever listed.
#[derive(Default)]
pub struct GateLedger {
    /// Per Application and revision, the `reconciledAt` of its first status complete on it.
    healthy: HashMap<(String, String), Timestamp>,
    /// Per Application and revision, its first promotion seen.
    promotions: HashMap<(String, String), Promotion>,
    /// Pending entries written without target revisions (not judged).
    unknown_revision: HashSet<String>,
    /// Per element, its step (1-based).
    steps: HashMap<String, usize>,
    /// The list of the last ApplicationSet version seen, shared by the promotions written with it.
    listed: Arc<BTreeSet<String>>,
}

/// One Application's entry turned Pending, and the list it was decided over.
struct Promotion {
    at: Timestamp,
    listed: Arc<BTreeSet<String>>,
}

/// An Application of step k+1 promoted to a revision before one of step k was Healthy on it.
pub struct Violation {
    pub application: String,
    pub revision: String,
    pub promoted: Timestamp,
    /// The Application of the step before that was not, and when it was (if ever).
    pub waited_for: String,
    pub healthy: Option<Timestamp>,
}

impl GateLedger {
    /// Records that the element `name` belongs to step `step`.
    pub fn step(&mut self, name: &str, step: usize) {
        self.steps.insert(name.to_owned(), step);
    }

    /// Reads one observed version of the ApplicationSet: its list generator's elements, and
    /// the promotions in its status not seen before.
    pub fn observe_application_set(&mut self, appset: &ApplicationSet) {
        let spec = serde_json::to_value(&appset.spec).unwrap_or_default();
        let listed: BTreeSet<String> = spec["generators"][0]["list"]["elements"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|element| element["name"].as_str().map(str::to_owned))
            .collect();
        if *self.listed != listed {
            self.listed = Arc::new(listed);
        }
        let entries = appset.status.iter().flat_map(|s| &s.application_status);
        for entry in entries.filter(|e| e.status == RolloutApplicationState::Pending) {
            let Some(at) = entry.last_transition_time.as_ref().map(|t| t.0) else {
                continue;
            };
            if entry.target_revisions.is_empty() {
                self.unknown_revision.insert(entry.application.clone());
                continue;
            }
            let key = (entry.application.clone(), entry.target_revisions.join(","));
            self.promotions.entry(key).or_insert_with(|| Promotion {
                at,
                listed: Arc::clone(&self.listed),
            });
        }
    }

    /// Reads one observed version of an Application.
    pub fn observe(&mut self, app: &Application) {
        let name = app.metadata.name.clone().unwrap_or_default();
        let status = observed_status(app);
        let state = ApplicationState {
            name: name.clone(),
            labels: BTreeMap::new(),
            exists: true,
            spec_changed: false,
            target_revisions: Vec::new(),
            status,
            sync_blocked_by: None,
            previous_revisions: Vec::new(),
            destination: Default::default(),
        };
        if state.healthy_on_target()
            && let Some(reconciled) = state.status.reconciled_at
        {
            let first = self
                .healthy
                .entry((name, state.status.revisions.join(",")))
                .or_insert(reconciled);
            *first = (*first).min(reconciled);
        }
    }

    /// Whether `name` reported itself Healthy on `revision`.
    pub fn healthy_on(&self, name: &str, revision: &str) -> bool {
        self.healthy
            .contains_key(&(name.to_owned(), revision.to_owned()))
    }

    /// How many Applications of each step reported themselves Healthy
    /// on `revision`: how far its rollout got.
    pub fn reached(&self, revision: &str) -> BTreeMap<usize, usize> {
        let mut steps = BTreeMap::new();
        for (name, _) in self.healthy.keys().filter(|(_, r)| r == revision) {
            if let Some(&step) = self.steps.get(name) {
                *steps.entry(step).or_default() += 1;
            }
        }
        steps
    }

    /// The promotions judged (of Applications of steps after the first), the Applications
    /// promoted without a revision (not judged), and the violations among the promotions.
    pub fn violations(&self) -> (u64, u64, Vec<Violation>) {
        let mut judged = 0;
        let mut violations = Vec::new();
        for ((name, revision), promotion) in &self.promotions {
            let Some(step) = self.steps.get(name).copied().filter(|&s| s > 1) else {
                continue;
            };
            judged += 1;
            let before = promotion
                .listed
                .iter()
                .filter(|other| self.steps.get(*other) == Some(&(step - 1)));
            for other in before {
                let healthy = self
                    .healthy
                    .get(&(other.clone(), revision.clone()))
                    .copied();
                if healthy.is_none_or(|at| at > promotion.at) {
                    violations.push(Violation {
                        application: name.clone(),
                        revision: revision.clone(),
                        promoted: promotion.at,
                        waited_for: other.clone(),
                        healthy,
                    });
                    break;
                }
            }
        }
        violations.sort_by_key(|v| v.promoted);
        (judged, self.unknown_revision.len() as u64, violations)
    }
}

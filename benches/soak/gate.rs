//! The soak's check of the RollingSync gate, from a watch of the Applications: when each
//! Application first reported itself Healthy on each revision (complete, as the rollout judges
//! it: `ApplicationState::healthy_on_target` over `observed_status`, the functions the
//! controller's gate calls), when each started syncing each revision (its operation's start),
//! and when each was listed in the ApplicationSet. A violation is an Application of step k+1
//! that started a revision before every Application of step k listed then was Healthy on it.
//! Times are the controller's own (`reconciledAt`, `operationState.startedAt`, whole seconds):
//! a step opens in a pass whose clock is at or after its Applications' last compare and at or
//! before the syncs it requests, so a correct gate never shows a start earlier than a Healthy
//! it waited for, and the watch's own delay does not count.

use std::collections::{BTreeMap, HashMap, HashSet};

use flotilla_core::api::Application;
use flotilla_core::controller::appset::rollout_input::observed_status;
use flotilla_core::rollout::ApplicationState;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How long after its element was listed an Application counts as a member of its step: the
/// ApplicationSet controller must have generated it first.
const MEMBER_AFTER: SignedDuration = SignedDuration::from_secs(30);

/// What the watch saw of the rollout, and the listing of every element.
#[derive(Default)]
pub struct GateLedger {
    /// Per Application and revision, the `reconciledAt` of its first status complete on it.
    healthy: HashMap<(String, String), Timestamp>,
    /// Per Application and revision, its earliest operation start at it.
    starts: HashMap<(String, String), Timestamp>,
    /// Operations (Application, start) whose revision the status did not say (not judged).
    unknown_revision: HashSet<(String, Timestamp)>,
    /// Per Application, its step (1-based) and when its element was listed and unlisted.
    members: HashMap<String, Member>,
}

/// One element of the ApplicationSet's list.
struct Member {
    step: usize,
    /// (listed, unlisted) intervals.
    listed: Vec<(Timestamp, Option<Timestamp>)>,
}

/// An Application of step k+1 that started a revision before one of step k was Healthy on it.
pub struct Violation {
    pub application: String,
    pub revision: String,
    pub started: Timestamp,
    /// The Application of the step before that was not, and when it was (if ever).
    pub waited_for: String,
    pub healthy: Option<Timestamp>,
}

impl GateLedger {
    /// Records that the element `name` of step `step` is listed from `at`.
    pub fn listed(&mut self, name: &str, step: usize, at: Timestamp) {
        self.members
            .entry(name.to_owned())
            .or_insert_with(|| Member {
                step,
                listed: Vec::new(),
            })
            .listed
            .push((at, None));
    }

    /// Records that the element `name` is unlisted from `at`.
    pub fn unlisted(&mut self, name: &str, at: Timestamp) {
        if let Some((_, to)) = self
            .members
            .get_mut(name)
            .and_then(|member| member.listed.last_mut())
        {
            *to = Some(at);
        }
    }

    /// Reads one observed version of an Application.
    pub fn observe(&mut self, app: &Application) {
        let name = app.metadata.name.clone().unwrap_or_default();
        let status = observed_status(app);
        if let Some(operation) = &status.operation_state {
            if operation.revisions.is_empty() {
                self.unknown_revision
                    .insert((name.clone(), operation.started_at));
            } else {
                let start = self
                    .starts
                    .entry((name.clone(), operation.revisions.join(",")))
                    .or_insert(operation.started_at);
                *start = (*start).min(operation.started_at);
            }
        }
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
            if let Some(member) = self.members.get(name) {
                *steps.entry(member.step).or_default() += 1;
            }
        }
        steps
    }

    /// The operation starts judged (of Applications of steps after the first) and the
    /// violations among them.
    pub fn violations(&self) -> (u64, u64, Vec<Violation>) {
        let mut by_step: BTreeMap<usize, Vec<(&String, &Member)>> = BTreeMap::new();
        for (name, member) in &self.members {
            by_step.entry(member.step).or_default().push((name, member));
        }
        let mut judged = 0;
        let mut violations = Vec::new();
        for ((name, revision), &started) in &self.starts {
            let Some(step) = self.members.get(name).map(|m| m.step).filter(|&s| s > 1) else {
                continue;
            };
            judged += 1;
            let before = by_step.get(&(step - 1)).map_or(&[][..], Vec::as_slice);
            let member_then = |member: &Member| {
                member.listed.iter().any(|(from, to)| {
                    *from + MEMBER_AFTER <= started && to.is_none_or(|to| to > started)
                })
            };
            for (other, _) in before.iter().filter(|(_, member)| member_then(member)) {
                let healthy = self
                    .healthy
                    .get(&((*other).clone(), revision.clone()))
                    .copied();
                if healthy.is_none_or(|at| at > started) {
                    violations.push(Violation {
                        application: name.clone(),
                        revision: revision.clone(),
                        started,
                        waited_for: (*other).clone(),
                        healthy,
                    });
                    break;
                }
            }
        }
        violations.sort_by_key(|v| v.started);
        (judged, self.unknown_revision.len() as u64, violations)
    }
}

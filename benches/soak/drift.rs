//! The soak's drifts: the benchmark changes one key of a live ConfigMap (`data.drifted`, which
//! every commit leaves at `no`, so a commit never hides a drift and a drift is named apart from
//! a commit) and follows, from watches, when the controller noticed it: the first of the
//! Application's status naming the field (`status.resources[]` OutOfSync with
//! `firstDifference: /data/drifted`) and the ConfigMap back to `no` (a sync overwrote the
//! drift before any compare reported it). A drift not noticed within the bound is missed.
//! When it was healed is recorded too: under a RollingSync a drifted Application waits for its
//! step to sync it, so that time includes the rollout's gates.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use flotilla_core::api::Application;
use flotilla_core::api::application_set_status::SyncStatusCode;
use k8s_openapi::api::core::v1::ConfigMap;

/// The ConfigMap key the manifests set to `no` and a drift changes.
pub const FIELD: &str = "drifted";
/// How the Application's status names a drift of [`FIELD`].
const DIFFERENCE: &str = "/data/drifted";
/// How long after its last drift was resolved an Application may drift again (a compare
/// written before the heal may still be on its way to the watch).
const QUIET: Duration = Duration::from_secs(60);

/// How a drift was first noticed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The Application's status named the drifted field.
    Status,
    /// The ConfigMap was healed before a status named it.
    Healed,
}

/// One drift.
struct Drift {
    app: String,
    value: String,
    made: Instant,
    noticed: Option<(Duration, Notice)>,
    /// Whether a watched version of the ConfigMap held the drift.
    seen_live: bool,
    healed: Option<Duration>,
}

impl Drift {
    fn resolved(&self) -> bool {
        self.noticed.is_some() && self.healed.is_some()
    }
}

/// Every drift made, and what the watches saw of them.
#[derive(Default)]
pub struct DriftLedger {
    drifts: Vec<Drift>,
    /// Per Application, its last drift.
    last: HashMap<String, usize>,
    /// When each Application's last drift was resolved.
    resolved_at: HashMap<String, Instant>,
    /// The Applications whose last watched status names the drifted field.
    shows: HashSet<String>,
}

/// The drifts' figures.
pub struct DriftReport {
    pub made: usize,
    /// Time to the first notice, and how, of each noticed drift.
    pub noticed: Vec<(Duration, Notice)>,
    pub healed: Vec<Duration>,
    /// Drifts not noticed within the bound: Application, age.
    pub missed: Vec<(String, Duration)>,
    /// Drifts noticed but not healed by the end.
    pub unhealed: usize,
}

impl DriftLedger {
    /// Whether `app` may drift now: no drift of it is unresolved or recently resolved, and its
    /// status does not name the field.
    pub fn may_drift(&self, app: &str, now: Instant) -> bool {
        let idle = self
            .last
            .get(app)
            .is_none_or(|&i| self.drifts[i].resolved());
        idle && !self.shows.contains(app)
            && self
                .resolved_at
                .get(app)
                .is_none_or(|at| now.duration_since(*at) >= QUIET)
    }

    /// Whether `app` has a drift not yet resolved (it is not removed from the list meanwhile).
    pub fn open(&self, app: &str) -> bool {
        self.last
            .get(app)
            .is_some_and(|&i| !self.drifts[i].resolved())
    }

    /// Records that `app`'s ConfigMap was given `value` at `made`.
    pub fn drifted(&mut self, app: &str, value: String, made: Instant) {
        self.last.insert(app.to_owned(), self.drifts.len());
        self.drifts.push(Drift {
            app: app.to_owned(),
            value,
            made,
            noticed: None,
            seen_live: false,
            healed: None,
        });
    }

    /// Forgets the drift of `app` just recorded: it could not be made.
    pub fn withdraw(&mut self, app: &str) {
        if self
            .last
            .get(app)
            .is_some_and(|&i| i + 1 == self.drifts.len())
        {
            self.last.remove(app);
            self.drifts.pop();
        }
    }

    /// Reads one watched version of an Application, seen at `now`.
    pub fn observe_application(&mut self, app: &Application, now: Instant) {
        let name = app.metadata.name.clone().unwrap_or_default();
        let shows = app.status.as_ref().is_some_and(|status| {
            status.resources.iter().any(|r| {
                r.kind == "ConfigMap"
                    && r.name == name
                    && r.status == SyncStatusCode::OutOfSync
                    && r.first_difference == DIFFERENCE
            })
        });
        if !shows {
            self.shows.remove(&name);
            return;
        }
        self.shows.insert(name.clone());
        if let Some(&i) = self.last.get(&name) {
            let drift = &mut self.drifts[i];
            if drift.noticed.is_none() {
                drift.noticed = Some((now.duration_since(drift.made), Notice::Status));
                self.settle(i, now);
            }
        }
    }

    /// Reads one watched version of a ConfigMap, seen at `now`.
    pub fn observe_config_map(&mut self, config_map: &ConfigMap, now: Instant) {
        let name = config_map.metadata.name.as_deref().unwrap_or_default();
        let Some(&i) = self.last.get(name) else {
            return;
        };
        let value = config_map.data.as_ref().and_then(|d| d.get(FIELD));
        let drift = &mut self.drifts[i];
        if value == Some(&drift.value) {
            drift.seen_live = true;
        } else if drift.seen_live && drift.healed.is_none() {
            let after = now.duration_since(drift.made);
            drift.healed = Some(after);
            drift.noticed.get_or_insert((after, Notice::Healed));
            self.settle(i, now);
        }
    }

    /// Notes when drift `i` was resolved.
    fn settle(&mut self, i: usize, now: Instant) {
        if self.drifts[i].resolved() {
            self.resolved_at.insert(self.drifts[i].app.clone(), now);
        }
    }

    /// Whether every drift made has been noticed: nothing left to wait for.
    pub fn all_noticed(&self) -> bool {
        self.drifts.iter().all(|d| d.noticed.is_some())
    }

    /// The figures at `now`, a drift counting as missed when not noticed within `bound`.
    pub fn report(&self, now: Instant, bound: Duration) -> DriftReport {
        let noticed: Vec<(Duration, Notice)> =
            self.drifts.iter().filter_map(|d| d.noticed).collect();
        DriftReport {
            made: self.drifts.len(),
            healed: self.drifts.iter().filter_map(|d| d.healed).collect(),
            missed: self
                .drifts
                .iter()
                .filter_map(|d| {
                    let late = match d.noticed {
                        Some((after, _)) => after > bound,
                        None => now.duration_since(d.made) > bound,
                    };
                    late.then(|| (d.app.clone(), now.duration_since(d.made)))
                })
                .collect(),
            unhealed: self
                .drifts
                .iter()
                .filter(|d| d.noticed.is_some() && d.healed.is_none())
                .count(),
            noticed,
        }
    }
}

//! Where a RollingSync's per-Application state is stored, so a rollout of any size fits
//! etcd's request limit: in the ApplicationSet's `status.applicationStatus` (as Argo CD does)
//! while that list's JSON stays within a limit (the controller's `--rollout-status-limit`),
//! otherwise on each Application (`status.rollout`), the ApplicationSet keeping per-step counts
//! (`status.applicationStatusSummary`).
//!
//! The rollout itself never sees the difference: [`hydrate`] gives back the full list from
//! the Applications before a pass (and before `rollout explain` or the web view read it), and
//! [`split`] decides after a pass what the ApplicationSet's status holds and which
//! Applications' entries must be written — only those that changed, so a pass writes as many
//! Applications as changed state, and the ApplicationSet's status write stays small.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::api::Application;
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ApplicationSetStatus, MAX_COUNTED_REVISIONS, RevisionCount,
    RolloutApplicationState, StepRolloutSummary,
};

/// The default `--rollout-status-limit`: the bytes of JSON `status.applicationStatus` may take
/// (about 2,000 Applications) before the entries move to the Applications. With the rest of the
/// status bounded ([`super::status::MAX_STATUS_BYTES`] for all of it), the ApplicationSet stays
/// well within etcd's 1.5 MiB request limit.
pub const DEFAULT_ROLLOUT_STATUS_LIMIT: usize = 512 * 1024;

/// What a pass stores: the ApplicationSet's status, and the Applications' entries to write.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// The status to write on the ApplicationSet.
    pub stored: ApplicationSetStatus,
    /// The entries to write on Applications (`status.rollout`), by Application: those that
    /// differ from what the Application holds.
    pub application_writes: Vec<ApplicationSetApplicationStatus>,
}

/// Whether `status` keeps its entries on the Applications.
#[must_use]
pub fn on_applications(status: &ApplicationSetStatus) -> bool {
    !status.application_status_summary.is_empty()
}

/// Splits the full status `full` (every entry in `applicationStatus`) for storage: as it is
/// while its entries' JSON takes at most `limit` bytes; else with the entries on the
/// Applications and per-step counts in the ApplicationSet. `applications`: the Applications as
/// last read (an entry they already hold is not written again).
#[must_use]
pub fn split<'a>(
    full: ApplicationSetStatus,
    applications: impl IntoIterator<Item = &'a Application>,
    limit: usize,
) -> Split {
    if json_len(&full.application_status) <= limit {
        return Split {
            stored: ApplicationSetStatus {
                application_status_summary: Vec::new(),
                ..full
            },
            application_writes: Vec::new(),
        };
    }
    let held: HashMap<&str, &ApplicationSetApplicationStatus> = applications
        .into_iter()
        .filter_map(|app| {
            let entry = app.status.as_ref()?.rollout.as_ref()?;
            Some((app.metadata.name.as_deref()?, entry))
        })
        .collect();
    let mut stored = full;
    let entries = std::mem::take(&mut stored.application_status);
    stored.application_status_summary = summary(&entries);
    let application_writes = entries
        .into_iter()
        .filter(|entry| held.get(entry.application.as_str()) != Some(&entry))
        .collect();
    Split {
        stored,
        application_writes,
    }
}

/// `status` with its entries back in `applicationStatus` when they are kept on the
/// Applications: each of `applications` that holds one (sorted by name, as the list is).
/// A status that lists them is left as it is.
pub fn hydrate<'a>(
    status: &mut ApplicationSetStatus,
    applications: impl IntoIterator<Item = &'a Application>,
) {
    if !on_applications(status) {
        return;
    }
    let mut entries: Vec<ApplicationSetApplicationStatus> = applications
        .into_iter()
        .filter_map(|app| app.status.as_ref()?.rollout.clone())
        .collect();
    entries.sort_by(|a, b| a.application.cmp(&b.application));
    status.application_status = entries;
}

/// How many entries of each step are in each state, and on each set of target revisions, by
/// step.
fn summary(entries: &[ApplicationSetApplicationStatus]) -> Vec<StepRolloutSummary> {
    type Revisions<'a> = BTreeMap<&'a [String], u32>;
    let mut steps: BTreeMap<(i64, &str), (StepRolloutSummary, Revisions<'_>)> = BTreeMap::new();
    for entry in entries {
        let key = (
            entry.step.parse::<i64>().unwrap_or(i64::MAX),
            entry.step.as_str(),
        );
        let (counts, revisions) = steps.entry(key).or_insert_with(|| {
            let counts = StepRolloutSummary {
                step: entry.step.clone(),
                ..StepRolloutSummary::default()
            };
            (counts, BTreeMap::new())
        });
        let count = match entry.status {
            RolloutApplicationState::Waiting => &mut counts.waiting,
            RolloutApplicationState::Pending => &mut counts.pending,
            RolloutApplicationState::Progressing => &mut counts.progressing,
            RolloutApplicationState::Healthy => &mut counts.healthy,
        };
        *count += 1;
        *revisions.entry(&entry.target_revisions).or_default() += 1;
    }
    steps
        .into_values()
        .map(|(mut counts, revisions)| {
            if revisions.len() <= MAX_COUNTED_REVISIONS {
                counts.revisions = revisions
                    .into_iter()
                    .map(|(target_revisions, applications)| RevisionCount {
                        target_revisions: target_revisions.to_vec(),
                        applications,
                    })
                    .collect();
            }
            counts
        })
        .collect()
}

/// The length of `value` in JSON.
#[must_use]
pub fn json_len(value: &impl Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| json.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApplicationSpec;
    use crate::api::application::ApplicationStatus;
    use crate::controller::appset::status::MAX_STATUS_BYTES;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// Entry `i` of a fleet of `n` in 10 steps: the first steps Healthy, step 4 under way.
    fn entry(i: usize) -> ApplicationSetApplicationStatus {
        let step = i % 10 + 1;
        let status = match step {
            1..=3 => RolloutApplicationState::Healthy,
            4 if i.is_multiple_of(3) => RolloutApplicationState::Progressing,
            4 => RolloutApplicationState::Pending,
            _ => RolloutApplicationState::Waiting,
        };
        ApplicationSetApplicationStatus {
            application: format!("checkout-{i:05}-eu-west-1-production"),
            status,
            step: step.to_string(),
            target_revisions: vec!["0123456789abcdef0123456789abcdef01234567".into()],
            last_transition_time: Some(Time(
                format!("2026-12-05T09:{:02}:{:02}Z", i / 60 % 60, i % 60)
                    .parse()
                    .expect("a time"),
            )),
            message: format!("step {step}: Healthy on 0123456"),
        }
    }

    fn fleet(n: usize) -> ApplicationSetStatus {
        ApplicationSetStatus {
            application_status: (0..n).map(entry).collect(),
            ..ApplicationSetStatus::default()
        }
    }

    /// Applications holding `entries` (as written by an earlier pass).
    fn holding(entries: &[ApplicationSetApplicationStatus]) -> Vec<Application> {
        entries
            .iter()
            .map(|entry| {
                let mut app = Application::new(&entry.application, ApplicationSpec::default());
                app.status = Some(ApplicationStatus {
                    rollout: Some(entry.clone()),
                    ..ApplicationStatus::default()
                });
                app
            })
            .collect()
    }

    #[test]
    fn a_small_rollout_stays_in_application_status_as_argo_cd_keeps_it() {
        let full = fleet(100);
        let split = split(full.clone(), &[], DEFAULT_ROLLOUT_STATUS_LIMIT);
        assert_eq!(split.stored, full);
        assert!(split.application_writes.is_empty());
    }

    #[test]
    fn twenty_thousand_applications_fit_and_come_back_exactly() {
        let full = fleet(20_000);
        assert!(
            json_len(&full) > 3 * 1024 * 1024,
            "inline, the list alone is past etcd's limit: {}",
            json_len(&full)
        );
        let first = split(full.clone(), &[], DEFAULT_ROLLOUT_STATUS_LIMIT);
        assert!(first.stored.application_status.is_empty());
        assert!(
            json_len(&first.stored) < 2 * 1024,
            "{}",
            json_len(&first.stored)
        );
        assert!(json_len(&first.stored) < MAX_STATUS_BYTES);
        assert_eq!(first.application_writes, full.application_status);
        assert_eq!(first.stored.application_status_summary.len(), 10);
        assert_eq!(
            first.stored.application_status_summary[3],
            StepRolloutSummary {
                step: "4".into(),
                waiting: 0,
                pending: 1_333,
                progressing: 667,
                healthy: 0,
                revisions: vec![RevisionCount {
                    target_revisions: vec!["0123456789abcdef0123456789abcdef01234567".into()],
                    applications: 2_000,
                }],
            }
        );
        // A restart reads the entries back from the Applications: exactly the list.
        let apps = holding(&first.application_writes);
        let mut read = first.stored.clone();
        hydrate(&mut read, &apps);
        assert_eq!(
            read,
            ApplicationSetStatus {
                application_status_summary: first.stored.application_status_summary.clone(),
                ..full.clone()
            }
        );
        // The next pass writes only the entries that changed.
        let mut next = full;
        next.application_status[3].status = RolloutApplicationState::Healthy;
        let second = split(next.clone(), &apps, DEFAULT_ROLLOUT_STATUS_LIMIT);
        assert_eq!(
            second.application_writes,
            [next.application_status[3].clone()]
        );
    }

    #[test]
    fn the_limit_decides_and_a_listed_status_is_never_hydrated() {
        let full = fleet(10);
        let low = split(full.clone(), &[], 100);
        assert!(on_applications(&low.stored));
        assert_eq!(low.application_writes.len(), 10);
        let mut listed = full.clone();
        hydrate(&mut listed, &holding(&[entry(99)]));
        assert_eq!(listed, full);
    }

    #[test]
    fn a_step_is_counted_by_revision_up_to_a_bound() {
        let on = |revisions: usize| {
            // Step 1 holds every tenth entry: five on each revision.
            let mut status = fleet(50 * revisions);
            for (i, entry) in status.application_status.iter_mut().enumerate() {
                entry.target_revisions = vec![format!("r{}", i / 10 % revisions)];
            }
            split(status, &[], 0).stored.application_status_summary[0].clone()
        };
        let two = on(2);
        assert_eq!(
            two.revisions,
            [("r0", 5), ("r1", 5)]
                .map(|(revision, applications)| RevisionCount {
                    target_revisions: vec![revision.into()],
                    applications,
                })
                .to_vec()
        );
        assert_eq!(
            on(MAX_COUNTED_REVISIONS).revisions.len(),
            MAX_COUNTED_REVISIONS
        );
        assert_eq!(
            on(MAX_COUNTED_REVISIONS + 1).revisions,
            [],
            "past the bound, no step is counted by revision"
        );
    }
}

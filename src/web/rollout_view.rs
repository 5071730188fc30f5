//! The rollout of one ApplicationSet as `flotilla rollout explain` would describe it now, from
//! what the watches hold instead of a fresh render: the live Applications stand for the
//! generated ones (the view changes no spec) and each Application's target revisions are those
//! the controller last recorded in the ApplicationSet's status. The step function decides;
//! nothing is written.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_input::{
    Observation, SourceRevision, rolling_sync, rollout_input,
};
use flotilla_core::controller::appset::rollout_layout::hydrate;
use flotilla_core::project::Projects;
use flotilla_core::rollout::{RolloutDecision, RolloutInput, advance};

/// The step function's input and decision for `appset`, when it rolls out with RollingSync.
#[must_use]
pub fn current_rollout(
    appset: &ApplicationSet,
    applications: &[Application],
    now: Timestamp,
    projects: &Projects,
) -> Option<(RolloutInput, RolloutDecision)> {
    let strategy = rolling_sync(appset)?;
    // Every entry, also those a large rollout keeps on its Applications.
    let mut status = appset.status.clone().unwrap_or_default();
    hydrate(&mut status, applications);
    let recorded = status.application_status.as_slice();
    let resolved: BTreeMap<SourceRevision, String> = applications
        .iter()
        .filter_map(|application| {
            let name = application.metadata.name.as_deref()?;
            let entry = recorded.iter().find(|entry| entry.application == name)?;
            let sources = SourceRevision::of(application);
            (sources.len() == entry.target_revisions.len()).then(|| {
                sources
                    .into_iter()
                    .zip(entry.target_revisions.iter().cloned())
            })
        })
        .flatten()
        .collect();
    let input = rollout_input(&Observation {
        now,
        strategy,
        desired: applications,
        existing: applications,
        updated: &BTreeSet::new(),
        resolved: &resolved,
        prior: appset,
        projects,
    });
    let decision = advance(&input);
    Some((input, decision))
}

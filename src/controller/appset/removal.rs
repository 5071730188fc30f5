//! Applications that leave the generators' output (a cluster decommissioned, an element
//! removed): with `strategy.removalOrder: Reverse` — the default with RollingSync steps — they
//! are deleted step by step in reverse dependency order, each step's once the later step's are
//! gone (their hooks run and finalizers done), as [`removal`] decides from the removed
//! Applications that still exist, so a restarted controller resumes where the removal stands;
//! otherwise all at once, as Argo CD does. `applicationsSync` decides whether they are deleted
//! at all (the plan lists them only when it allows it). Where a removal in steps stands is
//! returned for `status.deletion`, written with the rest of the status.

use kube::{Api, ResourceExt};

use super::apply::delete_named;
use super::context::AppSetContext;
use super::deletion::{EMPTY, announce_step, warn};
use super::error::AppSetError;
use flotilla_core::api::application_set_status::DeletionProgress;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::plan::Plan;
use flotilla_core::rollout::RolloutConfig;
use flotilla_core::rollout::reverse_deletion::{
    OwnedApplication, Removal, ReverseDeletionStep, deletion_progress, removal,
};

/// Deletes what `plan` removes now: all of it, or the next step of it. Returns where a removal
/// in steps stands (`status.deletion`: the step being deleted and what is left), `None` when
/// nothing is removed in steps.
///
/// # Errors
/// A deletion failed.
pub(super) async fn remove(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    plan: &Plan,
    existing: &[std::sync::Arc<Application>],
) -> Result<Option<DeletionProgress>, AppSetError> {
    if plan.delete.is_empty() {
        return Ok(None);
    }
    let removed: Vec<OwnedApplication<'_>> = existing
        .iter()
        .filter(|app| plan.delete.contains(&app.name_any()))
        .map(|app| OwnedApplication {
            name: app.metadata.name.as_deref().unwrap_or_default(),
            labels: app.metadata.labels.as_ref().unwrap_or(&EMPTY),
            deleting: app.metadata.deletion_timestamp.is_some(),
        })
        .collect();
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let strategy = appset.spec.strategy.as_ref();
    let config = strategy.and_then(|s| RolloutConfig::from_strategy(s).ok());
    let decided = removal(strategy, &removed);
    let progress = match &decided {
        Removal::InSteps(_) => config
            .as_ref()
            .and_then(|config| deletion_progress(config, &removed).ok().flatten()),
        Removal::AllAtOnce | Removal::Unordered(_) => None,
    };
    match decided {
        Removal::AllAtOnce => delete_named(&api, &plan.delete).await?,
        Removal::Unordered(error) => {
            let note = format!(
                "removalOrder Reverse cannot order the Applications no longer generated ({error}); deleting them at once"
            );
            warn(ctx, appset, note).await;
            delete_named(&api, &plan.delete).await?;
        }
        Removal::InSteps(ReverseDeletionStep::Delete {
            group,
            applications,
        }) => {
            let what = config
                .as_ref()
                .map_or_else(String::new, |config| format!("{} ", group.describe(config)));
            let note = format!(
                "removing {what}in reverse order, no longer generated: {}",
                applications.join(", ")
            );
            announce_step(ctx, appset, note).await;
            delete_named(&api, &applications).await?;
        }
        Removal::InSteps(ReverseDeletionStep::Wait { .. } | ReverseDeletionStep::Done) => {}
    }
    Ok(progress)
}

//! One RollingSync pass of a reconcile: the step function's input observed (sources resolved,
//! analyses looked at, the ApplicationSets its steps wait for read) and its decision.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::analysis;
use super::context::AppSetContext;
use super::dependencies::read_dependencies;
use super::error::AppSetError;
use super::observe::observe;
use super::render::{Planned, generate_render_validate_plan};
use super::rollout::{RolloutError, resolve_sources};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_input::{Observation, rolling_sync, rollout_input};
use flotilla_core::rollout::analysis::probes;
use flotilla_core::rollout::{RolloutDecision, RolloutInput, advance};

/// One rollout pass: what it observed and what it decided.
pub struct RolloutPass {
    pub input: RolloutInput,
    pub decision: RolloutDecision,
}

/// The rollout step: a pass of the step function over the Applications as observed before this
/// reconcile's writes, with their sources resolved now. `None` without a RollingSync strategy.
pub(super) async fn rollout(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    planned: &Planned,
    existing: &[Arc<Application>],
) -> Option<Result<RolloutPass, AppSetError>> {
    let input = observed_rollout(ctx, appset, planned, existing).await?;
    Some(input.map(|input| RolloutPass {
        decision: advance(&input),
        input,
    }))
}

/// The step function's input for `appset` (a RollingSync), `None` for other strategies.
pub(super) async fn observed_rollout(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    planned: &Planned,
    existing: &[Arc<Application>],
) -> Option<Result<RolloutInput, AppSetError>> {
    let strategy = rolling_sync(appset)?;
    let resolved = resolve_sources(&ctx.repos, &planned.desired).await;
    let projects = ctx.projects.current().await.map_err(RolloutError::from);
    let (resolved, projects) = match resolved.and_then(|r| projects.map(|p| (r, p))) {
        Ok(both) => both,
        Err(error) => {
            return Some(Err(AppSetError::Rollout {
                appset: appset.name_any(),
                error,
            }));
        }
    };
    let updated = planned
        .plan
        .update
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let mut input = rollout_input(&Observation {
        now: Timestamp::now(),
        strategy,
        desired: &planned.desired,
        existing,
        updated: &updated,
        resolved: &resolved,
        prior: appset,
        projects: &projects,
    });
    input.analysis = analysis::observe(&ctx.clusters, &probes(&input)).await;
    input.external = match read_dependencies(ctx, appset, &projects).await {
        Ok(read) => read,
        Err(error) => {
            return Some(Err(AppSetError::Rollout {
                appset: appset.name_any(),
                error,
            }));
        }
    };
    Some(Ok(input))
}

/// The rollout input the controller would use for `appset` now, read from the cluster without
/// writing anything (`flotilla rollout explain`). `None` unless it uses RollingSync.
///
/// # Errors
/// Listing, generating, rendering or resolving fails.
pub async fn live_rollout_input(
    ctx: &AppSetContext,
    appset: &Arc<ApplicationSet>,
) -> Result<Option<RolloutInput>, AppSetError> {
    if rolling_sync(appset).is_none() {
        return Ok(None);
    }
    let existing = observe(ctx, appset).await?;
    let planned = generate_render_validate_plan(ctx, appset, &existing).await?;
    observed_rollout(ctx, appset, &planned, &existing)
        .await
        .transpose()
}

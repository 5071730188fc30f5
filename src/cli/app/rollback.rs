//! `flotilla app rollback NAME [ID]`: syncs the Application back to an entry of its history (by
//! default the one before the newest), as `argocd app rollback`: the decision is
//! [`crate::controller::application::rollback`]; this writes it — `spec.operation` (and, with
//! `--force` on an Application with automated sync, `spec.syncPolicy.automated.enabled: false`)
//! in one patch — and the controller runs the operation as any `flotilla app sync`.

use std::process::ExitCode;

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::api::application::{Application, InitiatedBy};
use crate::cluster::api_error::ApiError;
use crate::controller::application::rollback::rollback;

/// Arguments of `flotilla app rollback`.
#[derive(Debug, clap::Args)]
pub struct RollbackArgs {
    /// The Application.
    pub app: String,
    /// The history id to roll back to (`flotilla app history`); default: the entry before the
    /// newest.
    pub id: Option<i64>,
    /// With automated sync on: suspend it (set spec.syncPolicy.automated.enabled: false) and
    /// roll back; without it the rollback is refused.
    #[arg(long)]
    pub force: bool,
    /// Delete tracked objects the history entry's revision does not have.
    #[arg(long)]
    pub prune: bool,
}

/// Requests the rollback `args` asks for, as `username`.
///
/// # Errors
/// No such Application, a refused rollback (see
/// [`crate::controller::application::rollback::RollbackError`]), or a rejected write.
pub async fn request_rollback(
    api: &Api<Application>,
    args: &RollbackArgs,
    username: String,
) -> anyhow::Result<ExitCode> {
    let app = api
        .get(&args.app)
        .await
        .map_err(ApiError::from)
        .context(format!("Application {}", args.app))?;
    let initiated_by = InitiatedBy {
        username,
        automated: false,
    };
    let decided = rollback(&app, args.id, (args.force, args.prune), initiated_by)?;
    let mut patch = json!({
        "metadata": {"resourceVersion": app.metadata.resource_version},
        "spec": {"operation": decided.operation},
    });
    if decided.suspend_automated {
        patch["spec"]["syncPolicy"] = json!({"automated": {"enabled": false}});
    }
    api.patch(&args.app, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(ApiError::from)
        .context(format!(
            "requesting the rollback of Application {}",
            args.app
        ))?;
    if decided.suspend_automated {
        println!(
            "automated sync of Application {} suspended (spec.syncPolicy.automated.enabled: false)",
            args.app
        );
    }
    println!(
        "rollback of Application {} to history entry {} (revision {}) requested",
        args.app, decided.entry.id, decided.entry.revision
    );
    Ok(ExitCode::SUCCESS)
}

//! `flotilla app rollback NAME [ID]`: syncs the Application back to an entry of its history (by
//! default the one before the newest), as `argocd app rollback`: the decision is
//! [`flotilla_core::controller::application::rollback`]; the shared action writes it —
//! `spec.operation` (and, with `--force` on an Application with automated sync,
//! `spec.syncPolicy.automated.enabled: false`) in one patch — and the controller runs the
//! operation as any `flotilla app sync`.

use std::process::ExitCode;

use kube::Api;

use crate::actions::application::rollback;
use flotilla_core::api::application::Application;

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

/// Requests the rollback `args` asks for, as `username` (the shared action,
/// [`crate::actions::application::rollback`]).
///
/// # Errors
/// No such Application, a refused rollback (see
/// [`flotilla_core::controller::application::rollback::RollbackError`]), or a rejected write.
pub async fn request_rollback(
    api: &Api<Application>,
    args: &RollbackArgs,
    username: String,
) -> anyhow::Result<ExitCode> {
    let done = rollback(api, &args.app, args.id, (args.force, args.prune), &username).await?;
    println!("{done}");
    Ok(ExitCode::SUCCESS)
}

//! `flotilla app set|unset NAME`: change fields of an Application's spec. The spec is read, the
//! flags change it ([`super::spec_flags`]), and only the fields that changed are sent, as one
//! merge patch carrying the resourceVersion read: a field no flag names stays as the server has
//! it, and a change made meanwhile fails the patch instead of being overwritten.

use std::process::ExitCode;

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};

use super::spec_flags::{SpecFlags, UnsetFlags};
use crate::cli::missing::get_named;
use crate::cli::output::{OutputFormat, Written};
use crate::cluster::api_server::api_error::ApiError;
use flotilla_core::api::application::{Application, ApplicationSpec};
use flotilla_core::api::merge_patch::difference;

/// Arguments of `flotilla app set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// The Application.
    pub app: String,
    #[command(flatten)]
    pub spec: SpecFlags,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Arguments of `flotilla app unset`.
#[derive(Debug, clap::Args)]
pub struct UnsetArgs {
    /// The Application.
    pub app: String,
    #[command(flatten)]
    pub unset: UnsetFlags,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// No flag given: nothing to change.
#[derive(Debug, thiserror::Error)]
#[error("no field to {verb}: pass at least one flag (see flotilla app {verb} --help)")]
pub struct NothingToChange {
    verb: &'static str,
}

/// Changes the fields `args` name.
///
/// # Errors
/// No flag, no such Application, a flag that cannot apply, or a refused patch.
pub async fn set(api: &Api<Application>, args: &SetArgs) -> anyhow::Result<ExitCode> {
    if !args.spec.any() {
        return Err(NothingToChange { verb: "set" }.into());
    }
    change(api, &args.app, args.output, |name, spec| {
        args.spec.apply(name, spec)
    })
    .await
}

/// Removes what `args` name.
///
/// # Errors
/// No flag, no such Application, a flag that cannot apply, or a refused patch.
pub async fn unset(api: &Api<Application>, args: &UnsetArgs) -> anyhow::Result<ExitCode> {
    if !args.unset.any() {
        return Err(NothingToChange { verb: "unset" }.into());
    }
    change(api, &args.app, args.output, |name, spec| {
        args.unset.apply(name, spec)
    })
    .await
}

/// Reads the Application `name`, changes its spec with `edit`, and patches what changed.
async fn change<E>(
    api: &Api<Application>,
    name: &str,
    output: OutputFormat,
    edit: impl FnOnce(&str, &mut ApplicationSpec) -> Result<(), E>,
) -> anyhow::Result<ExitCode>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let app = get_named(api, name).await?;
    let mut spec = app.spec.clone();
    edit(name, &mut spec)?;
    let changes = difference(
        &serde_json::to_value(&app.spec)?,
        &serde_json::to_value(&spec)?,
    );
    let (written, message) = if changes.as_object().is_some_and(serde_json::Map::is_empty) {
        (app, format!("application '{name}' unchanged"))
    } else {
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": app.metadata.resource_version},
            "spec": changes,
        });
        let patched = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(ApiError::from)
            .with_context(|| format!("patching Application {name}"))?;
        (patched, format!("application '{name}' updated"))
    };
    print!(
        "{}",
        output.print(&Written {
            object: &written,
            message,
        })?
    );
    Ok(ExitCode::SUCCESS)
}

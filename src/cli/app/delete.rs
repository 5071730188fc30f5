//! `flotilla app delete NAME`: deletes an Application as `argocd app delete` does. With
//! `--cascade` (the default) its resources go with it: the resources finalizer is added when it
//! has none, so the controller deletes them (hooks and waves as for any deletion) before the
//! Application goes. `--cascade=false` removes the resources finalizers first, leaving the
//! resources in place. `--wait` waits until the Application is gone.

use std::process::ExitCode;

use anyhow::Context as _;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};

use crate::cli::deletion_wait::DeletionWaitArgs;
use crate::cli::missing::get_named;
use crate::cli::output::{OutputFormat, Written};
use crate::cluster::api_server::api_error::ApiError;
use flotilla_core::api::application::Application;
use flotilla_core::controller::application::deletion::RESOURCE_FINALIZERS;
use flotilla_core::controller::appset::ownership::RESOURCES_FINALIZER;

/// Arguments of `flotilla app delete`.
#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// The Application.
    pub app: String,
    /// Delete the Application's resources with it (`--cascade=false` leaves them).
    #[arg(
        long,
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub cascade: bool,
    #[command(flatten)]
    pub wait: DeletionWaitArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Deletes the Application.
///
/// # Errors
/// No such Application, or a refused patch or deletion.
pub async fn delete(api: &Api<Application>, args: &DeleteArgs) -> anyhow::Result<ExitCode> {
    let name = &args.app;
    let app = get_named(api, name).await?;
    let finalizers = app.metadata.finalizers.clone().unwrap_or_default();
    let wanted: Vec<String> = if args.cascade {
        let mut wanted = finalizers.clone();
        if !wanted
            .iter()
            .any(|f| RESOURCE_FINALIZERS.contains(&f.as_str()))
        {
            wanted.push(RESOURCES_FINALIZER.to_owned());
        }
        wanted
    } else {
        finalizers
            .iter()
            .filter(|f| !RESOURCE_FINALIZERS.contains(&f.as_str()))
            .cloned()
            .collect()
    };
    if wanted != finalizers {
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": app.metadata.resource_version, "finalizers": wanted},
        });
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(ApiError::from)
            .with_context(|| format!("setting the finalizers of Application {name}"))?;
    }
    let params = if args.cascade {
        DeleteParams::foreground()
    } else {
        DeleteParams::background()
    };
    api.delete(name, &params)
        .await
        .map_err(ApiError::from)
        .with_context(|| format!("deleting Application {name}"))?;
    let uid = app.metadata.uid.clone().unwrap_or_default();
    if !args.wait.gone(api, name, &uid).await? {
        return Ok(ExitCode::FAILURE);
    }
    let message = match (args.wait.wait, args.cascade) {
        (false, _) => format!("application '{name}' deleted"),
        (true, true) => format!("application '{name}' and its resources deleted"),
        (true, false) => format!("application '{name}' deleted (its resources left)"),
    };
    print!(
        "{}",
        args.output.print(&Written {
            object: &app,
            message
        })?
    );
    Ok(ExitCode::SUCCESS)
}

//! `flotilla app create [NAME]`: an Application from argocd-style flags, or from a file (`-f`)
//! with the flags over it. An Application of that name that already exists is left alone when
//! it is the same, refused when it differs, and replaced (its spec) with `--upsert` — argocd's
//! behaviour.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use super::spec_flags::SpecFlags;
use crate::cli::output::{OutputFormat, Written};
use crate::cluster::api_server::api_error::ApiError;
use flotilla_core::api::application::{Application, ApplicationSpec};
use flotilla_core::api::document::parse_application;
use flotilla_core::api::merge_patch::difference;
use flotilla_core::controller::appset::ownership::RESOURCES_FINALIZER;

/// Arguments of `flotilla app create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// The Application's name (default: metadata.name of the -f file).
    pub app: Option<String>,
    /// An Application YAML to create (flotilla.dev or argoproj.io); the flags change it.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Replace the spec of an existing Application that differs (else refused).
    #[arg(long)]
    pub upsert: bool,
    /// A label of the Application, KEY=VALUE (repeatable).
    #[arg(short = 'l', long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Add the finalizer that deletes the Application's resources with it.
    #[arg(long)]
    pub set_finalizer: bool,
    #[command(flatten)]
    pub spec: SpecFlags,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Why an Application cannot be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// No name: neither given nor in the file.
    #[error("no Application name: pass NAME or -f FILE with metadata.name")]
    NoName,
    /// A field the Application cannot do without.
    #[error("Application {app}: {field} is required (pass {flag})")]
    Required {
        app: String,
        field: &'static str,
        flag: &'static str,
    },
    /// The file's namespace is not the command's.
    #[error(
        "{file}: metadata.namespace {file_namespace} is not the namespace the command works in ({namespace}); pass -n {file_namespace}"
    )]
    Namespace {
        file: String,
        file_namespace: String,
        namespace: String,
    },
    /// `--label` without `=`.
    #[error("--label {0:?}: not KEY=VALUE")]
    Label(String),
    /// The Application exists with another spec and `--upsert` was not given.
    #[error(
        "Application {app} exists and its spec differs from the one given; pass --upsert to replace it"
    )]
    Differs { app: String },
}

/// Creates (or, with `--upsert`, updates) the Application in `api`'s namespace.
///
/// # Errors
/// An unreadable or invalid file or flag, an existing Application that differs (without
/// `--upsert`), or a refused write.
pub async fn create(api: &Api<Application>, args: &CreateArgs) -> anyhow::Result<ExitCode> {
    let namespace = api.namespace().unwrap_or_default().to_owned();
    let mut app = match &args.file {
        Some(path) => {
            let file = path.display().to_string();
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read {file}"))?;
            let app = parse_application(&file, &text)?;
            if let Some(file_namespace) = app.metadata.namespace.clone()
                && file_namespace != namespace
            {
                return Err(CreateError::Namespace {
                    file,
                    file_namespace,
                    namespace,
                }
                .into());
            }
            app
        }
        None => Application::new("", ApplicationSpec::default()),
    };
    if let Some(name) = &args.app {
        app.metadata.name = Some(name.clone());
    }
    let name = app
        .metadata
        .name
        .clone()
        .filter(|name| !name.is_empty())
        .ok_or(CreateError::NoName)?;
    app.metadata.namespace = Some(namespace);
    for label in &args.labels {
        let (key, value) = label
            .split_once('=')
            .ok_or_else(|| CreateError::Label(label.clone()))?;
        app.metadata
            .labels
            .get_or_insert_default()
            .insert(key.to_owned(), value.to_owned());
    }
    if args.set_finalizer {
        let finalizers = app.metadata.finalizers.get_or_insert_default();
        if !finalizers.iter().any(|f| f == RESOURCES_FINALIZER) {
            finalizers.push(RESOURCES_FINALIZER.to_owned());
        }
    }
    args.spec.apply(&name, &mut app.spec)?;
    if app.spec.project.is_empty() {
        app.spec.project = "default".to_owned();
    }
    required(&name, &app.spec)?;
    let (written, action) = match api.get_opt(&name).await.map_err(ApiError::from)? {
        None => {
            let created = api
                .create(&PostParams::default(), &app)
                .await
                .map_err(ApiError::from)
                .with_context(|| format!("creating Application {name}"))?;
            (created, "created")
        }
        Some(existing) => {
            // A requested sync is the controller's to take, not part of what was given.
            app.spec.operation.clone_from(&existing.spec.operation);
            if existing.spec == app.spec {
                (existing, "unchanged")
            } else if !args.upsert {
                return Err(CreateError::Differs { app: name }.into());
            } else {
                let patch = serde_json::json!({
                    "metadata": {"resourceVersion": existing.metadata.resource_version},
                    "spec": difference(
                        &serde_json::to_value(&existing.spec)?,
                        &serde_json::to_value(&app.spec)?,
                    ),
                });
                let updated = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(ApiError::from)
                    .with_context(|| format!("updating Application {name}"))?;
                (updated, "updated")
            }
        }
    };
    print!(
        "{}",
        args.output.print(&Written {
            object: &written,
            message: format!("application '{name}' {action}"),
        })?
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses a spec without a repository or a destination, naming the flag that gives it.
fn required(app: &str, spec: &ApplicationSpec) -> Result<(), CreateError> {
    let missing = |field, flag| CreateError::Required {
        app: app.to_owned(),
        field,
        flag,
    };
    if spec.sources.is_empty() && spec.source.repo_url.is_empty() {
        return Err(missing("spec.source.repoURL", "--repo"));
    }
    let destination = &spec.destination;
    if destination.server.is_none() && destination.name.is_none() {
        return Err(missing(
            "spec.destination.server or name",
            "--dest-server or --dest-name",
        ));
    }
    Ok(())
}

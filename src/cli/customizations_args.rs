//! `--resource-customizations FILE` of `flotilla sync`, `simulate` and `diff`: the health checks
//! and system-wide ignore rules of a settings ConfigMap (Argo CD's `argocd-cm`, as YAML), the
//! same ones the controller reads from its namespace, with the health flags
//! ([`crate::cli::health_args`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::customizations::Customizations;

/// Where resource customizations come from.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CustomizationsArgs {
    /// A ConfigMap (YAML, as Argo CD's argocd-cm) whose `resource.customizations.health.*`,
    /// `resource.customizations.ignoreDifferences.*` and `resource.customizations` keys
    /// configure Lua health checks and system-wide ignore rules.
    #[arg(long = "resource-customizations", value_name = "FILE")]
    pub resource_customizations: Option<PathBuf>,
    #[command(flatten)]
    pub health: crate::cli::health_args::HealthArgs,
}

impl CustomizationsArgs {
    /// The configured customizations (none without the flag).
    ///
    /// # Errors
    /// An unreadable file, a file that is not a ConfigMap, or unusable customizations.
    pub fn read(&self) -> anyhow::Result<Customizations> {
        let customizations = self
            .resource_customizations
            .as_deref()
            .map_or_else(|| Ok(Customizations::default()), read)?;
        Ok(customizations.with_health_defaults(&self.health.read()?)?)
    }
}

fn read(path: &Path) -> anyhow::Result<Customizations> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let config_map: ConfigMap = serde_saphyr::from_str(&text)
        .with_context(|| format!("{}: not a ConfigMap", path.display()))?;
    let data = config_map.data.unwrap_or_default();
    Ok(Customizations::from_data(
        &path.display().to_string(),
        &data,
        &Arc::default(),
    )?)
}

//! `--resource-customizations FILE` of `flotilla sync` and `flotilla simulate`: the health checks
//! of a settings ConfigMap (Argo CD's `argocd-cm`, as YAML), the same ones the controller reads
//! from its namespace.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::health::HealthChecks;

/// Where configured health checks come from.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HealthArgs {
    /// A ConfigMap (YAML, as Argo CD's argocd-cm) whose `resource.customizations.health.*` and
    /// `resource.customizations` keys configure Lua health checks.
    #[arg(long = "resource-customizations", value_name = "FILE")]
    pub resource_customizations: Option<PathBuf>,
}

impl HealthArgs {
    /// The configured checks (none without the flag).
    ///
    /// # Errors
    /// An unreadable file, a file that is not a ConfigMap, or unusable customizations.
    pub fn checks(&self) -> anyhow::Result<HealthChecks> {
        self.resource_customizations
            .as_deref()
            .map_or_else(|| Ok(HealthChecks::default()), read)
    }
}

fn read(path: &Path) -> anyhow::Result<HealthChecks> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let config_map: ConfigMap = serde_saphyr::from_str(&text)
        .with_context(|| format!("{}: not a ConfigMap", path.display()))?;
    let data = config_map.data.unwrap_or_default();
    Ok(HealthChecks::from_data(&path.display().to_string(), &data)?)
}

//! The resource customizations of one settings ConfigMap (Argo CD's `argocd-cm`): configured
//! health checks and system-wide ignore rules, read together — by the controller from its
//! namespace, by `flotilla sync|simulate|diff` from `--resource-customizations FILE`. Pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::sync::execute::ExecuteSettings;
use flotilla_core::health::{CustomizationsError, HealthChecks, HealthDefaults};
use flotilla_core::sync::{
    IgnoreConfigError, IgnoreDifferences, JqFilters, system_ignore_differences,
};

/// What a settings ConfigMap configures (nothing by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Customizations {
    /// Lua health checks per kind.
    pub health: HealthChecks,
    /// `ignoreDifferences` for every Application.
    pub ignore_differences: IgnoreDifferences,
}

/// Customizations that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CustomizationsReadError {
    #[error(transparent)]
    Health(#[from] CustomizationsError),
    #[error(transparent)]
    IgnoreDifferences(#[from] IgnoreConfigError),
}

impl Customizations {
    /// The customizations in a ConfigMap's `data`; `source_name` names it in errors. Jq
    /// expressions of ignore rules (these and the Applications' joined to them) are compiled in
    /// `filters`, the caller's.
    ///
    /// # Errors
    /// A health check or an ignore rule that cannot be used, naming the key.
    pub fn from_data(
        source_name: &str,
        data: &BTreeMap<String, String>,
        filters: &Arc<JqFilters>,
    ) -> Result<Self, CustomizationsReadError> {
        Ok(Self {
            health: HealthChecks::from_data(source_name, data)?,
            ignore_differences: system_ignore_differences(source_name, data, filters)?,
        })
    }

    /// These customizations with the health defaults every settings ConfigMap gets.
    ///
    /// # Errors
    /// A library script that does not compile.
    pub fn with_health_defaults(
        self,
        defaults: &HealthDefaults,
    ) -> Result<Self, CustomizationsReadError> {
        Ok(Self {
            health: self.health.with_defaults(defaults)?,
            ..self
        })
    }

    /// `settings` with these health checks and system-wide ignore rules (which an
    /// Application's settings join with its own).
    #[must_use]
    pub fn over(self, settings: ExecuteSettings) -> ExecuteSettings {
        ExecuteSettings {
            health: self.health,
            ignore_differences: self.ignore_differences,
            ..settings
        }
    }
}

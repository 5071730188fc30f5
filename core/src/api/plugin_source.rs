//! `source.plugin`: which Config Management Plugin renders a source and what it is given (Argo
//! CD's `ApplicationSourcePlugin`), as written in an Application or an ApplicationSet template.
//! Only data; `flotilla_core::cmp` builds the plugin's environment from it and
//! `flotilla::source::plugin` runs the plugin.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Options of a plugin source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSource {
    /// The plugin: its `metadata.name`, or `<name>-<version>` when its `spec.version` is set.
    /// Empty: the first plugin (ordered by that name) whose discovery rule matches the source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Variables given to the plugin as `ARGOCD_ENV_<name>`; `$ARGOCD_APP_NAME` and the other
    /// build variables in a value are expanded (`$$` is a `$`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<PluginEnvEntry>,
    /// Parameters given to the plugin as `PARAM_<NAME>` variables and, all together, as JSON in
    /// `ARGOCD_APP_PARAMETERS`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<PluginParameter>,
}

/// One variable of `source.plugin.env`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PluginEnvEntry {
    /// The name, without the `ARGOCD_ENV_` prefix the plugin sees.
    pub name: String,
    /// The value (build variables expanded).
    #[serde(default)]
    pub value: String,
}

/// One parameter of `source.plugin.parameters`: a string, an array and/or a map.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PluginParameter {
    /// The name (`PARAM_` and the name upper-cased, other characters than letters, digits and
    /// `_` written `_`, is the variable).
    pub name: String,
    /// A string value: `PARAM_<NAME>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// An array value: `PARAM_<NAME>_<INDEX>` for each item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Vec<String>>,
    /// A map value: `PARAM_<NAME>_<KEY>` for each entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<BTreeMap<String, String>>,
}

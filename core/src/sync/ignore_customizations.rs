//! System-wide `ignoreDifferences`, configured the way Argo CD configures them in its settings
//! ConfigMap: `resource.customizations.ignoreDifferences.<group>_<Kind>` keys (and `.all`, for
//! every kind) holding YAML with `jsonPointers`, `jqPathExpressions` and
//! `managedFieldsManagers`, and the `ignoreDifferences` entry of a kind under the
//! `resource.customizations` key. They apply to every Application, before its own rules. Pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use super::{IgnoreDifferences, IgnoreError, JqFilters};
use crate::api::application::ResourceIgnoreDifferences;
use crate::manifest::group_kind_of_key;

/// The data key prefix of one kind's (or, with `all`, every kind's) ignore rules.
pub const IGNORE_KEY_PREFIX: &str = "resource.customizations.ignoreDifferences.";
/// The data key of the YAML map of customizations per kind (shared with health checks).
const CUSTOMIZATIONS_KEY: &str = "resource.customizations";

/// System-wide rules that cannot be used, naming the ConfigMap (or file) and key.
#[derive(Debug, thiserror::Error)]
pub enum IgnoreConfigError {
    #[error("{source_name}: key {key}: expected <group>_<Kind> or all after {IGNORE_KEY_PREFIX}")]
    Key { source_name: String, key: String },
    #[error("{source_name}: key {key}: {message}")]
    Yaml {
        source_name: String,
        key: String,
        message: String,
    },
    #[error("{source_name}: key {key}")]
    Rules {
        source_name: String,
        key: String,
        #[source]
        source: IgnoreError,
    },
}

/// The fields of one kind's rules.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields {
    #[serde(default)]
    json_pointers: Vec<String>,
    #[serde(default)]
    jq_path_expressions: Vec<String>,
    #[serde(default)]
    managed_fields_managers: Vec<String>,
}

/// One entry of `resource.customizations`: its `ignoreDifferences`, a YAML text as Argo CD
/// writes it, or a map.
#[derive(Deserialize)]
struct Customization {
    #[serde(rename = "ignoreDifferences", default)]
    ignore_differences: Option<Inline>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Inline {
    Text(String),
    Fields(Fields),
}

/// The system-wide rules of a settings ConfigMap's `data`; `source_name` names it in errors. Jq
/// expressions are compiled in `filters`, which the rules carry on to the Applications' rules.
///
/// # Errors
/// A key naming no kind, YAML that is not a rule, or a rule that cannot be used.
pub fn system_ignore_differences(
    source_name: &str,
    data: &BTreeMap<String, String>,
    filters: &Arc<JqFilters>,
) -> Result<IgnoreDifferences, IgnoreConfigError> {
    let yaml_error = |key: &str, message: String| IgnoreConfigError::Yaml {
        source_name: source_name.to_owned(),
        key: key.to_owned(),
        message,
    };
    let mut entries: Vec<(String, String, Fields)> = Vec::new();
    for (key, text) in data {
        let Some(suffix) = key.strip_prefix(IGNORE_KEY_PREFIX) else {
            continue;
        };
        let group_kind = if suffix == "all" {
            "*/*".to_owned()
        } else {
            group_kind_of_key(suffix).ok_or_else(|| IgnoreConfigError::Key {
                source_name: source_name.to_owned(),
                key: key.clone(),
            })?
        };
        let fields = serde_saphyr::from_str(text).map_err(|e| yaml_error(key, e.to_string()))?;
        entries.push((key.clone(), group_kind, fields));
    }
    if let Some(yaml) = data.get(CUSTOMIZATIONS_KEY) {
        let map: BTreeMap<String, Customization> = serde_saphyr::from_str(yaml)
            .map_err(|e| yaml_error(CUSTOMIZATIONS_KEY, e.to_string()))?;
        for (group_kind, customization) in map {
            let fields = match customization.ignore_differences {
                None => continue,
                Some(Inline::Fields(fields)) => fields,
                Some(Inline::Text(text)) => serde_saphyr::from_str(&text)
                    .map_err(|e| yaml_error(CUSTOMIZATIONS_KEY, format!("{group_kind}: {e}")))?,
            };
            let group_kind = if group_kind.contains('/') {
                group_kind
            } else {
                format!("/{group_kind}")
            };
            entries.push((CUSTOMIZATIONS_KEY.to_owned(), group_kind, fields));
        }
    }
    entries.into_iter().try_fold(
        IgnoreDifferences::none(filters),
        |all, (key, group_kind, fields)| {
            let (group, kind) = group_kind.split_once('/').unwrap_or(("", &group_kind));
            let entry = ResourceIgnoreDifferences {
                group: group.to_owned(),
                kind: kind.to_owned(),
                json_pointers: fields.json_pointers,
                jq_path_expressions: fields.jq_path_expressions,
                managed_fields_managers: fields.managed_fields_managers,
                ..ResourceIgnoreDifferences::default()
            };
            let rules = IgnoreDifferences::new("ignoreDifferences", &[entry], filters).map_err(
                |source| IgnoreConfigError::Rules {
                    source_name: source_name.to_owned(),
                    key,
                    source,
                },
            )?;
            Ok(all.joined(&rules))
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// [`super::system_ignore_differences`] with filters of its own.
    fn system_ignore_differences(
        source_name: &str,
        data: &BTreeMap<String, String>,
    ) -> Result<IgnoreDifferences, IgnoreConfigError> {
        super::system_ignore_differences(source_name, data, &Arc::default())
    }
    use crate::health::test_data as data;
    use crate::manifest::ObjectKey;

    fn key(group: &str, kind: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            kind: kind.into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        }
    }

    #[test]
    fn keys_and_customizations_configure_rules_per_kind() {
        let rules = system_ignore_differences(
            "ConfigMap argocd/argocd-cm",
            &data(&[
                (
                    "resource.customizations.ignoreDifferences.apps_Deployment",
                    "jsonPointers: [/spec/replicas]",
                ),
                (
                    "resource.customizations.ignoreDifferences.all",
                    "managedFieldsManagers: [kube-controller-manager]\njqPathExpressions: [.metadata.labels.injected]",
                ),
                (
                    "resource.customizations",
                    "admissionregistration.k8s.io/MutatingWebhookConfiguration:\n  ignoreDifferences: |\n    jsonPointers:\n    - /webhooks/0/clientConfig/caBundle\nConfigMap:\n  ignoreDifferences:\n    jsonPointers: [/data/generated]\n",
                ),
            ]),
        )
        .unwrap();
        let cases = [
            (
                key("apps", "Deployment"),
                json!({"spec": {"replicas": 2}, "metadata": {"labels": {"injected": "no"}}}),
                json!({"spec": {"replicas": 5}, "metadata": {"labels": {"injected": "yes"}}}),
                json!({"spec": {"replicas": 5}, "metadata": {"labels": {"injected": "yes"}}}),
            ),
            (
                key("apps", "StatefulSet"),
                json!({"spec": {"replicas": 2}}),
                json!({"spec": {"replicas": 5}}),
                json!({"spec": {"replicas": 2}}),
            ),
            (
                key(
                    "admissionregistration.k8s.io",
                    "MutatingWebhookConfiguration",
                ),
                json!({"webhooks": [{"clientConfig": {"caBundle": ""}}]}),
                json!({"webhooks": [{"clientConfig": {"caBundle": "Q0E="}}]}),
                json!({"webhooks": [{"clientConfig": {"caBundle": "Q0E="}}]}),
            ),
            (
                key("", "ConfigMap"),
                json!({"data": {"generated": "1"}}),
                json!({"data": {"generated": "2"}}),
                json!({"data": {"generated": "2"}}),
            ),
        ];
        for (object, desired, live, expected) in cases {
            assert_eq!(
                rules.overlay(&object, &desired, &live),
                expected,
                "{object}"
            );
        }
    }

    #[test]
    fn bad_configuration_is_named() {
        let cases = [
            (
                (
                    "resource.customizations.ignoreDifferences.",
                    "jsonPointers: [/a]",
                ),
                "ConfigMap x: key resource.customizations.ignoreDifferences.: expected <group>_<Kind> or all after resource.customizations.ignoreDifferences.",
            ),
            (
                (
                    "resource.customizations.ignoreDifferences.apps_Deployment",
                    "jsonPointers: [spec]",
                ),
                "ConfigMap x: key resource.customizations.ignoreDifferences.apps_Deployment",
            ),
        ];
        for ((k, v), message) in cases {
            let error = system_ignore_differences("ConfigMap x", &data(&[(k, v)])).unwrap_err();
            assert_eq!(error.to_string(), message);
        }
        let yaml = system_ignore_differences(
            "ConfigMap x",
            &data(&[(
                "resource.customizations.ignoreDifferences.all",
                "jsonPointers: 3",
            )]),
        )
        .unwrap_err();
        assert!(
            yaml.to_string()
                .starts_with("ConfigMap x: key resource.customizations.ignoreDifferences.all: "),
            "{yaml}"
        );
    }
}

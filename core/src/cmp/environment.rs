//! The environment of a source's generation as Argo CD builds it: its build variables
//! (`ARGOCD_APP_NAME`, `ARGOCD_APP_REVISION`, …), and for a Config Management Plugin also
//! `KUBE_VERSION`, `KUBE_API_VERSIONS`, the Application's `env` as `ARGOCD_ENV_<NAME>` (build
//! variables expanded) and its parameters as `PARAM_<NAME>…` and `ARGOCD_APP_PARAMETERS`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::plugin_source::{PluginParameter, PluginSource};
use crate::manifest::expand::expand;

/// What Argo CD's build environment is made of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildEnvironment {
    /// The Application's name.
    pub application: String,
    /// Its destination namespace.
    pub namespace: String,
    /// Its project.
    pub project: String,
    /// The commit (or chart version) generated.
    pub revision: String,
    /// The source's `repoURL`, `path` and `targetRevision`.
    pub repo_url: String,
    pub path: String,
    pub target_revision: String,
}

impl BuildEnvironment {
    /// The build variables, in Argo CD's order.
    #[must_use]
    pub fn variables(&self) -> Vec<(String, String)> {
        let short = |n: usize| self.revision.chars().take(n).collect::<String>();
        [
            ("ARGOCD_APP_NAME", self.application.clone()),
            ("ARGOCD_APP_NAMESPACE", self.namespace.clone()),
            ("ARGOCD_APP_PROJECT_NAME", self.project.clone()),
            ("ARGOCD_APP_REVISION", self.revision.clone()),
            ("ARGOCD_APP_REVISION_SHORT", short(7)),
            ("ARGOCD_APP_REVISION_SHORT_8", short(8)),
            ("ARGOCD_APP_SOURCE_REPO_URL", self.repo_url.clone()),
            ("ARGOCD_APP_SOURCE_PATH", self.path.clone()),
            (
                "ARGOCD_APP_SOURCE_TARGET_REVISION",
                self.target_revision.clone(),
            ),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
    }
}

/// What a plugin is told of the destination cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KubeCapabilities {
    /// The API server's version as it reports it (`v1.33.1+k3s1`; empty when unknown).
    pub version: String,
    /// The API versions it serves (`apps/v1`, …).
    pub api_versions: Vec<String>,
}

/// The variables a plugin's commands get, in Argo CD's order (a later one of the same name
/// wins): the build variables, `KUBE_VERSION` (`1.33.1`), `KUBE_API_VERSIONS` (comma-separated),
/// `ARGOCD_ENV_<name>` for each `env` entry (its value with the variables before it expanded),
/// `ARGOCD_APP_PARAMETERS` (the parameters as JSON) and `PARAM_<NAME>` (a string),
/// `PARAM_<NAME>_<KEY>` (each map entry) and `PARAM_<NAME>_<INDEX>` (each array item).
#[must_use]
pub fn plugin_environment(
    build: &BuildEnvironment,
    kube: &KubeCapabilities,
    plugin: &PluginSource,
) -> Vec<(String, String)> {
    let mut variables = build.variables();
    variables.push(("KUBE_VERSION".into(), generic_version(&kube.version)));
    variables.push(("KUBE_API_VERSIONS".into(), kube.api_versions.join(",")));
    let known: BTreeMap<String, String> = variables.iter().cloned().collect();
    for entry in &plugin.env {
        variables.push((
            format!("ARGOCD_ENV_{}", entry.name),
            expand(&entry.value, &known),
        ));
    }
    variables.push((
        "ARGOCD_APP_PARAMETERS".into(),
        parameters_json(&plugin.parameters),
    ));
    for parameter in &plugin.parameters {
        let base = format!("PARAM_{}", escaped(&parameter.name));
        if let Some(string) = &parameter.string {
            variables.push((base.clone(), string.clone()));
        }
        for (key, value) in parameter.map.iter().flatten() {
            variables.push((format!("{base}_{}", escaped(key)), value.clone()));
        }
        for (index, value) in parameter.array.iter().flatten().enumerate() {
            variables.push((format!("{base}_{index}"), value.clone()));
        }
    }
    variables
}

/// The parameters as Argo CD writes them in `ARGOCD_APP_PARAMETERS`: each an object with its
/// keys in order (`array`, `map`, `name`, `string`), an empty array or map kept.
fn parameters_json(parameters: &[PluginParameter]) -> String {
    let list: Vec<Value> = parameters
        .iter()
        .map(|p| {
            let mut object: BTreeMap<&str, Value> = BTreeMap::new();
            object.insert("name", p.name.clone().into());
            if let Some(string) = &p.string {
                object.insert("string", string.clone().into());
            }
            if let Some(array) = &p.array {
                object.insert("array", array.clone().into());
            }
            if let Some(map) = &p.map {
                let map = map.iter().map(|(k, v)| (k.clone(), v.clone().into()));
                object.insert("map", Value::Object(map.collect()));
            }
            let object = object.into_iter().map(|(k, v)| (k.to_owned(), v));
            Value::Object(object.collect())
        })
        .collect();
    Value::Array(list).to_string()
}

/// A parameter's name or map key as a variable name: upper-cased, every character other than
/// `A-Z`, `0-9` and `_` written `_`.
fn escaped(name: &str) -> String {
    name.to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A Kubernetes version as Kubernetes' generic parse prints it: the numeric fields only
/// (`v1.33.1+k3s1` is `1.33.1`).
fn generic_version(version: &str) -> String {
    let version = version.trim();
    let version = version.strip_prefix('v').unwrap_or(version);
    let end = version
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(version.len());
    version[..end].trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::plugin_source::PluginEnvEntry;

    fn build() -> BuildEnvironment {
        BuildEnvironment {
            application: "web".into(),
            namespace: "shop".into(),
            project: "team".into(),
            revision: "0123456789abcdef".into(),
            repo_url: "https://git.example/r.git".into(),
            path: "apps/web".into(),
            target_revision: "main".into(),
        }
    }

    #[test]
    fn the_build_variables_are_argo_cds() {
        let variables: BTreeMap<_, _> = build().variables().into_iter().collect();
        let expected = [
            ("ARGOCD_APP_NAME", "web"),
            ("ARGOCD_APP_NAMESPACE", "shop"),
            ("ARGOCD_APP_PROJECT_NAME", "team"),
            ("ARGOCD_APP_REVISION", "0123456789abcdef"),
            ("ARGOCD_APP_REVISION_SHORT", "0123456"),
            ("ARGOCD_APP_REVISION_SHORT_8", "01234567"),
            ("ARGOCD_APP_SOURCE_PATH", "apps/web"),
            ("ARGOCD_APP_SOURCE_REPO_URL", "https://git.example/r.git"),
            ("ARGOCD_APP_SOURCE_TARGET_REVISION", "main"),
        ];
        let expected: BTreeMap<String, String> = expected
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(variables, expected);
    }

    #[test]
    fn a_plugin_gets_env_parameters_and_the_cluster() {
        let plugin = PluginSource {
            name: String::new(),
            env: vec![
                PluginEnvEntry {
                    name: "FOO".into(),
                    value: "rev-$ARGOCD_APP_REVISION_SHORT on ${KUBE_VERSION} $$HOME $UNSET."
                        .into(),
                },
                PluginEnvEntry {
                    name: "lower".into(),
                    value: "x".into(),
                },
            ],
            parameters: vec![
                PluginParameter {
                    name: "values-files".into(),
                    array: Some(vec!["a.yaml".into(), "b.yaml".into()]),
                    ..PluginParameter::default()
                },
                PluginParameter {
                    name: "helm.parameters".into(),
                    map: Some([("image.tag".to_owned(), "v1.2.3".to_owned())].into()),
                    string: Some("s".into()),
                    ..PluginParameter::default()
                },
                PluginParameter {
                    name: "empty".into(),
                    array: Some(Vec::new()),
                    ..PluginParameter::default()
                },
            ],
        };
        let kube = KubeCapabilities {
            version: "v1.33.1+k3s1".into(),
            api_versions: vec!["apps/v1".into(), "v1".into()],
        };
        let variables = plugin_environment(&build(), &kube, &plugin);
        let names: Vec<&str> = variables.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names[9..],
            [
                "KUBE_VERSION",
                "KUBE_API_VERSIONS",
                "ARGOCD_ENV_FOO",
                "ARGOCD_ENV_lower",
                "ARGOCD_APP_PARAMETERS",
                "PARAM_VALUES_FILES_0",
                "PARAM_VALUES_FILES_1",
                "PARAM_HELM_PARAMETERS",
                "PARAM_HELM_PARAMETERS_IMAGE_TAG",
            ]
        );
        let get = |name: &str| {
            variables
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("KUBE_VERSION"), Some("1.33.1"));
        assert_eq!(get("KUBE_API_VERSIONS"), Some("apps/v1,v1"));
        assert_eq!(get("ARGOCD_ENV_FOO"), Some("rev-0123456 on 1.33.1 $HOME ."));
        assert_eq!(get("PARAM_HELM_PARAMETERS_IMAGE_TAG"), Some("v1.2.3"));
        assert_eq!(
            get("ARGOCD_APP_PARAMETERS"),
            Some(
                r#"[{"array":["a.yaml","b.yaml"],"name":"values-files"},{"map":{"image.tag":"v1.2.3"},"name":"helm.parameters","string":"s"},{"array":[],"name":"empty"}]"#
            )
        );
    }

    #[test]
    fn versions_are_read_as_kubernetes_reads_them_generically() {
        for (given, expected) in [
            ("v1.33.1", "1.33.1"),
            ("1.30", "1.30"),
            ("v1.29.0-eks-1234", "1.29.0"),
            ("", ""),
        ] {
            assert_eq!(generic_version(given), expected, "{given}");
        }
    }
}

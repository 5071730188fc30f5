//! One `ConfigManagementPlugin` file (Argo CD's sidecar `plugin.yaml`): read strictly (a field
//! Flotilla does not know is refused by name, with the file), checked as Argo CD checks it (a
//! name, a `generate` command) and with its discovery globs compiled.

use flotilla_generators::strict::{self, UnknownFields};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::api::ARGO_CD_API_VERSION;
use crate::yaml::YamlError;

/// The kind of a plugin file.
pub const KIND: &str = "ConfigManagementPlugin";

/// A plugin read from its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigManagementPlugin {
    /// The file it was read from (named in errors).
    pub file: String,
    /// Its `metadata.name`.
    pub name: String,
    pub spec: PluginSpec,
}

/// A plugin's `spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSpec {
    /// Its version: Applications then name it `<name>-<version>`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Run in the source directory before `generate`; its output is not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<PluginCommand>,
    /// Run in the source directory; its stdout is the manifests (YAML or JSON).
    pub generate: PluginCommand,
    /// When the plugin renders a source whose Application names no plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discover: Option<Discover>,
    /// The parameters the plugin announces (Argo CD's UI shows them; read and checked here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Parameters>,
    /// Keep the source files' modes in the plugin's copy (else files are 0644, directories 0755).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_file_mode: bool,
}

/// A command line: `command` then `args`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginCommand {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

impl PluginCommand {
    /// The program and its arguments, `None` when no command is given.
    #[must_use]
    pub fn argv(&self) -> Option<(&str, Vec<&str>)> {
        let (program, rest) = self.command.split_first()?;
        let args = rest.iter().chain(&self.args).map(String::as_str).collect();
        Some((program.as_str(), args))
    }

    /// Whether a command is given.
    #[must_use]
    pub fn is_set(&self) -> bool {
        !self.command.is_empty()
    }
}

/// `spec.discover`: the first of `fileName`, `find.glob` and `find.command` given decides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Discover {
    /// A glob (one directory level per `*`) matched against the source's files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find: Option<Find>,
}

/// `spec.discover.find`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Find {
    /// A glob where `**` crosses directories.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub glob: String,
    /// A command run in the source directory: it matches when it exits 0 with output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// `spec.parameters`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameters {
    #[serde(rename = "static", default, skip_serializing_if = "Vec::is_empty")]
    pub announced: Vec<ParameterAnnouncement>,
    /// A command printing more announcements as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic: Option<PluginCommand>,
}

/// One announced parameter (Argo CD's `ParameterAnnouncement`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterAnnouncement {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tooltip: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub item_type: String,
    /// `string` (the default), `array` or `map`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub collection_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<std::collections::BTreeMap<String, String>>,
}

/// A plugin file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginFileError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error("{file}: apiVersion {found:?} is not {ARGO_CD_API_VERSION}")]
    ApiVersion { file: String, found: String },
    #[error("{file}: kind {found:?} is not {KIND}")]
    Kind { file: String, found: String },
    #[error("{file}: {KIND} has no metadata.name")]
    MissingName { file: String },
    #[error("{file}: {KIND} {name:?}: {fields}")]
    UnknownFields {
        file: String,
        name: String,
        fields: UnknownFields,
    },
    #[error("{file}: {KIND} {name:?}: {field}: {message}")]
    Field {
        file: String,
        name: String,
        field: &'static str,
        message: String,
    },
    #[error(
        "{file}: {KIND} {name:?} and {other_file}: {KIND} {other_name:?} are both named {identity:?}"
    )]
    Duplicate {
        file: String,
        name: String,
        other_file: String,
        other_name: String,
        identity: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    spec: PluginSpec,
}

impl ConfigManagementPlugin {
    /// Reads the plugin of `text`; `file` names it in errors.
    ///
    /// # Errors
    /// Invalid YAML, another apiVersion or kind, no name, an unknown field (by path), no
    /// `generate` command, a discovery glob that does not parse, an announced parameter without
    /// a name or with a `collectionType` other than `string`, `array` or `map`.
    pub fn parse(file: &str, text: &str) -> Result<Self, PluginFileError> {
        let (document, unknown): (Document, UnknownFields) =
            serde_saphyr::with_deserializer_from_str(text, |de| strict::deserialize(de))
                .map_err(|error| YamlError::new(file, &error))?;
        let file = file.to_owned();
        if document.api_version != ARGO_CD_API_VERSION {
            return Err(PluginFileError::ApiVersion {
                file,
                found: document.api_version,
            });
        }
        if document.kind != KIND {
            return Err(PluginFileError::Kind {
                file,
                found: document.kind,
            });
        }
        let Some(name) = document.metadata.name.filter(|n| !n.is_empty()) else {
            return Err(PluginFileError::MissingName { file });
        };
        if !unknown.is_empty() {
            return Err(PluginFileError::UnknownFields {
                file,
                name,
                fields: unknown,
            });
        }
        let plugin = Self {
            file,
            name,
            spec: document.spec,
        };
        plugin.check()?;
        Ok(plugin)
    }

    /// The name Applications give it: `<name>-<version>`, or `<name>` without a version.
    #[must_use]
    pub fn identity(&self) -> String {
        if self.spec.version.is_empty() {
            self.name.clone()
        } else {
            format!("{}-{}", self.name, self.spec.version)
        }
    }

    /// The error of `field` of this plugin.
    #[must_use]
    pub fn field_error(&self, field: &'static str, message: String) -> PluginFileError {
        PluginFileError::Field {
            file: self.file.clone(),
            name: self.name.clone(),
            field,
            message,
        }
    }

    fn check(&self) -> Result<(), PluginFileError> {
        if !self.spec.generate.is_set() {
            let message = "a command is required".to_owned();
            return Err(self.field_error("spec.generate.command", message));
        }
        self.discovery()?;
        let announced = self.spec.parameters.iter().flat_map(|p| &p.announced);
        for parameter in announced {
            if parameter.name.is_empty() {
                let message = "every announced parameter needs a name".to_owned();
                return Err(self.field_error("spec.parameters.static", message));
            }
            if !matches!(
                parameter.collection_type.as_str(),
                "" | "string" | "array" | "map"
            ) {
                let message = format!(
                    "parameter {:?}: {:?} is not string, array or map",
                    parameter.name, parameter.collection_type
                );
                return Err(self.field_error("spec.parameters.static.collectionType", message));
            }
        }
        Ok(())
    }
}

/// Checks that no two `plugins` share an identity, and orders them by it (the order discovery
/// tries them in, as Argo CD lists its plugins' sockets).
///
/// # Errors
/// Two plugins with one identity, naming both files.
pub fn order(
    mut plugins: Vec<ConfigManagementPlugin>,
) -> Result<Vec<ConfigManagementPlugin>, PluginFileError> {
    plugins.sort_by_key(ConfigManagementPlugin::identity);
    if let Some(pair) = plugins
        .windows(2)
        .find(|w| w[0].identity() == w[1].identity())
    {
        return Err(PluginFileError::Duplicate {
            file: pair[0].file.clone(),
            name: pair[0].name.clone(),
            other_file: pair[1].file.clone(),
            other_name: pair[1].name.clone(),
            identity: pair[0].identity(),
        });
    }
    Ok(plugins)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLUGIN: &str = "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\n\
        metadata: {name: greeter}\nspec:\n  version: v1.0\n  init: {command: [sh, -c], args: ['echo init']}\n  \
        generate: {command: [sh, -c, 'cat cm.yaml']}\n  discover: {fileName: './greeting*.txt'}\n  \
        parameters:\n    static: [{name: color, collectionType: string, string: blue}]\n    \
        dynamic: {command: [echo, '[]']}\n  preserveFileMode: true\n";

    #[test]
    fn reads_argo_cds_plugin_file() {
        let plugin = ConfigManagementPlugin::parse("greeter.yaml", PLUGIN).unwrap();
        assert_eq!(plugin.identity(), "greeter-v1.0");
        assert_eq!(
            plugin.spec.generate.argv(),
            Some(("sh", vec!["-c", "cat cm.yaml"]))
        );
        assert_eq!(
            plugin.spec.init.as_ref().and_then(PluginCommand::argv),
            Some(("sh", vec!["-c", "echo init"]))
        );
        assert!(plugin.spec.preserve_file_mode);
        let parameters = plugin.spec.parameters.unwrap();
        assert_eq!(parameters.announced[0].string.as_deref(), Some("blue"));
        assert!(parameters.dynamic.unwrap().is_set());
        let unversioned = PLUGIN.replace("  version: v1.0\n", "");
        let plugin = ConfigManagementPlugin::parse("greeter.yaml", &unversioned).unwrap();
        assert_eq!(plugin.identity(), "greeter");
    }

    #[test]
    fn an_unknown_field_is_refused_with_the_file_and_its_path() {
        let text = PLUGIN.replace(
            "preserveFileMode: true",
            "provideGitCreds: true\n  lockRepo: true",
        );
        let error = ConfigManagementPlugin::parse("plugins/greeter.yaml", &text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugins/greeter.yaml: ConfigManagementPlugin \"greeter\": unsupported field \
             spec.provideGitCreds, spec.lockRepo: Flotilla does not implement it (check the \
             spelling, or remove it)"
        );
    }

    #[test]
    fn what_argo_cd_refuses_is_refused() {
        let cases = [
            (
                PLUGIN.replace("kind: ConfigManagementPlugin", "kind: ConfigMap"),
                "kind \"ConfigMap\" is not ConfigManagementPlugin",
            ),
            (
                PLUGIN.replace("metadata: {name: greeter}", "metadata: {}"),
                "has no metadata.name",
            ),
            (
                PLUGIN.replace(
                    "generate: {command: [sh, -c, 'cat cm.yaml']}",
                    "generate: {args: [x]}",
                ),
                "spec.generate.command: a command is required",
            ),
            (
                PLUGIN.replace("./greeting*.txt", "a[.txt"),
                "spec.discover.fileName",
            ),
            (
                PLUGIN.replace("collectionType: string", "collectionType: list"),
                "\"list\" is not string, array or map",
            ),
            (
                PLUGIN.replace("argoproj.io/v1alpha1", "flotilla.dev/v1alpha1"),
                "apiVersion \"flotilla.dev/v1alpha1\"",
            ),
        ];
        for (text, expected) in cases {
            let error = ConfigManagementPlugin::parse("p.yaml", &text)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("p.yaml: "), "{error}");
            assert!(error.contains(expected), "{expected:?} in {error}");
        }
    }

    #[test]
    fn plugins_are_ordered_by_identity_and_one_identity_is_one_plugin() {
        let named = |file: &str, name: &str| ConfigManagementPlugin {
            file: file.into(),
            name: name.into(),
            spec: PluginSpec::default(),
        };
        let ordered = order(vec![named("z.yaml", "b"), named("y.yaml", "a")]).unwrap();
        assert_eq!(ordered[0].name, "a");
        let error = order(vec![named("z.yaml", "a"), named("y.yaml", "a")]).unwrap_err();
        assert!(
            error.to_string().contains("are both named \"a\""),
            "{error}"
        );
    }
}

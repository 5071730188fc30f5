//! One desired Kubernetes object as read from a manifest, with its identity and origin.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use super::error::ValidationError;
use super::name::NameRule;

/// Where an object came from: a file (relative to the source root) and a document index in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Source {
    /// The file, relative to the source root.
    pub file: PathBuf,
    /// Index among the file's non-empty documents, from 0.
    pub document: usize,
}

/// `metadata.name`, or `metadata.generateName` when the server (or the sync) picks the name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ObjectName {
    /// A fixed name.
    Name(String),
    /// A prefix for a generated name.
    GenerateName(String),
}

impl ObjectName {
    /// The name, or the generateName prefix.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Name(name) | Self::GenerateName(name) => name,
        }
    }
}

/// The identity of an object in a cluster: group, kind, namespace (None when cluster-scoped or
/// not yet assigned) and name. Ordered, so it can key `BTreeMap`s.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectKey {
    /// API group, empty for the core group.
    pub group: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Namespace, None when cluster-scoped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// The key of a live object as returned by the API server (group from `apiVersion`).
    #[must_use]
    pub fn of_object(object: &Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let metadata = object.get("metadata")?;
        Some(Self {
            group: group_of(api_version).to_owned(),
            kind: object.get("kind")?.as_str()?.to_owned(),
            namespace: metadata
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|namespace| !namespace.is_empty())
                .map(str::to_owned),
            name: metadata.get("name")?.as_str()?.to_owned(),
        })
    }
}

/// `Kind namespace/name`, or `Kind name` for cluster-scoped objects, as used in messages.
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// The group part of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
#[must_use]
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The `group/Kind` a settings key names after its prefix: `<group>_<Kind>` as Argo CD's
/// `resource.customizations.*.<group>_<Kind>` keys, a bare `<Kind>` for the core group. None
/// when no kind is named.
#[must_use]
pub fn group_kind_of_key(suffix: &str) -> Option<String> {
    match suffix.split_once('_') {
        Some((group, kind)) if !kind.is_empty() => Some(format!("{group}/{kind}")),
        None if !suffix.is_empty() => Some(format!("/{suffix}")),
        _ => None,
    }
}

/// A desired object: its identity, metadata and full body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// The API group, empty for the core group.
    pub group: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`, possibly defaulted by [`super::assign_namespaces`].
    pub namespace: Option<String>,
    /// `metadata.name` or `metadata.generateName`.
    pub name: ObjectName,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// The whole object as written in the manifest.
    pub body: Value,
    /// Where it was read from.
    pub source: Source,
}

impl Resource {
    /// Reads the identity and metadata of one manifest object.
    ///
    /// # Errors
    /// Every problem found: not a mapping, missing `apiVersion`/`kind`/name, non-string label or
    /// annotation values. Each error names the file, document and (as far as known) the object.
    pub fn from_value(body: Value, source: Source) -> Result<Self, Vec<ValidationError>> {
        let mut problems = Vec::new();
        let text = |key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let api_version = text("apiVersion");
        let kind = text("kind");
        if !body.is_object() {
            problems.push("a manifest document must be a mapping".to_owned());
        } else {
            if api_version.is_none() {
                problems.push("missing apiVersion".to_owned());
            }
            if kind.is_none() {
                problems.push("missing kind".to_owned());
            }
        }
        let metadata = body.get("metadata");
        let meta_text = |key: &str| {
            metadata
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let name = match (meta_text("name"), meta_text("generateName")) {
            (Some(name), _) => Some(ObjectName::Name(name.to_owned())),
            (None, Some(prefix)) => Some(ObjectName::GenerateName(prefix.to_owned())),
            (None, None) => {
                if body.is_object() {
                    problems.push("missing metadata.name (or metadata.generateName)".to_owned());
                }
                None
            }
        };
        let namespace = meta_text("namespace").map(str::to_owned);
        if let (Some(api_version), Some(kind), Some(name)) = (api_version, kind, &name) {
            problems.extend(invalid_name(api_version, kind, name));
        }
        if let Some(Err(problem)) = namespace.as_deref().map(|n| NameRule::Label.check(n)) {
            problems.push(format!(
                "metadata.namespace {:?}: {problem}; a namespace name must be {}",
                namespace.as_deref().unwrap_or_default(),
                NameRule::Label
            ));
        }
        let labels = string_map(metadata, "labels", &mut problems);
        let annotations = string_map(metadata, "annotations", &mut problems);
        let object = describe(kind, namespace.as_deref(), name.as_ref());
        match (api_version, kind, name) {
            (Some(api_version), Some(kind), Some(name)) if problems.is_empty() => Ok(Self {
                api_version: api_version.to_owned(),
                group: group_of(api_version).to_owned(),
                kind: kind.to_owned(),
                namespace,
                name,
                labels,
                annotations,
                source,
                body,
            }),
            _ => Err(problems
                .into_iter()
                .map(|message| ValidationError {
                    file: source.file.clone(),
                    document: Some(source.document),
                    object: object.clone(),
                    message,
                })
                .collect()),
        }
    }

    /// The key of this object; a `generateName` prefix stands in for the name.
    #[must_use]
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: self.group.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.as_str().to_owned(),
        }
    }

    /// An error about this object.
    #[must_use]
    pub fn error(&self, message: impl Into<String>) -> ValidationError {
        ValidationError {
            file: self.source.file.clone(),
            document: Some(self.source.document),
            object: Some(self.key().to_string()),
            message: message.into(),
        }
    }
}

/// What is wrong with `name` for `kind` (see [`NameRule`]), if anything.
fn invalid_name(api_version: &str, kind: &str, name: &ObjectName) -> Option<String> {
    let rule = NameRule::of(group_of(api_version), kind);
    let (field, checked) = match name {
        ObjectName::Name(name) => ("metadata.name", rule.check(name)),
        ObjectName::GenerateName(prefix) => ("metadata.generateName", rule.check_prefix(prefix)),
    };
    checked.err().map(|problem| {
        format!(
            "{field} {:?}: {problem}; a {kind} name must be {rule}",
            name.as_str()
        )
    })
}

fn describe(
    kind: Option<&str>,
    namespace: Option<&str>,
    name: Option<&ObjectName>,
) -> Option<String> {
    let name = name.map(ObjectName::as_str);
    match (kind, namespace, name) {
        (None, _, None) => None,
        (kind, Some(namespace), Some(name)) => Some(format!(
            "{} {namespace}/{name}",
            kind.unwrap_or("<no kind>")
        )),
        (kind, None, Some(name)) => Some(format!("{} {name}", kind.unwrap_or("<no kind>"))),
        (Some(kind), _, None) => Some(format!("{kind} <no name>")),
    }
}

fn string_map(
    metadata: Option<&Value>,
    field: &str,
    problems: &mut Vec<String>,
) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    match metadata.and_then(|m| m.get(field)) {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (key, value) in entries {
                match value.as_str() {
                    Some(text) => {
                        map.insert(key.clone(), text.to_owned());
                    }
                    None => problems.push(format!(
                        "metadata.{field}.{key} must be a string, found {value} (quote it)"
                    )),
                }
            }
        }
        Some(other) => problems.push(format!("metadata.{field} must be a mapping, found {other}")),
    }
    map
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn source() -> Source {
        Source {
            file: "a.yaml".into(),
            document: 2,
        }
    }

    #[test]
    fn reads_identity_and_metadata() {
        let body = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "shop", "labels": {"a": "b"},
                         "annotations": {"x": "y"}}});
        let resource = Resource::from_value(body.clone(), source()).unwrap();
        assert_eq!(resource.group, "apps");
        assert_eq!(resource.kind, "Deployment");
        assert_eq!(resource.namespace.as_deref(), Some("shop"));
        assert_eq!(resource.name, ObjectName::Name("api".into()));
        assert_eq!(resource.labels.get("a").map(String::as_str), Some("b"));
        assert_eq!(resource.annotations.get("x").map(String::as_str), Some("y"));
        assert_eq!(resource.body, body);
        assert_eq!(resource.key().to_string(), "Deployment shop/api");
    }

    #[test]
    fn generate_name_and_core_group() {
        let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-"}});
        let resource = Resource::from_value(body, source()).unwrap();
        assert_eq!(resource.group, "");
        assert_eq!(resource.name, ObjectName::GenerateName("p-".into()));
    }

    #[test]
    fn reports_every_problem() {
        let cases = [
            (json!(["a"]), vec!["a manifest document must be a mapping"]),
            (
                json!({"metadata": {"name": "x"}}),
                vec!["missing apiVersion", "missing kind"],
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                vec!["missing metadata.name (or metadata.generateName)"],
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c", "annotations": {"w": 1}, "labels": "x"}}),
                vec![
                    "metadata.labels must be a mapping, found \"x\"",
                    "metadata.annotations.w must be a string, found 1 (quote it)",
                ],
            ),
        ];
        for (body, expected) in cases {
            let errors = Resource::from_value(body.clone(), source()).unwrap_err();
            let messages: Vec<_> = errors.iter().map(|e| e.message.as_str()).collect();
            assert_eq!(messages, expected, "{body}");
            assert!(
                errors
                    .iter()
                    .all(|e| e.file == std::path::Path::new("a.yaml") && e.document == Some(2))
            );
        }
    }

    #[test]
    fn invalid_names_name_the_field_and_the_rule_of_the_kind() {
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "My_Dir"}}),
                "a.yaml (document 2) ConfigMap My_Dir: metadata.name \"My_Dir\": upper-case 'M' is not allowed; a ConfigMap name must be a DNS-1123 subdomain",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop.eu"}}),
                "a.yaml (document 2) Namespace shop.eu: metadata.name \"shop.eu\": '.' is not allowed; a Namespace name must be a DNS-1123 label",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1-api", "namespace": "shop"}}),
                "a.yaml (document 2) Service shop/1-api: metadata.name \"1-api\": \"1-api\" starts with '1', not a letter; a Service name must be a DNS-1035 label",
            ),
            (
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "Migrate-"}}),
                "a.yaml (document 2) Job Migrate-: metadata.generateName \"Migrate-\": upper-case 'M' is not allowed; a Job name must be a DNS-1123 subdomain",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "Shop"}}),
                "a.yaml (document 2) ConfigMap Shop/c: metadata.namespace \"Shop\": upper-case 'S' is not allowed; a namespace name must be a DNS-1123 label",
            ),
        ];
        for (body, expected) in cases {
            let errors = Resource::from_value(body, source()).unwrap_err();
            assert_eq!(errors.len(), 1, "{errors:?}");
            let text = errors[0].to_string();
            assert!(text.starts_with(expected), "{text}\n!~ {expected}");
        }
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "metadata": {"name": "system:flotilla:reader"}});
        assert!(Resource::from_value(role, source()).is_ok());
    }

    #[test]
    fn errors_name_the_object() {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "c", "namespace": "n", "labels": {"l": true}}});
        let errors = Resource::from_value(body, source()).unwrap_err();
        assert_eq!(
            errors[0].to_string(),
            "a.yaml (document 2) ConfigMap n/c: metadata.labels.l must be a string, found true (quote it)"
        );
    }

    #[test]
    fn key_of_live_object() {
        let live = json!({"apiVersion": "batch/v1", "kind": "Job",
                          "metadata": {"name": "j", "namespace": "ns"}});
        let key = ObjectKey::of_object(&live).unwrap();
        assert_eq!(key.to_string(), "Job ns/j");
        assert_eq!(key.group, "batch");
        assert_eq!(ObjectKey::of_object(&json!({"kind": "Job"})), None);
    }
}

//! Argo CD's `ignoreDifferences`: fields of an Application's objects that another party owns —
//! chosen by JSON pointer, by jq path expression, or by the field managers that set them
//! (`managedFieldsManagers`, read from the live object's managed fields) — and that therefore
//! never count as a difference. An Application's rules are joined with the system-wide ones of
//! the settings ConfigMap ([`super::ignore_customizations`]).
//!
//! One operation serves the compare, `ApplyOutOfSyncOnly` and `RespectIgnoreDifferences=true`:
//! [`IgnoreDifferences::overlay`] gives the desired object with the live values at every ignored
//! field (and without the field where the live object lacks it). Comparing that with the live
//! object cannot find a difference at an ignored field, and applying it keeps the live values.
//! jq expressions are compiled once in the caller's [`JqFilters`], which the rules carry on to
//! the rules joined with them. Pure.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::jq_path::{JqError, JqFilters, JqPath};
use crate::api::application::ResourceIgnoreDifferences;
use crate::manifest::ObjectKey;

/// An `ignoreDifferences` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IgnoreError {
    #[error(
        "{field}[{index}].jsonPointers: {pointer:?} is not a JSON pointer (it must start with /)"
    )]
    Pointer {
        field: &'static str,
        index: usize,
        pointer: String,
    },
    #[error("{field}[{index}].jqPathExpressions: {expression:?} cannot be used")]
    Jq {
        field: &'static str,
        index: usize,
        expression: String,
        #[source]
        source: JqError,
    },
}

/// The ignore rules of one Application, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IgnoreDifferences {
    rules: Vec<Rule>,
    /// Where the jq expressions were compiled (and rules joined later are).
    filters: Arc<JqFilters>,
}

/// One entry: which objects (group and kind may hold `*` wildcards; empty name or namespace
/// any), and which of their fields.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    group: String,
    kind: String,
    name: String,
    namespace: String,
    /// Each pointer as its unescaped tokens.
    pointers: Vec<Vec<String>>,
    /// jq path expressions, compiled.
    jq: Vec<JqPath>,
    managers: Vec<String>,
}

/// One step of a path into an object.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// A map key, or a list index when the node is a list (JSON pointer tokens, `f:` fields).
    Token(String),
    /// The list item whose fields have these values (`k:` in managed fields).
    Item(Map<String, Value>),
    /// The set item equal to this value (`v:` in managed fields).
    Member(Value),
}

impl IgnoreDifferences {
    /// The rules of `entries`, the list in spec field `field` (`ignoreDifferences`), their jq
    /// expressions compiled in `filters`.
    ///
    /// # Errors
    /// A pointer that does not start with `/` or a jq expression that does not compile, naming
    /// the entry.
    pub fn new(
        field: &'static str,
        entries: &[ResourceIgnoreDifferences],
        filters: &Arc<JqFilters>,
    ) -> Result<Self, IgnoreError> {
        let rules = entries
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let jq = entry
                    .jq_path_expressions
                    .iter()
                    .map(|expression| {
                        filters
                            .compile(expression)
                            .map_err(|source| IgnoreError::Jq {
                                field,
                                index,
                                expression: expression.clone(),
                                source,
                            })
                    })
                    .collect::<Result<_, _>>()?;
                let pointers = entry
                    .json_pointers
                    .iter()
                    .map(|pointer| {
                        tokens(pointer).ok_or_else(|| IgnoreError::Pointer {
                            field,
                            index,
                            pointer: pointer.clone(),
                        })
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Rule {
                    group: entry.group.clone(),
                    kind: entry.kind.clone(),
                    name: entry.name.clone(),
                    namespace: entry.namespace.clone(),
                    pointers,
                    jq,
                    managers: entry.managed_fields_managers.clone(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            rules,
            filters: Arc::clone(filters),
        })
    }

    /// No rules; those joined to them compile their jq expressions in `filters`.
    #[must_use]
    pub fn none(filters: &Arc<JqFilters>) -> Self {
        Self {
            rules: Vec::new(),
            filters: Arc::clone(filters),
        }
    }

    /// These rules and then `other`'s (the system-wide rules joined with an Application's),
    /// compiling in these rules' filters.
    #[must_use]
    pub fn joined(&self, other: &Self) -> Self {
        Self {
            rules: [self.rules.as_slice(), other.rules.as_slice()].concat(),
            filters: Arc::clone(&self.filters),
        }
    }

    /// Where these rules compiled their jq expressions (and rules joined to them compile
    /// theirs): the owner's, kept between reconciles.
    #[must_use]
    pub fn filters(&self) -> &Arc<JqFilters> {
        &self.filters
    }

    /// Whether some rule applies to the object `key`.
    #[must_use]
    pub fn applies_to(&self, key: &ObjectKey) -> bool {
        self.rules.iter().any(|rule| rule.matches(key))
    }

    /// `desired` (the object `key`) with the values of `live` at every ignored field: set where
    /// the live object has the field, removed where it does not.
    #[must_use]
    pub fn overlay(&self, key: &ObjectKey, desired: &Value, live: &Value) -> Value {
        let mut result = desired.clone();
        for rule in self.rules.iter().filter(|rule| rule.matches(key)) {
            for pointer in &rule.pointers {
                let path: Vec<Step> = pointer.iter().cloned().map(Step::Token).collect();
                copy(&mut result, live, &path);
            }
            for expression in &rule.jq {
                let mut selected = expression.paths(live);
                selected.extend(expression.paths(desired));
                for tokens in selected {
                    let path: Vec<Step> = tokens.into_iter().map(Step::Token).collect();
                    copy(&mut result, live, &path);
                }
            }
            for path in managed_paths(live, &rule.managers) {
                copy(&mut result, live, &path);
            }
        }
        result
    }
}

impl Rule {
    fn matches(&self, key: &ObjectKey) -> bool {
        let namespace = key.namespace.as_deref().unwrap_or_default();
        wildcard(&self.group, &key.group)
            && wildcard(&self.kind, &key.kind)
            && (self.name.is_empty() || self.name == key.name)
            && (self.namespace.is_empty() || self.namespace == namespace)
    }
}

/// Whether `text` matches `pattern`, in which each `*` stands for any run of characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        let Some(at) = rest.find(part) else {
            return false;
        };
        rest = &rest[at + part.len()..];
    }
    rest.ends_with(last)
}

/// The unescaped tokens of a JSON pointer (`~1` is `/`, `~0` is `~`), None when it does not
/// start with `/`.
fn tokens(pointer: &str) -> Option<Vec<String>> {
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Sets the node of `desired` at `path` to that of `live`, or removes it where `live` has none.
fn copy(desired: &mut Value, live: &Value, path: &[Step]) {
    let Some((step, rest)) = path.split_first() else {
        *desired = live.clone();
        return;
    };
    match step {
        Step::Token(token) => {
            if let (Value::Array(want), Value::Array(have)) = (&mut *desired, live) {
                let Ok(index) = token.parse::<usize>() else {
                    return;
                };
                match (index < want.len(), have.get(index)) {
                    (true, Some(item)) => copy(&mut want[index], item, rest),
                    // An item only the live list has: taken whole.
                    (false, Some(item)) => want.push(item.clone()),
                    (true, None) if rest.is_empty() => {
                        want.remove(index);
                    }
                    _ => {}
                }
                return;
            }
            let Some(have) = live.get(token.as_str()) else {
                if let Some(map) = desired.as_object_mut() {
                    if rest.is_empty() {
                        map.remove(token);
                    } else if let Some(child) = map.get_mut(token) {
                        remove(child, rest);
                    }
                }
                return;
            };
            if !desired.is_object() {
                if !desired.is_null() {
                    return;
                }
                *desired = Value::Object(Map::new());
            }
            let Some(map) = desired.as_object_mut() else {
                return;
            };
            let want = map.entry(token.clone()).or_insert_with(|| match have {
                Value::Object(_) if !rest.is_empty() => Value::Object(Map::new()),
                other => other.clone(),
            });
            copy(want, have, rest);
        }
        Step::Item(fields) => {
            let Some(have) = live.as_array().and_then(|items| find(items, fields)) else {
                return;
            };
            let Some(want) = desired.as_array_mut() else {
                return;
            };
            match want.iter().position(|item| matches_fields(item, fields)) {
                Some(index) => copy(&mut want[index], &live[have], rest),
                None => {
                    let at = have.min(want.len());
                    want.insert(at, live[have].clone());
                }
            }
        }
        Step::Member(value) => {
            let present = live.as_array().is_some_and(|items| items.contains(value));
            if let Some(want) = desired.as_array_mut()
                && present
                && !want.contains(value)
            {
                want.push(value.clone());
            }
        }
    }
}

/// Removes the node of `value` at the tokens of `path`, if present.
fn remove(value: &mut Value, path: &[Step]) {
    let Some((Step::Token(token), rest)) = path.split_first() else {
        return;
    };
    let Some(map) = value.as_object_mut() else {
        return;
    };
    if rest.is_empty() {
        map.remove(token);
    } else if let Some(child) = map.get_mut(token) {
        remove(child, rest);
    }
}

/// The index of the list item whose fields have the values of `fields`.
fn find(items: &[Value], fields: &Map<String, Value>) -> Option<usize> {
    items.iter().position(|item| matches_fields(item, fields))
}

fn matches_fields(item: &Value, fields: &Map<String, Value>) -> bool {
    fields
        .iter()
        .all(|(field, value)| item.get(field) == Some(value))
}

/// The paths of every field that one of `managers` owns in `live` (its managed fields): the
/// leaves of their `fieldsV1`, and list items they created (`.`) as a whole.
fn managed_paths(live: &Value, managers: &[String]) -> Vec<Vec<Step>> {
    if managers.is_empty() {
        return Vec::new();
    }
    let entries = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| {
            entry
                .get("manager")
                .and_then(Value::as_str)
                .is_some_and(|manager| managers.iter().any(|m| m == manager))
        })
        .filter_map(|entry| entry.get("fieldsV1"));
    let mut paths = Vec::new();
    for fields in entries {
        collect(fields, &mut Vec::new(), &mut paths);
    }
    paths
}

fn collect(fields: &Value, prefix: &mut Vec<Step>, paths: &mut Vec<Vec<Step>>) {
    let Some(fields) = fields.as_object().filter(|fields| !fields.is_empty()) else {
        paths.push(prefix.clone());
        return;
    };
    for (key, children) in fields {
        let step = if let Some(name) = key.strip_prefix("f:") {
            Step::Token(name.to_owned())
        } else if let Some(item) = key.strip_prefix("k:") {
            match serde_json::from_str(item) {
                Ok(fields) => Step::Item(fields),
                Err(_) => continue,
            }
        } else if let Some(member) = key.strip_prefix("v:") {
            match serde_json::from_str(member) {
                Ok(value) => Step::Member(value),
                Err(_) => continue,
            }
        } else {
            continue;
        };
        let whole_item = matches!(step, Step::Item(_))
            && children.as_object().is_some_and(|c| c.contains_key("."));
        prefix.push(step);
        if whole_item {
            paths.push(prefix.clone());
        } else {
            collect(children, prefix, paths);
        }
        prefix.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(spec: Value) -> ResourceIgnoreDifferences {
        serde_json::from_value(spec).unwrap()
    }

    fn key(group: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            kind: kind.into(),
            namespace: Some(namespace.into()).filter(|n: &String| !n.is_empty()),
            name: name.into(),
        }
    }

    fn deployment(replicas: Value, extra: Value) -> Value {
        let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1"}]}}}});
        if let Some(extra) = extra.as_object() {
            for (k, v) in extra {
                object["metadata"][k] = v.clone();
            }
        }
        object
    }

    #[test]
    fn overlay_takes_the_live_values_at_ignored_fields() {
        let web = key("apps", "Deployment", "shop", "web");
        let hpa = json!({"managedFields": [
            {"manager": "hpa", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "injector", "operation": "Update", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"sidecar\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}}
        ]});
        let mut injected = deployment(json!(5), hpa.clone());
        injected["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "sidecar", "image": "proxy:1"}));
        let replicas =
            json!({"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]});
        // (rules, object, desired, live, expected overlay)
        let cases = [
            (
                "a pointer takes the live value",
                json!([replicas]),
                web.clone(),
                deployment(json!(2), json!({})),
                deployment(json!(5), json!({})),
                deployment(json!(5), json!({})),
            ),
            (
                "a pointer the live object lacks is removed",
                json!([replicas]),
                web.clone(),
                deployment(json!(2), json!({})),
                json!({"spec": {}}),
                {
                    let mut d = deployment(json!(2), json!({}));
                    d["spec"].as_object_mut().unwrap().remove("replicas");
                    d
                },
            ),
            (
                "another kind is untouched",
                json!([replicas]),
                key("apps", "StatefulSet", "shop", "web"),
                deployment(json!(2), json!({})),
                deployment(json!(5), json!({})),
                deployment(json!(2), json!({})),
            ),
            (
                "name and namespace narrow the rule",
                json!([{"group": "apps", "kind": "Deployment", "name": "other", "jsonPointers": ["/spec/replicas"]}]),
                web.clone(),
                deployment(json!(2), json!({})),
                deployment(json!(5), json!({})),
                deployment(json!(2), json!({})),
            ),
            (
                "wildcards and escaped tokens",
                json!([{"group": "*", "kind": "*", "jsonPointers": ["/metadata/annotations/a~1b"]}]),
                web.clone(),
                json!({"metadata": {"annotations": {"a/b": "mine", "c": "1"}}}),
                json!({"metadata": {"annotations": {"a/b": "theirs"}}}),
                json!({"metadata": {"annotations": {"a/b": "theirs", "c": "1"}}}),
            ),
            (
                "a missing parent is created for the live value",
                json!([{"kind": "ConfigMap", "jsonPointers": ["/metadata/labels/owner"]}]),
                key("", "ConfigMap", "shop", "c"),
                json!({"metadata": {"name": "c"}}),
                json!({"metadata": {"name": "c", "labels": {"owner": "x", "other": "y"}}}),
                json!({"metadata": {"name": "c", "labels": {"owner": "x"}}}),
            ),
            (
                "a jq expression selects a list item by its fields",
                json!([{"group": "apps", "kind": "Deployment", "jqPathExpressions": [
                    ".spec.template.spec.containers[] | select(.name == \"sidecar\")"]}]),
                web.clone(),
                deployment(json!(2), json!({})),
                injected.clone(),
                {
                    let mut d = deployment(json!(2), json!({}));
                    d["spec"]["template"]["spec"]["containers"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "sidecar", "image": "proxy:1"}));
                    d
                },
            ),
            (
                "a jq expression on a field only the desired object has removes it",
                json!([{"kind": "ConfigMap", "jqPathExpressions": [".data.generated"]}]),
                key("", "ConfigMap", "shop", "c"),
                json!({"data": {"generated": "1", "kept": "2"}}),
                json!({"data": {"kept": "3"}}),
                json!({"data": {"kept": "2"}}),
            ),
            (
                "group and kind wildcards",
                json!([{"group": "*.k8s.io", "kind": "*Binding", "jsonPointers": ["/subjects"]}]),
                key("rbac.authorization.k8s.io", "RoleBinding", "shop", "b"),
                json!({"subjects": ["mine"]}),
                json!({"subjects": ["theirs"]}),
                json!({"subjects": ["theirs"]}),
            ),
            (
                "managers: their fields and the list items they created",
                json!([{"group": "apps", "kind": "Deployment", "managedFieldsManagers": ["hpa", "injector"]}]),
                web.clone(),
                deployment(json!(2), json!({})),
                injected.clone(),
                {
                    let mut d = deployment(json!(5), json!({}));
                    d["spec"]["template"]["spec"]["containers"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "sidecar", "image": "proxy:1"}));
                    d
                },
            ),
            (
                "an unlisted manager's fields still count",
                json!([{"group": "apps", "kind": "Deployment", "managedFieldsManagers": ["hpa"]}]),
                web.clone(),
                deployment(json!(2), json!({})),
                injected,
                deployment(json!(5), json!({})),
            ),
        ];
        for (case, rules, key, desired, live, expected) in cases {
            let entries: Vec<ResourceIgnoreDifferences> = rules
                .as_array()
                .unwrap()
                .iter()
                .cloned()
                .map(entry)
                .collect();
            let ignore =
                IgnoreDifferences::new("ignoreDifferences", &entries, &Arc::default()).unwrap();
            assert_eq!(ignore.overlay(&key, &desired, &live), expected, "{case}");
        }
    }

    #[test]
    fn unusable_entries_are_named() {
        let cases = [
            (
                json!({"kind": "Deployment", "jsonPointers": ["spec/replicas"]}),
                "ignoreDifferences[1].jsonPointers: \"spec/replicas\" is not a JSON pointer (it must start with /)",
            ),
            (
                json!({"kind": "Deployment", "jqPathExpressions": [".spec | select("]}),
                "ignoreDifferences[1].jqPathExpressions: \".spec | select(\" cannot be used",
            ),
        ];
        for (bad, message) in cases {
            let entries = [
                entry(json!({"kind": "ConfigMap", "jsonPointers": ["/data"]})),
                entry(bad),
            ];
            let error =
                IgnoreDifferences::new("ignoreDifferences", &entries, &Arc::default()).unwrap_err();
            assert_eq!(error.to_string(), message);
        }
        assert!(!IgnoreDifferences::default().applies_to(&key(
            "apps",
            "Deployment",
            "shop",
            "web"
        )));
    }
}

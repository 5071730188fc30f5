//! Parsing one manifest file: multi-document YAML or a JSON stream, empty documents skipped,
//! `kind: List` (and any `*List` with `items`) flattened into its items.

use std::path::Path;

use serde_json::Value;

use super::error::ValidationError;
use super::resource::{Resource, Source};

/// Parses the text of one manifest file into resources. The format follows the extension:
/// `.json` is a stream of JSON values, anything else multi-document YAML.
///
/// Returns the resources that are valid and the errors of those that are not; an unparsable file
/// yields a single error and no resources.
#[must_use]
pub fn parse_documents(file: &Path, text: &str) -> (Vec<Resource>, Vec<ValidationError>) {
    let documents = match read_values(file, text) {
        Ok(documents) => documents,
        Err(message) => {
            let error = ValidationError {
                file: file.to_owned(),
                document: None,
                object: None,
                message,
            };
            return (Vec::new(), vec![error]);
        }
    };
    resources_of(file, documents)
}

/// The resources of the parsed `documents` of `file` (null documents skipped, lists
/// flattened), and the errors of those that are not valid objects.
#[must_use]
pub fn resources_of(file: &Path, documents: Vec<Value>) -> (Vec<Resource>, Vec<ValidationError>) {
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    let non_empty = documents.into_iter().filter(|document| !document.is_null());
    for (index, document) in non_empty.enumerate() {
        let source = Source {
            file: file.to_owned(),
            document: index,
        };
        let objects = match flatten_lists(document) {
            Ok(objects) => objects,
            Err(message) => {
                errors.push(ValidationError {
                    file: file.to_owned(),
                    document: Some(index),
                    object: None,
                    message,
                });
                continue;
            }
        };
        for object in objects {
            match Resource::from_value(object, source.clone()) {
                Ok(resource) => resources.push(resource),
                Err(problems) => errors.extend(problems),
            }
        }
    }
    (resources, errors)
}

/// The objects of one file, as [`parse_documents`] reads them (null documents skipped, lists
/// flattened) but not checked as manifests: for files of other objects than manifests
/// (`flotilla import`'s Argo CD objects).
///
/// # Errors
/// The file does not parse, or a `kind: List` whose `items` is not a list; the message does not
/// name the file.
pub fn read_objects(file: &Path, text: &str) -> Result<Vec<Value>, String> {
    let mut objects = Vec::new();
    for document in read_values(file, text)?
        .into_iter()
        .filter(|d| !d.is_null())
    {
        objects.extend(flatten_lists(document)?);
    }
    Ok(objects)
}

fn read_values(file: &Path, text: &str) -> Result<Vec<Value>, String> {
    let is_json = file
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    if is_json {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .map_err(|error| format!("invalid JSON: {error}"))
    } else {
        serde_saphyr::from_multiple_with_options::<Value>(text, super::limits::yaml_options())
            .map_err(|error| format!("invalid YAML: {error}"))
    }
}

/// A `List` (or any kind ending in `List` that carries an `items` array) becomes its items,
/// recursively; anything else is returned as is.
///
/// # Errors
/// A `kind: List` whose `items` is not a list (a List is never an object of its own).
fn flatten_lists(document: Value) -> Result<Vec<Value>, String> {
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or("");
    match document.get("items") {
        Some(Value::Array(_)) if kind.ends_with("List") => {}
        Some(items) if kind == "List" => {
            return Err(format!(
                "kind: List whose items is {}, not a list",
                json_kind(items)
            ));
        }
        None if kind == "List" => return Ok(Vec::new()),
        _ => return Ok(vec![document]),
    }
    let Value::Object(mut map) = document else {
        return Ok(Vec::new());
    };
    let Some(Value::Array(items)) = map.remove("items") else {
        return Ok(Vec::new());
    };
    let mut objects = Vec::new();
    for item in items.into_iter().filter(|item| !item.is_null()) {
        objects.extend(flatten_lists(item)?);
    }
    Ok(objects)
}

/// What a JSON value is, as errors name it.
#[must_use]
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(resources: &[Resource]) -> Vec<(String, usize)> {
        resources
            .iter()
            .map(|r| (r.key().to_string(), r.source.document))
            .collect()
    }

    #[test]
    fn multi_document_yaml_skips_empty_documents() {
        let text = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\n\
                    # only a comment\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n";
        let (resources, errors) = parse_documents(Path::new("x.yaml"), text);
        assert_eq!(errors, vec![]);
        assert_eq!(
            names(&resources),
            [("ConfigMap a".into(), 0), ("Secret b".into(), 1)]
        );
    }

    #[test]
    fn lists_are_flattened() {
        let text = r"
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: a}
  - apiVersion: v1
    kind: SecretList
    items:
      - apiVersion: v1
        kind: Secret
        metadata: {name: s}
";
        let (resources, errors) = parse_documents(Path::new("x.yml"), text);
        assert_eq!(errors, vec![]);
        assert_eq!(
            names(&resources),
            [("ConfigMap a".into(), 0), ("Secret s".into(), 0)]
        );
    }

    #[test]
    fn a_list_whose_items_is_not_a_list_is_an_error() {
        let text = "apiVersion: v1\nkind: List\nitems: {a: 1}\n---\napiVersion: v1\nkind: List\n";
        let (resources, errors) = parse_documents(Path::new("x.yaml"), text);
        assert!(resources.is_empty());
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["x.yaml (document 0): kind: List whose items is an object, not a list"]
        );
    }

    #[test]
    fn json_stream() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}
                      {"apiVersion":"v1","kind":"List","items":[
                        {"apiVersion":"v1","kind":"Service","metadata":{"name":"b"}}]}"#;
        let (resources, errors) = parse_documents(Path::new("x.json"), text);
        assert_eq!(errors, vec![]);
        assert_eq!(
            names(&resources),
            [("ConfigMap a".into(), 0), ("Service b".into(), 1)]
        );
    }

    #[test]
    fn invalid_syntax_is_one_error_naming_the_file() {
        for (file, text, prefix) in [
            ("bad.yaml", "a: [1, 2\nb: c\n", "invalid YAML"),
            ("bad.json", "{\"a\": ", "invalid JSON"),
        ] {
            let (resources, errors) = parse_documents(Path::new(file), text);
            assert!(resources.is_empty());
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].file, Path::new(file));
            assert!(
                errors[0].message.starts_with(prefix),
                "{}",
                errors[0].message
            );
        }
    }

    #[test]
    fn invalid_objects_are_reported_and_valid_ones_kept() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\n\
                    kind: ConfigMap\nmetadata: {name: no-version}\n";
        let (resources, errors) = parse_documents(Path::new("x.yaml"), text);
        assert_eq!(names(&resources), [("ConfigMap ok".into(), 0)]);
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["x.yaml (document 1) ConfigMap no-version: missing apiVersion"]
        );
    }
}

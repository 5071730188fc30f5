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
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    let non_empty = documents.into_iter().filter(|document| !document.is_null());
    for (index, document) in non_empty.enumerate() {
        let source = Source {
            file: file.to_owned(),
            document: index,
        };
        for object in flatten_lists(document) {
            match Resource::from_value(object, source.clone()) {
                Ok(resource) => resources.push(resource),
                Err(problems) => errors.extend(problems),
            }
        }
    }
    (resources, errors)
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
fn flatten_lists(document: Value) -> Vec<Value> {
    let is_list = document
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with("List"))
        && document.get("items").is_some_and(Value::is_array);
    if !is_list {
        return vec![document];
    }
    match document {
        Value::Object(mut map) => match map.remove("items") {
            Some(Value::Array(items)) => items
                .into_iter()
                .filter(|item| !item.is_null())
                .flat_map(flatten_lists)
                .collect(),
            _ => Vec::new(),
        },
        other => vec![other],
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

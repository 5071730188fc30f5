//! Duplicate detection: two desired objects with the same group, kind, namespace and name.

use std::collections::BTreeMap;

use super::error::ValidationError;
use super::resource::{ObjectKey, ObjectName, Resource};

/// One error per repeated object (after namespaces are assigned), naming where it was first seen.
/// Objects with `generateName` are never duplicates.
#[must_use]
pub fn find_duplicates(resources: &[Resource]) -> Vec<ValidationError> {
    let mut first_seen: BTreeMap<ObjectKey, &Resource> = BTreeMap::new();
    let mut errors = Vec::new();
    for resource in resources {
        if matches!(resource.name, ObjectName::GenerateName(_)) {
            continue;
        }
        match first_seen.get(&resource.key()) {
            Some(first) => errors.push(resource.error(format!(
                "duplicate object, first defined in {} (document {})",
                first.source.file.display(),
                first.source.document
            ))),
            None => {
                first_seen.insert(resource.key(), resource);
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::manifest::Source;

    fn resource(file: &str, kind: &str, namespace: &str, name: (&str, &str)) -> Resource {
        let body = json!({"apiVersion": "v1", "kind": kind,
                          "metadata": {"namespace": namespace, name.0: name.1}});
        Resource::from_value(
            body,
            Source {
                file: file.into(),
                document: 0,
            },
        )
        .unwrap()
    }

    #[test]
    fn repeated_keys_are_errors() {
        let resources = [
            resource("a.yaml", "ConfigMap", "n", ("name", "c")),
            resource("b.yaml", "ConfigMap", "n", ("name", "c")),
            resource("b.yaml", "ConfigMap", "m", ("name", "c")),
            resource("b.yaml", "Secret", "n", ("name", "c")),
            resource("c.yaml", "Pod", "n", ("generateName", "p-")),
            resource("d.yaml", "Pod", "n", ("generateName", "p-")),
        ];
        let errors: Vec<_> = find_duplicates(&resources)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "b.yaml (document 0) ConfigMap n/c: duplicate object, first defined in a.yaml (document 0)"
            ]
        );
    }
}

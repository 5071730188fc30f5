//! The CRD reference pages: every field of each CRD's schema — its type, default and description
//! — with its standing against Argo CD, and the Argo CD fields refused by name.

use std::collections::BTreeSet;

use flotilla_core::api::argocd_parity::{self, Kind};
use flotilla_core::api::crd;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

use super::Page;
use super::markdown::{code, generated_note, table};

/// Parts of a schema that repeat another part (for a list, its items): listed once, where they
/// first appear.
const SAME_AS: &[(Kind, &str, &str)] = &[
    (Kind::Application, "spec.sources", "spec.source"),
    (Kind::Application, "status.operation", "spec.operation"),
    (Kind::Application, "status.history[].source", "spec.source"),
    (Kind::Application, "status.history[].sources", "spec.source"),
    (
        Kind::ApplicationSet,
        "spec.template.spec",
        "the Application's `spec`",
    ),
    (
        Kind::ApplicationSet,
        "spec.generators[].matrix.generators",
        "spec.generators[]",
    ),
    (
        Kind::ApplicationSet,
        "spec.generators[].merge.generators",
        "spec.generators[]",
    ),
];

/// The pages: an index, then one page per CRD.
#[must_use]
pub fn pages() -> Vec<Page> {
    let mut index = format!(
        "# CRD fields\n\n{}Flotilla's resources are `flotilla.dev/v1alpha1`; Argo CD's \
         `argoproj.io/v1alpha1` YAML of the same kinds is read as it is. Each page lists every \
         field of the CRD's schema (as `flotilla crd` prints it and `deploy/crds/` holds it) \
         with its type, default, description and its standing against Argo CD:\n\n\
         - **works**: Argo CD has the field and Flotilla reads it the same way;\n\
         - **works differently**: the note says how;\n\
         - **Flotilla-only**: Argo CD has no such field;\n\
         - **refused by name**: Argo CD has the field and Flotilla does not implement it: the \
         CRD (`kubectl apply`: `unknown field`), `flotilla render` and the controller refuse it \
         naming it, never ignore it.\n\n",
        generated_note()
    );
    let mut pages = Vec::new();
    for (file, definition) in crd::all() {
        let (kind, page) = kind_of(file);
        index.push_str(&format!("- [{}]({page})\n", definition.spec.names.kind));
        pages.push(Page {
            path: format!("crds/{page}"),
            text: crd_page(kind, &definition),
        });
    }
    pages.insert(
        0,
        Page {
            path: "crds/index.md".to_owned(),
            text: index,
        },
    );
    pages
}

/// The parity kind and page name of a CRD file of `crd::all`.
fn kind_of(file: &str) -> (Kind, &'static str) {
    if file.starts_with("applicationsets.") {
        (Kind::ApplicationSet, "applicationset.md")
    } else if file.starts_with("appprojects.") {
        (Kind::AppProject, "appproject.md")
    } else {
        (Kind::Application, "application.md")
    }
}

/// One CRD's page.
fn crd_page(kind: Kind, definition: &CustomResourceDefinition) -> String {
    let names = &definition.spec.names;
    let mut out = format!("# {}\n\n{}", names.kind, generated_note());
    out.push_str(&format!(
        "`{}/{}`, kind `{}`, namespaced; `kubectl get {}`{}.\n\n",
        definition.spec.group,
        definition
            .spec
            .versions
            .first()
            .map_or("", |v| v.name.as_str()),
        names.kind,
        names.plural,
        names
            .short_names
            .as_ref()
            .filter(|s| !s.is_empty())
            .map(|s| format!(" (short names {})", s.join(", ")))
            .unwrap_or_default(),
    ));
    let mut rows = Vec::new();
    let mut paths = BTreeSet::new();
    let root = definition
        .spec
        .versions
        .first()
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref());
    if let Some(root) = root {
        for (name, field) in properties(root) {
            if name == "spec" || name == "status" {
                walk(kind, name, field, &mut rows, &mut paths);
            }
        }
    }
    out.push_str(&table(
        &["Field", "Type", "Default", "Description", "Argo CD"],
        &rows,
    ));
    let refused: Vec<Vec<String>> = argocd_parity::refused(kind)
        .filter(|entry| !paths.contains(entry.path))
        .map(|entry| vec![code(entry.path), entry.note.to_owned()])
        .collect();
    if !refused.is_empty() {
        out.push_str(
            "\n## Argo CD fields refused by name\n\nNot in the schema: `kubectl apply` refuses them \
             (`unknown field`), and so do `flotilla render`, `flotilla sync APP.yaml`, \
             `flotilla import` and `--project FILE`.\n\n",
        );
        out.push_str(&table(&["Field", "Note"], &refused));
    }
    out
}

/// Adds the row of the field at `path` and of every field under it.
fn walk(
    kind: Kind,
    path: &str,
    field: &JSONSchemaProps,
    rows: &mut Vec<Vec<String>>,
    paths: &mut BTreeSet<String>,
) {
    paths.insert(path.to_owned());
    let (parity, note) = argocd_parity::lookup(kind, path);
    let parity = if note.is_empty() {
        parity.as_str().to_owned()
    } else {
        format!("{}: {note}", parity.as_str())
    };
    let same_as = SAME_AS
        .iter()
        .find(|(k, at, _)| *k == kind && *at == path)
        .map(|(_, _, other)| *other);
    let mut description = field.description.clone().unwrap_or_default();
    if let Some(other) = same_as {
        let other = if other.contains('`') {
            other.to_owned()
        } else {
            code(other)
        };
        description = format!("{description} Same fields as {other}.")
            .trim()
            .to_owned();
    }
    rows.push(vec![
        code(path),
        type_of(field),
        field
            .default
            .as_ref()
            .map(|d| code(&d.0.to_string()))
            .unwrap_or_default(),
        description,
        parity,
    ]);
    if same_as.is_some() {
        return;
    }
    for (name, child) in properties(field) {
        walk(kind, &format!("{path}.{name}"), child, rows, paths);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = &field.items {
        for (name, child) in properties(items) {
            walk(kind, &format!("{path}[].{name}"), child, rows, paths);
        }
    }
}

/// A schema's properties, in name order.
fn properties(schema: &JSONSchemaProps) -> impl Iterator<Item = (&str, &JSONSchemaProps)> {
    schema
        .properties
        .iter()
        .flatten()
        .map(|(name, field)| (name.as_str(), field))
}

/// The field's type as the page writes it: `string`, `[]object`, `map[string]string`, …
fn type_of(field: &JSONSchemaProps) -> String {
    if field.x_kubernetes_int_or_string == Some(true) {
        return "int or string".to_owned();
    }
    let base = match field.type_.as_deref() {
        Some("array") => match &field.items {
            Some(JSONSchemaPropsOrArray::Schema(items)) => format!("[]{}", type_of(items)),
            _ => "array".to_owned(),
        },
        Some("object") => match &field.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(values)) => {
                format!("map[string]{}", type_of(values))
            }
            _ if field.x_kubernetes_preserve_unknown_fields == Some(true) => {
                "object (any fields)".to_owned()
            }
            _ => "object".to_owned(),
        },
        Some(other) => field
            .format
            .as_deref()
            .map_or_else(|| other.to_owned(), |format| format!("{other} ({format})")),
        None if field.x_kubernetes_preserve_unknown_fields == Some(true) => "any".to_owned(),
        None => "object".to_owned(),
    };
    match &field.enum_ {
        Some(values) if !values.is_empty() => format!(
            "{base}: {}",
            values
                .iter()
                .map(|v| v.0.as_str().map_or_else(|| v.0.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => base,
    }
}

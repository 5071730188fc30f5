//! The fields of an ApplicationSet that the API server keeps as free-form JSON — a generator's
//! `template` override, a nested matrix/merge, an analysis Job's spec, and what `templatePatch`
//! writes — read strictly before anything is generated, so that `render`, `import` and the
//! controller refuse a field Flotilla does not implement by name. Templates are not rendered
//! here: a value that is still a template's text is read as far as it goes (rendering checks the
//! result again, strictly).

use flotilla_generators::generator::unknown_nested_fields;
use flotilla_generators::strict::{UnknownFields, unknown_fields};
use serde_json::Value;

use super::application_set::{ApplicationSetSpec, ApplicationSetTemplate};
use super::template_merge::{fill_empty, merge_patch};

/// What stands for a template action (`{{ ... }}`) of `templatePatch` while it is read
/// unrendered; a field whose path holds it is not judged.
const ACTION: &str = "flotilla-template-action";

/// Every field of `spec` kept as free-form JSON that Flotilla does not know, by path
/// (`spec.generators.0.list.template.spec.sourc`, `spec.templatePatch: spec.source.name`).
#[must_use]
pub fn unrendered_unknown_fields(spec: &ApplicationSetSpec) -> UnknownFields {
    let base = serde_json::to_value(&spec.template).unwrap_or(Value::Null);
    let mut unknown = unknown_nested_fields(&spec.generators).under("spec").0;
    for (i, generator) in spec.generators.iter().enumerate() {
        let generator = serde_json::to_value(generator).unwrap_or(Value::Null);
        let overrides = generator
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(kind, g)| g.get("template").map(|over| (kind, over)));
        for (kind, over) in overrides {
            let fields = unknown_fields::<ApplicationSetTemplate>(&fill_empty(over, &base));
            unknown.extend(
                fields
                    .under(&format!("spec.generators.{i}.{kind}.template"))
                    .0,
            );
        }
    }
    if let Some(patch) = spec.template_patch.as_deref().and_then(unrendered_patch) {
        let mut patched = base;
        merge_patch(&mut patched, &patch);
        let fields = unknown_fields::<ApplicationSetTemplate>(&patched);
        unknown.extend(
            fields
                .0
                .into_iter()
                .filter(|path| !path.contains(ACTION))
                .map(|path| format!("spec.templatePatch: {path}")),
        );
    }
    unknown.extend(unknown_analysis_fields(spec));
    UnknownFields(unknown)
}

/// `templatePatch` read as YAML with its template actions left out: lines holding only actions
/// dropped, other actions replaced by [`ACTION`]. None when that is not YAML (the rendered
/// patch is checked then).
fn unrendered_patch(text: &str) -> Option<Value> {
    let mut plain = String::new();
    for line in text.lines() {
        let mut rest = line;
        let mut kept = String::new();
        let mut only_actions = true;
        while let Some(start) = rest.find("{{") {
            let end = rest[start..].find("}}")? + start + 2;
            kept.push_str(&rest[..start]);
            only_actions &= rest[..start].trim().is_empty();
            kept.push_str(ACTION);
            rest = &rest[end..];
        }
        only_actions &= rest.trim().is_empty() && kept.contains(ACTION);
        if only_actions {
            continue;
        }
        kept.push_str(rest);
        plain.push_str(&kept);
        plain.push('\n');
    }
    serde_saphyr::from_str::<Value>(&plain)
        .ok()
        .filter(Value::is_object)
}

/// The fields of the RollingSync steps' analysis Job specs that a JobSpec does not have.
fn unknown_analysis_fields(spec: &ApplicationSetSpec) -> Vec<String> {
    let steps = spec
        .strategy
        .iter()
        .flat_map(|strategy| strategy.rolling_sync.iter())
        .flat_map(|rolling| rolling.steps.iter());
    let mut unknown = Vec::new();
    for (i, step) in steps.enumerate() {
        if let Some(job) = step.analysis.as_ref().and_then(|a| a.job.as_ref()) {
            let parent = format!("spec.strategy.rollingSync.steps.{i}.analysis.job.spec");
            unknown.extend(job.spec.unknown.clone().under(&parent).0);
        }
    }
    unknown
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(extra: Value) -> ApplicationSetSpec {
        let mut spec = json!({
            "generators": [{"list": {"elements": [{"name": "a"}]}}],
            "template": {"metadata": {"name": "{{name}}"}, "spec": {"project": "default",
                "source": {"repoURL": "https://x", "path": "{{name}}"},
                "destination": {"name": "in-cluster", "namespace": "x"}}}});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn what_the_schema_keeps_free_form_is_read_strictly() {
        let cases = [
            (json!({}), vec![]),
            (
                json!({"templatePatch": "{{- if .autoSync }}\nspec:\n  info: [{name: a}]\n  \
                    source:\n    name: '{{ .cmp }}'\n    {{ .key }}: x\n{{- end }}\n"}),
                vec![
                    "spec.templatePatch: spec.info",
                    "spec.templatePatch: spec.source.name",
                ],
            ),
            (
                json!({"templatePatch": "spec:\n  syncPolicy:\n    automated: {prune: '{{ .prune }}'}\n"}),
                vec![],
            ),
            (
                json!({"generators": [{"list": {"elements": [], "template":
                    {"metadata": {}, "spec": {"sourc": {"path": "x"}}}}}]}),
                vec!["spec.generators.0.list.template.spec.sourc"],
            ),
            (
                json!({"generators": [{"merge": {"mergeKeys": ["a"], "generators": [
                    {"list": {"elements": []}},
                    {"matrix": {"generators": [{"clusters": {"selectr": {}}}, {"list": {"elements": []}}]}}]}}]}),
                vec!["spec.generators.0.merge.generators.1.matrix.generators.0.clusters.selectr"],
            ),
        ];
        for (extra, expected) in cases {
            let fields = unrendered_unknown_fields(&spec(extra.clone()));
            assert_eq!(fields.0, expected, "{extra}");
        }
    }
}

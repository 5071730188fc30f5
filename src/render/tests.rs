//! Rendering tests over small ApplicationSets: template overrides, templatePatch, validation and
//! the all-or-nothing rule.

use super::*;
use crate::cluster::generator_inputs::inventory::StaticInventory;
use crate::repo::LocalRepos;
use flotilla_core::api::document::parse_application_set;

fn render(yaml: &str) -> Result<Vec<Application>, RenderError> {
    let appset = parse_application_set("test.yaml", yaml).expect("parses");
    let inventory = StaticInventory::default();
    let repos = LocalRepos::default();
    render_application_set(&appset, Sources::offline(&inventory, &repos))
}

fn appset(go_template: bool, elements: &str, extra: &str, name: &str) -> String {
    format!(
        "apiVersion: flotilla.dev/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: s, namespace: ns}}\n\
         spec:\n  goTemplate: {go_template}\n  generators:\n    - list:\n        elements: {elements}\n{extra}\
         \n  template:\n    metadata: {{name: '{name}'}}\n    spec:\n      project: p\n      source: {{repoURL: r, path: base}}\n      \
         destination: {{server: 'https://s', namespace: d}}\n"
    )
}

fn names(apps: &[Application]) -> Vec<String> {
    apps.iter()
        .map(|a| a.metadata.name.clone().unwrap_or_default())
        .collect()
}

#[test]
fn output_is_sorted_and_labelled_with_the_application_set() {
    let apps = render(&appset(false, "[{n: b}, {n: a}]", "", "app-{{n}}")).unwrap();
    assert_eq!(names(&apps), ["app-a", "app-b"]);
    let labels = apps[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get(APPLICATION_SET_LABEL).map(String::as_str),
        Some("s")
    );
    assert_eq!(apps[0].metadata.namespace.as_deref(), Some("ns"));

    // The ApplicationSet's namespace, whatever the template says (as in Argo CD).
    let elsewhere = appset(false, "[{n: a}]", "", "app-{{n}}").replace(
        "metadata: {name: 'app-{{n}}'}",
        "metadata: {name: 'app-{{n}}', namespace: other}",
    );
    let apps = render(&elsewhere).unwrap();
    assert_eq!(apps[0].metadata.namespace.as_deref(), Some("ns"));
}

#[test]
fn a_generator_template_overrides_the_application_set_template() {
    let yaml = appset(false, "[{n: a}]", "", "app-{{n}}").replace(
        "        elements: [{n: a}]\n",
        "        elements: [{n: a}]\n        template:\n          metadata: {}\n          spec: {project: '', source: {repoURL: '', path: 'over/{{n}}'}, destination: {}}\n",
    );
    let apps = render(&yaml).unwrap();
    assert_eq!(apps[0].spec.source.path, "over/a");
    assert_eq!(apps[0].spec.project, "p");
}

#[test]
fn template_patch_merges_but_cannot_change_the_project() {
    let patch = "  templatePatch: |\n    spec:\n      source:\n        path: 'patched/{{ .n }}'\n      syncPolicy:\n        automated: {prune: true}\n";
    let apps = render(&appset(true, "[{n: a}]", patch, "app-{{ .n }}")).unwrap();
    assert_eq!(apps[0].spec.source.path, "patched/a");
    assert!(
        apps[0]
            .spec
            .sync_policy
            .as_ref()
            .and_then(|p| p.automated.as_ref())
            .is_some_and(|a| a.prune)
    );

    let conditional = "  templatePatch: |\n    {{- if .patch }}\n    spec:\n      source:\n        path: patched\n    {{- end }}\n";
    let apps = render(&appset(
        true,
        "[{n: a, patch: true}, {n: b}]",
        conditional,
        "app-{{ .n }}",
    ))
    .unwrap();
    assert_eq!(apps[0].spec.source.path, "patched");
    assert_eq!(
        apps[1].spec.source.path, "base",
        "an empty patch changes nothing"
    );

    let patch = "  templatePatch: |\n    spec:\n      project: other\n";
    let err = render(&appset(true, "[{n: a}]", patch, "app-{{ .n }}")).unwrap_err();
    assert!(
        err.to_string().contains("may not change spec.project"),
        "{err}"
    );
}

#[test]
fn a_field_only_the_rendered_patch_or_override_names_is_refused_with_its_parameter_set() {
    // Unrendered, the patch's key is a template action: it is judged once rendered.
    let patch =
        "  templatePatch: |\n    spec:\n      source:\n        '{{ .field }}': {name: cmp}\n";
    let err = render(&appset(
        true,
        "[{n: a, field: name}]",
        patch,
        "app-{{ .n }}",
    ))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ApplicationSet s: templatePatch, parameter set 0 {\"field\":\"name\",\"n\":\"a\"}: \
         unsupported field spec.source.name: Flotilla does not implement it (check the spelling, \
         or remove it)"
    );
    let over = "        template: {metadata: {}, spec: {info: [{name: a}]}}\n";
    let err = render(&appset(false, "[{n: a}]", over, "app-{{n}}")).unwrap_err();
    assert!(
        err.to_string()
            .contains("unsupported field spec.generators.0.list.template.spec.info"),
        "{err}"
    );
}

#[test]
fn every_invalid_application_is_reported_and_none_is_generated() {
    let err = render(&appset(
        false,
        "[{n: A_1}, {n: ok}, {n: ok}, {n: ''}]",
        "",
        "{{n}}",
    ))
    .unwrap_err();
    let RenderError::Invalid { problems, .. } = &err else {
        panic!("{err}")
    };
    let reasons: Vec<_> = problems
        .iter()
        .map(|p| (p.set.index, p.name.as_str()))
        .collect();
    assert_eq!(reasons, [(0, "A_1"), (2, "ok"), (3, "")]);
    assert!(
        err.to_string()
            .contains("the same name is generated by parameter set 1"),
        "{err}"
    );
}

#[test]
fn a_label_value_over_63_characters_is_refused() {
    let yaml = appset(false, "[{n: a}, {n: b}]", "", "{{n}}").replace(
        "metadata: {name: '{{n}}'}",
        "metadata: {name: '{{n}}', labels: {team: 'payments-{{n}}-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}",
    );
    let err = render(&yaml).unwrap_err();
    let RenderError::Invalid { problems, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(problems.len(), 2, "{err}");
    assert!(
        err.to_string()
            .contains("metadata.labels: label \"team\": value \"payments-a-"),
        "{err}"
    );
    assert!(
        err.to_string().contains("64 characters, more than 63"),
        "{err}"
    );
}

#[test]
fn a_template_cannot_request_a_sync() {
    let yaml = appset(false, "[{n: a}]", "", "{{n}}").replace(
        "{server: 'https://s', namespace: d}",
        "{server: 'https://s', namespace: d}\n      operation: {sync: {}, initiatedBy: {username: x}}",
    );
    assert!(yaml.contains("operation:"), "{yaml}");
    let err = render(&yaml).unwrap_err();
    assert!(err.to_string().contains("spec.operation"), "{err}");
}

#[test]
fn a_destination_names_exactly_one_cluster() {
    let yaml = appset(false, "[{n: a}]", "", "{{n}}")
        .replace("{server: 'https://s', namespace: d}", "{namespace: d}");
    let err = render(&yaml).unwrap_err();
    assert!(
        err.to_string().contains("exactly one of server or name"),
        "{err}"
    );
}

#[test]
fn template_errors_name_the_parameter_set_and_field() {
    let yaml = appset(
        true,
        "[{n: a}]",
        "  goTemplateOptions: [\"missingkey=error\"]\n",
        "{{ .missing }}",
    );
    let err = render(&yaml).unwrap_err().to_string();
    assert!(
        err.contains("parameter set 0 {\"n\":\"a\"}") && err.contains("metadata.name"),
        "{err}"
    );
    let yaml = appset(
        true,
        "[{n: a}]",
        "  goTemplateOptions: [\"missingkey=maybe\"]\n",
        "x",
    );
    assert!(matches!(
        render(&yaml),
        Err(RenderError::TemplateOptions { .. })
    ));
}

#[test]
fn argo_cd_documents_are_accepted_and_unknown_fields_rejected() {
    let argo = appset(false, "[{n: a}]", "", "{{n}}")
        .replace("flotilla.dev/v1alpha1", "argoproj.io/v1alpha1");
    assert_eq!(names(&render(&argo).unwrap()), ["a"]);
    // deletionOrder: Reverse reverses RollingSync steps: without them it is refused by name.
    let reverse = argo.replace(
        "  goTemplate: false\n",
        "  goTemplate: false\n  strategy: {type: AllAtOnce, deletionOrder: Reverse}\n",
    );
    let err = render(&reverse).unwrap_err();
    assert!(
        err.to_string().contains(
            "spec.strategy.deletionOrder: Reverse needs strategy.type: RollingSync with at least one rollingSync step"
        ),
        "{err}"
    );
    let err = parse_application_set(
        "x.yaml",
        &argo.replace(
            "  goTemplate: false\n",
            "  goTemplate: false\n  strategy: {type: RollingSync, deletionOrder: Last}\n",
        ),
    )
    .unwrap_err();
    assert!(err.to_string().contains("deletionOrder"), "{err}");
    let preserved = argo.replace(
        "  goTemplate: false\n",
        "  goTemplate: false\n  preservedFields: {labels: [env]}\n",
    );
    let parsed = parse_application_set("x.yaml", &preserved).unwrap();
    assert_eq!(parsed.spec.preserved_fields.unwrap().labels, ["env"]);
    let err = parse_application_set(
        "x.yaml",
        &argo.replace("argoproj.io/v1alpha1", "argoproj.io/v1"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("x.yaml: apiVersion \"argoproj.io/v1\""),
        "{err}"
    );
}

#[test]
fn an_empty_file_is_an_error_naming_it() {
    for text in ["", "# only a comment\n---\n"] {
        let err = parse_application_set("apps/empty.yaml", text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "apps/empty.yaml: the file is empty (no ApplicationSet in it)"
        );
    }
}

#[test]
fn helm_kustomize_and_chart_sources_are_templated_and_kept() {
    let yaml = appset(false, "[{n: eu}]", "", "{{n}}").replace(
        "source: {repoURL: r, path: base}",
        "source: {repoURL: r, path: base, chart: '', \
         helm: {releaseName: '{{n}}-db', valueFiles: ['values-{{n}}.yaml'], valuesObject: {region: '{{n}}'}, \
         parameters: [{name: tier, value: '{{n}}', forceString: true}]}, \
         kustomize: {namePrefix: '{{n}}-', images: ['api:{{n}}'], replicas: [{name: api, count: 2}]}}",
    );
    let apps = render(&yaml).unwrap();
    let source = serde_json::to_value(&apps[0].spec.source).unwrap();
    assert_eq!(
        source,
        serde_json::json!({
            "repoURL": "r",
            "path": "base",
            "helm": {
                "releaseName": "eu-db",
                "valueFiles": ["values-eu.yaml"],
                "valuesObject": {"region": "eu"},
                "parameters": [{"name": "tier", "value": "eu", "forceString": true}],
            },
            "kustomize": {
                "namePrefix": "eu-",
                "images": ["api:eu"],
                "replicas": [{"name": "api", "count": 2}],
            },
        })
    );
}

#[test]
fn a_template_names_a_plugin_with_parameters_per_application() {
    let yaml = appset(true, "[{n: a, color: red}, {n: b, color: blue}]", "", "app-{{ .n }}")
        .replace(
            "source: {repoURL: r, path: base}",
            "source: {repoURL: r, path: base, plugin: {name: greeter-v1, \
             env: [{name: APP, value: '{{ .n }}'}], parameters: [{name: color, string: '{{ .color }}'}]}}",
        );
    let apps = render(&yaml).unwrap();
    let plugins: Vec<_> = apps
        .iter()
        .map(|app| {
            let plugin = app.spec.source.plugin.as_deref().expect("source.plugin");
            (
                plugin.name.clone(),
                plugin.env[0].value.clone(),
                plugin.parameters[0].string.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        plugins,
        [
            ("greeter-v1".to_owned(), "a".to_owned(), "red".to_owned()),
            ("greeter-v1".to_owned(), "b".to_owned(), "blue".to_owned()),
        ]
    );
}

//! End-to-end tests of the renderer: both syntaxes, functions, missing keys, errors and limits.

use serde_json::{Value, json};

use super::*;

fn params() -> Params {
    let value = json!({
        "name": "Guestbook",
        "env": "prod",
        "path": {"basename": "app", "segments": ["apps", "team-a", "app"], "path": "apps/team-a/app"},
        "cluster": {"name": "in-cluster", "server": "https://kubernetes.default.svc"},
        "replicas": 3,
        "ratio": 2.5,
        "enabled": true,
        "empty": "",
        "labels": {"b": "2", "a": "1"},
        "items": ["x", "y"],
        "nested": {"deep": {"key": "v"}},
        "evil": "{{ .name }}",
        "yaml": "a: b\nc: [d]",
        "encoded": "aGVsbG8=",
        "big": (0..100).collect::<Vec<_>>(),
    });
    serde_json::from_value(value).unwrap()
}

fn go(missing_key_error: bool) -> Renderer {
    Renderer::new(TemplateMode::Go { missing_key_error })
}

fn render_go(text: &str) -> Result<String, TemplateError> {
    go(false).render_str("metadata.name", text, &params())
}

fn assert_renders(cases: &[(&str, &str)]) {
    for (text, expected) in cases {
        match render_go(text) {
            Ok(rendered) => assert_eq!(rendered, *expected, "{text}"),
            Err(error) => panic!("{text}: {error}"),
        }
    }
}

#[test]
fn go_template_constructs() {
    assert_renders(&[
        ("plain text", "plain text"),
        ("{% raw %} {# x #} {{ .env }}", "{% raw %} {# x #} prod"),
        ("a{ {{ .env }} }", "a{ prod }"),
        ("{{.path.basename}}", "app"),
        ("{{ $.env }}/{{ $.path.basename }}", "prod/app"),
        ("x  {{- .env -}}  \n y", "xprody"),
        ("{{/* a comment */}}z{{- /* trimmed */ -}}  !", "z!"),
        ("{{ .name | lower }}", "guestbook"),
        ("{{ .name | lower | printf \"%s!\" }}", "guestbook!"),
        ("{{ upper (lower .name) }}", "GUESTBOOK"),
        ("{{ (dict \"a\" .nested).a.deep.key }}", "v"),
        ("{{ \"a\\tb\\u00e9\" }}|{{ `raw\\n` }}", "a\tbé|raw\\n"),
        ("{{ 42 }} {{ 1.5 }} {{ -7 }} {{ true }}", "42 1.5 -7 true"),
        (
            "{{ if eq .env \"dev\" }}d{{ else if eq .env \"prod\" }}p{{ else }}o{{ end }}",
            "p",
        ),
        ("{{ if .empty }}y{{ else }}n{{ end }}", "n"),
        (
            "{{ range .path.segments }}[{{ . }}|{{ $.env }}]{{ end }}",
            "[apps|prod][team-a|prod][app|prod]",
        ),
        (
            "{{ range $i, $v := .items }}{{ $i }}={{ $v }};{{ end }}",
            "0=x;1=y;",
        ),
        (
            "{{ range $k, $v := .labels }}{{ $k }}={{ $v }},{{ end }}",
            "a=1,b=2,",
        ),
        ("{{ range $v := .items }}{{ $v }}{{ . }}{{ end }}", "xxyy"),
        ("{{ range .labels }}{{ . }}{{ end }}", "12"),
        (
            "{{ range .missing }}x{{ else }}empty {{ .env }}{{ end }}",
            "empty prod",
        ),
        (
            "{{ range .items }}{{ range $.path.segments }}{{ . }}{{ end }};{{ end }}",
            "appsteam-aapp;appsteam-aapp;",
        ),
        ("{{ with .nested.deep }}{{ .key }}{{ end }}", "v"),
        (
            "{{ with .missing }}x{{ else }}none {{ .env }}{{ end }}",
            "none prod",
        ),
        ("{{ with $d := .nested.deep }}{{ $d.key }}{{ end }}", "v"),
        ("{{ $x := .env }}{{ $x }}-{{ $x | upper }}", "prod-PROD"),
        ("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}", "2"),
        (
            "{{ if $c := .cluster.name }}{{ $c }}{{ end }}",
            "in-cluster",
        ),
        (
            "{{ and .enabled .env }} {{ or .empty \"fallback\" }} {{ not .enabled }}",
            "prod fallback false",
        ),
        (
            "{{ .replicas }} {{ .ratio }} {{ .enabled }} {{ .items }} {{ .labels }}",
            "3 2.5 true [x y] map[a:1 b:2]",
        ),
        ("{{ .env }}\n", "prod\n"),
        ("{{ \"}}{%{{\" }}", "}}{%{{"),
    ]);
}

#[test]
fn variables_assigned_inside_range_are_seen_after_it() {
    assert_renders(&[
        (
            "{{ $all := list }}{{ range .items }}{{ $all = append $all (upper .) }}{{ end }}{{ $all }}",
            "[X Y]",
        ),
        (
            "{{ $n := 0 }}{{ range .path.segments }}{{ $n = add $n 1 }}{{ end }}{{ $n }}",
            "3",
        ),
        (
            "{{ $x := .env }}{{ $x := printf \"%s!\" $x }}{{ $x }}",
            "prod!",
        ),
        (
            "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}",
            "2",
        ),
        (
            "{{ $m := dict }}{{ range $k, $v := .labels }}{{ $_ := set $m $v $k }}{{ end }}{{ $m }}",
            "map[1:a 2:b]",
        ),
    ]);
}

#[test]
fn define_template_block_break_and_continue() {
    assert_renders(&[
        (
            "{{ define \"greet\" }}hi {{ . }}{{ end }}{{ template \"greet\" .env }}!",
            "hi prod!",
        ),
        (
            "{{ template \"later\" .path }}{{ define \"later\" }}{{ .basename }}/{{ $.basename }}{{ end }}",
            "app/app",
        ),
        (
            "{{ define \"none\" }}[{{ . }}]{{ end }}{{ template \"none\" }}",
            "[<no value>]",
        ),
        (
            "{{ block \"name\" .name }}<{{ lower . }}>{{ end }}|{{ template \"name\" \"X\" }}",
            "<guestbook>|<x>",
        ),
        (
            "{{ define \"item\" }}{{ .k }}={{ .v }}{{ end }}{{ range $k, $v := .labels }}{{ template \"item\" (dict \"k\" $k \"v\" $v) }};{{ end }}",
            "a=1;b=2;",
        ),
        (
            "{{ define \"outer\" }}({{ template \"inner\" . }}){{ end }}{{ define \"inner\" }}{{ upper . }}{{ end }}{{ template \"outer\" .env }}",
            "(PROD)",
        ),
        (
            "{{ range .path.segments }}{{ if eq . \"team-a\" }}{{ break }}{{ end }}{{ . }};{{ end }}",
            "apps;",
        ),
        (
            "{{ range .path.segments }}{{ if eq . \"team-a\" }}{{ continue }}{{ end }}{{ . }};{{ end }}",
            "apps;app;",
        ),
        (
            "{{ range $i, $s := .path.segments }}{{ with $s }}{{ if eq $i 1 }}{{ break }}{{ end }}{{ . }}{{ end }}{{ end }}",
            "apps",
        ),
    ]);
    // Each field has its own templates, even when rendered together.
    let rendered = go(false)
        .render_value(
            &json!({
                "a": "{{ define \"t\" }}A{{ . }}{{ end }}{{ template \"t\" .env }}",
                "b": "{{ define \"t\" }}B{{ . }}{{ end }}{{ template \"t\" .env }}",
                "c": "{{ .name }}",
            }),
            &params(),
        )
        .unwrap();
    assert_eq!(
        rendered,
        json!({"a": "Aprod", "b": "Bprod", "c": "Guestbook"})
    );
}

#[test]
fn sprig_and_builtin_functions() {
    assert_renders(&[
        (
            "{{ .missing | default \"y\" }} {{ default \"y\" .env }}",
            "y prod",
        ),
        (
            "{{ default \"d\" 0 }} {{ default \"d\" false }} {{ default \"d\" (list) }} {{ default \"d\" (dict) }}",
            "d d d d",
        ),
        (
            "{{ trunc 3 .name }} {{ trunc -4 .name }} {{ trunc 99 .env }}",
            "Gue book prod",
        ),
        (
            "{{ replace \"-\" \"_\" .cluster.name }} {{ .cluster.name | replace \"-\" \".\" }}",
            "in_cluster in.cluster",
        ),
        (
            "{{ toJson .labels }} {{ toJson .items }} {{ toJson .replicas }}",
            r#"{"a":"1","b":"2"} ["x","y"] 3"#,
        ),
        ("{{ toYaml .nested }}", "deep:\n  key: v"),
        ("{{ quote .env }} {{ .replicas | quote }}", r#""prod" "3""#),
        (
            "{{ normalize \"My_App.EU\" }} {{ slugify \"Hello, World!\" }}",
            "my-app.eu hello-world",
        ),
        (
            "{{ dig \"deep\" \"key\" \"def\" .nested }} {{ dig \"deep\" \"nope\" \"def\" .nested }}",
            "v def",
        ),
        (
            "{{ join \",\" (splitList \"/\" .path.path) }} {{ .items | join \"+\" }}",
            "apps,team-a,app x+y",
        ),
        ("{{ trim \"  x \" }}", "x"),
        (
            "{{ hasKey .labels \"a\" }} {{ hasKey .labels \"z\" }}",
            "true false",
        ),
        (
            "{{ ternary \"y\" \"n\" .enabled }} {{ .empty | ternary \"y\" \"n\" }}",
            "y n",
        ),
        (
            "{{ index .path.segments 1 }} {{ index .labels \"b\" }} {{ index .labels \"zz\" }}",
            "team-a 2 <no value>",
        ),
        (
            "{{ printf \"%s-%s\" .env .path.basename }} {{ printf \"%d %v %q\" .replicas .items .env }}",
            "prod-app 3 [x y] \"prod\"",
        ),
        (
            "{{ eq .replicas 3 }} {{ ne .env \"dev\" }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt .ratio 2 }} {{ ge \"b\" \"a\" }}",
            "true true true true true true",
        ),
        (
            "{{ eq .env \"dev\" \"prod\" }} {{ eq .env \"dev\" }}",
            "true false",
        ),
        (
            "{{ len .items }} {{ len .name }} {{ len .labels }}",
            "2 9 2",
        ),
        (
            "{{ contains \"book\" .name }} {{ hasPrefix \"Gu\" .name }} {{ hasSuffix \"x\" .name }}",
            "true true false",
        ),
        (
            "{{ title \"hello world\" }} {{ toString .replicas }}",
            "Hello World 3",
        ),
        (
            "{{ list 1 \"a\" }} {{ dict \"k\" \"v\" }} {{ empty .empty }} {{ empty .env }}",
            "[1 a] map[k:v] true false",
        ),
        (
            "{{ b64enc \"hello\" }} {{ b64dec .encoded }}",
            "aGVsbG8= hello",
        ),
    ]);
}

#[test]
fn missing_keys_print_no_value_unless_strict() {
    assert_renders(&[
        ("{{ .missing }}", "<no value>"),
        ("{{ .missing.deeper.still }}", "<no value>"),
        ("{{ if .missing.x }}y{{ else }}n{{ end }}", "n"),
        ("{{ lower .missing }}", ""),
    ]);
    let strict = go(true);
    assert_eq!(
        strict
            .render_str(
                "metadata.name",
                "{{ .env }}-{{ .nested.deep.key }}",
                &params()
            )
            .unwrap(),
        "prod-v"
    );
    // Functions that look keys up themselves see an absent key, as in Go.
    for (text, expected) in [
        ("{{ index .labels \"zzz\" }}", "<no value>"),
        ("{{ hasKey .labels \"zzz\" }}", "false"),
        ("{{ dig \"nested\" \"nope\" \"fallback\" . }}", "fallback"),
        (
            "{{ range $k, $v := .labels }}{{ $k }}={{ $v }};{{ end }}",
            "a=1;b=2;",
        ),
        (
            "{{ .labels }} {{ toJson .nested }}",
            "map[a:1 b:2] {\"deep\":{\"key\":\"v\"}}",
        ),
    ] {
        assert_eq!(
            strict.render_str("metadata.name", text, &params()).unwrap(),
            expected,
            "{text}"
        );
    }
    let cases = [
        (
            "{{ .missing }}",
            r#"map has no entry for key "missing" in {{ .missing }}"#,
        ),
        (
            "{{ .nested.nope.deeper }}",
            r#"map has no entry for key "nope" in {{ .nested.nope.deeper }}"#,
        ),
        (
            "{{ lower .missing }}",
            r#"map has no entry for key "missing" in {{ lower .missing }}"#,
        ),
        (
            "{{ .missing | default \"x\" }}",
            r#"map has no entry for key "missing""#,
        ),
        (
            "{{ if .missing }}y{{ end }}",
            r#"map has no entry for key "missing""#,
        ),
        (
            "{{ range .items }}{{ .x }}{{ end }}",
            "map has no entry for key",
        ),
    ];
    for (text, expected) in cases {
        let error = strict
            .render_str("metadata.name", text, &params())
            .unwrap_err();
        assert_eq!(error.field, "metadata.name");
        assert!(error.message.contains(expected), "{text}: {error}");
    }
}

#[test]
fn errors_name_the_field_and_the_construct() {
    let cases = [
        (
            json!({"spec": {"source": {"path": "{{ .x | md5sum }}"}}}),
            "field spec.source.path: unsupported function \"md5sum\" in {{ .x | md5sum }}",
        ),
        (
            json!({"spec": {"foo": ["a", "b", "{{ template \"x\" }}"]}}),
            "field spec.foo[2]: no such template \"x\"",
        ),
        (
            json!({"metadata": {"labels": {"env": "{{ if .env }}"}}}),
            "field metadata.labels.env: missing {{ end }} for {{ if .env }}",
        ),
        (
            json!({"metadata": {"labels": {"{{ bad }}": "x"}}}),
            "field metadata.labels.{{ bad }}: unsupported function \"bad\" in {{ bad }}",
        ),
        (
            json!({"metadata": {"name": "{{ index .items 5 }}"}}),
            "field metadata.name: index: index out of range: 5 (length 2) in {{ index .items 5 }}",
        ),
        (
            json!({"metadata": {"name": "a{{ upper .replicas }}"}}),
            "field metadata.name: upper: expected a string argument, got number 3 in {{ upper .replicas }}",
        ),
    ];
    for (template, expected) in cases {
        let error = go(false).render_value(&template, &params()).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn runaway_templates_run_out_of_fuel() {
    let text = "{{ range .big }}{{ range $.big }}{{ range $.big }}x{{ end }}{{ end }}{{ end }}";
    let error = render_go(text).unwrap_err();
    assert_eq!(error.field, "metadata.name");
    assert!(error.message.contains("out of fuel"), "{error}");
}

#[test]
fn go_mode_renders_values_keys_and_keeps_other_scalars() {
    let template = json!({
        "metadata": {"name": "{{ .name | lower }}", "labels": {"{{ .env }}": "{{ .cluster.name }}", "fixed": "x"}},
        "spec": {"replicas": 3, "auto": true, "none": null, "list": ["{{ .env }}", 1], "config": "{{ .yaml }}", "evil": "{{ .evil }}"},
    });
    let rendered = go(false).render_value(&template, &params()).unwrap();
    assert_eq!(
        rendered,
        json!({
            "metadata": {"name": "guestbook", "labels": {"prod": "in-cluster", "fixed": "x"}},
            "spec": {"replicas": 3, "auto": true, "none": null, "list": ["prod", 1], "config": "a: b\nc: [d]", "evil": "{{ .name }}"},
        })
    );
    let colliding = json!({"labels": {"{{ .env }}": "a", "prod": "b"}});
    let error = go(false).render_value(&colliding, &params()).unwrap_err();
    assert!(error.message.contains("collides"), "{error}");
}

#[test]
fn fast_mode_renders_flat_params_field_by_field() {
    let flat: Params = [
        ("name".to_string(), json!("guestbook")),
        ("path.basename".to_string(), json!("app")),
        ("config".to_string(), json!("a: b\nc")),
        ("evil".to_string(), json!("{{name}}")),
    ]
    .into();
    let template = json!({
        "metadata": {"name": "{{name}}-{{ path.basename }}", "labels": {"{{name}}": "{{unknown}}"}},
        "spec": {"replicas": 2, "config": "{{config}}", "evil": "{{evil}}", "go": "{{ .name }}"},
    });
    let rendered = Renderer::new(TemplateMode::Fast)
        .render_value(&template, &flat)
        .unwrap();
    assert_eq!(
        rendered,
        json!({
            "metadata": {"name": "guestbook-app", "labels": {"guestbook": "{{unknown}}"}},
            "spec": {"replicas": 2, "config": "a: b\nc", "evil": "{{name}}", "go": "{{ .name }}"},
        })
    );
}

#[test]
fn a_prepared_template_renders_many_parameter_sets() {
    let prepared = go(false)
        .prepare(&json!({"name": "{{ .env }}-{{ .n }}", "fixed": "{ not a template }"}))
        .unwrap();
    for n in 0..3 {
        let mut params = params();
        params.insert("n".into(), json!(n));
        let rendered: Value = prepared.render(&params).unwrap();
        assert_eq!(
            rendered,
            json!({"name": format!("prod-{n}"), "fixed": "{ not a template }"})
        );
    }
}

#[test]
fn template_mode_from_options() {
    let options = |list: &[&str]| list.iter().map(ToString::to_string).collect::<Vec<_>>();
    let cases = [
        (false, options(&[]), TemplateMode::Fast),
        (
            true,
            options(&[]),
            TemplateMode::Go {
                missing_key_error: false,
            },
        ),
        (
            true,
            options(&["missingkey=error"]),
            TemplateMode::Go {
                missing_key_error: true,
            },
        ),
        (
            true,
            options(&["missingkey=zero"]),
            TemplateMode::Go {
                missing_key_error: false,
            },
        ),
        (
            true,
            options(&["missingkey=error", "missingkey=default"]),
            TemplateMode::Go {
                missing_key_error: false,
            },
        ),
        (
            true,
            options(&["missingkey=invalid"]),
            TemplateMode::Go {
                missing_key_error: false,
            },
        ),
    ];
    for (go_template, options, expected) in cases {
        assert_eq!(
            TemplateMode::from_options(go_template, &options).unwrap(),
            expected,
            "{options:?}"
        );
    }
    let error = TemplateMode::from_options(true, &options(&["missingkey=panic"])).unwrap_err();
    assert!(error.message.contains("\"missingkey=panic\""), "{error}");
}

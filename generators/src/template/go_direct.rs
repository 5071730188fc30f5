//! Direct rendering of simple goTemplates, without minijinja: a field whose every action is a
//! parameter path (`.a.b`, `$.a`), a string literal, or a call of `lower`, `upper`, `quote`,
//! `trunc`, `default` or `index` on such values, is compiled once into a small expression tree
//! and evaluated straight on the parameter set. Anything else is not compiled, and whatever an
//! evaluation meets that it does not model (a missing key, a number, a list, a nil printed) makes
//! it give up: the caller then renders with the full engine, so results and errors are always
//! the engine's own. Each function is the same Rust function sprig's registration calls.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::go_format::go_quote;
use super::go_lexer::{Piece, Token, lex};
use super::sprig::truncate;
use crate::params::Params;

/// One templated string, compiled.
#[derive(Debug)]
pub(crate) struct DirectTemplate {
    segments: Vec<Segment>,
}

#[derive(Debug)]
enum Segment {
    Text(String),
    Action(Expr),
}

#[derive(Debug)]
enum Expr {
    /// `.` or `$` at the top level: the parameter set.
    Root,
    /// A field chain on a value: `.a.b` is `Field(Root, [a, b])`.
    Field(Box<Expr>, Vec<String>),
    Str(String),
    Lower(Box<Expr>),
    Upper(Box<Expr>),
    Quote(Box<Expr>),
    Trunc(i64, Box<Expr>),
    /// `default fallback given`.
    Default(Box<Expr>, Box<Expr>),
    /// `index map key…` with string keys.
    Index(Box<Expr>, Vec<String>),
}

/// What an expression evaluates to, as far as the direct path models values.
enum Val<'p> {
    Str(Cow<'p, str>),
    Root(&'p Params),
    Map(&'p Map<String, Value>),
    /// Go's nil: what `index` gives for an absent key.
    Nil,
}

impl DirectTemplate {
    /// Compiles `text` (already accepted by the engine's translation), or `None` when it is not
    /// simple enough.
    pub(crate) fn compile(text: &str) -> Option<Self> {
        let segments = lex(text)
            .ok()?
            .into_iter()
            .map(|piece| match piece {
                Piece::Text(text) => Some(Segment::Text(text)),
                Piece::Action { tokens, .. } => pipeline(&tokens).map(Segment::Action),
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self { segments })
    }

    /// The rendered text, or `None` when the full engine must render it.
    pub(crate) fn render(&self, params: &Params) -> Option<String> {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Action(expr) => match eval(expr, params)? {
                    Val::Str(text) => out.push_str(&text),
                    Val::Root(_) | Val::Map(_) | Val::Nil => return None,
                },
            }
        }
        Some(out)
    }
}

/// `command (| command)*`, a piped value being the last argument of the next command.
fn pipeline(tokens: &[Token]) -> Option<Expr> {
    let mut commands = tokens.split(|token| *token == Token::Pipe);
    let mut value = command(commands.next()?, None)?;
    for tokens in commands {
        value = command(tokens, Some(value))?;
    }
    Some(value)
}

fn command(tokens: &[Token], piped: Option<Expr>) -> Option<Expr> {
    match tokens {
        [Token::Ident(name), args @ ..] => {
            let mut args = args.iter().map(operand).collect::<Option<Vec<_>>>()?;
            args.extend(piped.map(Arg::Expr));
            call(name, args)
        }
        [token] if piped.is_none() => match operand(token)? {
            Arg::Expr(expr) => Some(expr),
            Arg::Int(_) => None,
        },
        _ => None,
    }
}

/// An argument as written: integer literals only count for `trunc`.
enum Arg {
    Expr(Expr),
    Int(i64),
}

fn operand(token: &Token) -> Option<Arg> {
    let root_field = |chain: &[String]| {
        if chain.is_empty() {
            Expr::Root
        } else {
            Expr::Field(Box::new(Expr::Root), chain.to_vec())
        }
    };
    Some(Arg::Expr(match token {
        Token::Dot => Expr::Root,
        Token::Field {
            chain,
            attached: false,
        } => root_field(chain),
        Token::Variable { name, chain } if name.is_empty() => root_field(chain),
        Token::Str(text) => Expr::Str(text.clone()),
        Token::Int(count) => return Some(Arg::Int(*count)),
        _ => return None,
    }))
}

fn call(name: &str, mut args: Vec<Arg>) -> Option<Expr> {
    let count = match (name, args.first()) {
        ("trunc", Some(&Arg::Int(count))) => Some(count),
        _ => None,
    };
    if count.is_some() {
        args.remove(0);
    }
    let mut args = args
        .into_iter()
        .map(|arg| match arg {
            Arg::Expr(expr) => Some(Box::new(expr)),
            Arg::Int(_) => None,
        })
        .collect::<Option<Vec<_>>>()?
        .into_iter();
    Some(match (name, args.len()) {
        ("lower", 1) => Expr::Lower(args.next()?),
        ("upper", 1) => Expr::Upper(args.next()?),
        ("quote", 1) => Expr::Quote(args.next()?),
        ("trunc", 1) => Expr::Trunc(count?, args.next()?),
        ("default", 2) => Expr::Default(args.next()?, args.next()?),
        ("index", 2..) => {
            let base = args.next()?;
            let keys = args
                .map(|key| match *key {
                    Expr::Str(key) => Some(key),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Expr::Index(base, keys)
        }
        _ => return None,
    })
}

fn eval<'p>(expr: &'p Expr, params: &'p Params) -> Option<Val<'p>> {
    Some(match expr {
        Expr::Root => Val::Root(params),
        Expr::Field(base, chain) => {
            let mut value = eval(base, params)?;
            for key in chain {
                value = lookup(&value, key)?.and_then(json)?;
            }
            value
        }
        Expr::Str(text) => Val::Str(Cow::Borrowed(text)),
        Expr::Lower(text) => Val::Str(Cow::Owned(string_arg(eval(text, params)?)?.to_lowercase())),
        Expr::Upper(text) => Val::Str(Cow::Owned(string_arg(eval(text, params)?)?.to_uppercase())),
        Expr::Quote(text) => match eval(text, params)? {
            Val::Str(text) => Val::Str(Cow::Owned(go_quote(&text))),
            _ => return None,
        },
        Expr::Trunc(count, text) => Val::Str(Cow::Owned(truncate(
            *count,
            &string_arg(eval(text, params)?)?,
        ))),
        Expr::Default(fallback, given) => match eval(given, params)? {
            Val::Str(text) if !text.is_empty() => Val::Str(text),
            Val::Str(_) | Val::Nil => eval(fallback, params)?,
            Val::Root(_) | Val::Map(_) => return None,
        },
        Expr::Index(base, keys) => {
            let mut value = eval(base, params)?;
            for key in keys {
                value = match lookup(&value, key)? {
                    Some(found) => json(found)?,
                    None => Val::Nil,
                };
            }
            value
        }
    })
}

/// `key` of a map value: `Some(None)` when the map has no such key, `None` for anything not a map.
fn lookup<'p>(value: &Val<'p>, key: &str) -> Option<Option<&'p Value>> {
    match value {
        Val::Root(params) => Some(params.get(key)),
        Val::Map(map) => Some(map.get(key)),
        Val::Str(_) | Val::Nil => None,
    }
}

/// A parameter value the direct path models: strings and maps.
fn json(value: &Value) -> Option<Val<'_>> {
    match value {
        Value::String(text) => Some(Val::Str(Cow::Borrowed(text))),
        Value::Object(map) => Some(Val::Map(map)),
        _ => None,
    }
}

/// sprig's string argument: a string, nil as `""`.
fn string_arg(value: Val<'_>) -> Option<Cow<'_, str>> {
    match value {
        Val::Str(text) => Some(text),
        Val::Nil => Some(Cow::Borrowed("")),
        Val::Root(_) | Val::Map(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::go_engine::GoEngine;
    use super::*;

    /// The direct path compiles a template and renders it with these parameter sets.
    const ALL: Option<&[usize]> = Some(&[0, 1, 2]);
    /// Set 1 has no `env` label.
    const SOME: Option<&[usize]> = Some(&[0, 2]);
    const NONE: Option<&[usize]> = Some(&[]);
    const NOT_COMPILED: Option<&[usize]> = None;

    /// Templates, and with which parameter sets the direct path renders them.
    const TEMPLATES: &[(&str, Option<&[usize]>)] = &[
        // The render benchmark's fields.
        ("{{ .service }}-{{ .nameNormalized }}", ALL),
        ("{{ .team | lower }}", ALL),
        (
            "{{ index .metadata.labels \"env\" | default \"dev\" }}",
            ALL,
        ),
        ("{{ .port | quote }}", ALL),
        ("{{ .team | lower | trunc 20 }}", ALL),
        (
            "services/{{ .service }}/{{ index .metadata.labels \"env\" }}",
            SOME,
        ),
        ("{{ .server }}", ALL),
        // Strings: case, quoting, truncation, Unicode, escapes.
        ("{{ upper .unicode }}|{{ lower .unicode }}", ALL),
        ("{{ quote .quotey }} {{ .quotey | quote }}", ALL),
        (
            "{{ trunc 3 .unicode }}|{{ trunc -3 .unicode }}|{{ trunc 0 .unicode }}",
            ALL,
        ),
        ("{{ trunc 99 .service }}|{{ .unicode | trunc -99 }}", ALL),
        ("{{ \"lit\" | upper }}{{ \"x\" }}", ALL),
        ("literal { brace {% x %} {# y #} }}", ALL),
        ("{{- .service -}} x {{/* c */}} {{ .team -}}\n  end", ALL),
        ("", ALL),
        // default, index, roots.
        (
            "{{ default \"d\" .empty }}|{{ .empty | default .service }}",
            ALL,
        ),
        (
            "{{ .team | default \"d\" }}|{{ default \"d\" .quotey }}",
            ALL,
        ),
        (
            "{{ index . \"service\" }}|{{ index $ \"nested\" \"a\" \"b\" }}|{{ $.nested.a.b }}",
            ALL,
        ),
        (
            "{{ index .metadata.labels \"missing\" | default \"none\" }}",
            ALL,
        ),
        ("{{ index .metadata.labels \"missing\" | lower }}", ALL),
        ("{{ index .metadata.labels \"missing\" }}", NONE),
        ("{{ index .nested \"a\" \"x\" \"y\" }}", NONE),
        ("{{ index .service \"x\" }}", NONE),
        ("{{ .nested | default \"d\" }}", NONE),
        // What the direct path gives up on when rendering.
        ("{{ .missing }}", NONE),
        ("{{ .metadata.missing.x }}", NONE),
        (
            "{{ .num }} {{ .flag }} {{ .list }} {{ .nested }} {{ .nullv }}",
            NONE,
        ),
        ("{{ .num | quote }}|{{ .flag | lower }}", NONE),
        ("{{ .service.x }}", NONE),
        ("{{ . }}{{ $ }}", NONE),
        ("{{ default .nested .empty }}", NONE),
        // What it does not compile.
        ("{{ if .flag }}y{{ end }}", NOT_COMPILED),
        ("{{ printf \"%s\" .service }}", NOT_COMPILED),
        ("{{ lower .service .team }}", NOT_COMPILED),
        ("{{ trunc .num .service }}", NOT_COMPILED),
        ("{{ 3 }}", NOT_COMPILED),
        ("{{ index .list 1 }}", NOT_COMPILED),
        ("{{ index .metadata .service }}", NOT_COMPILED),
        ("{{ default 5 .missing }}", NOT_COMPILED),
        ("{{ $x := .service }}{{ $x }}", NOT_COMPILED),
        ("{{ (index .metadata.labels \"env\") }}", NOT_COMPILED),
        ("{{ nil }}", NOT_COMPILED),
    ];

    fn parameter_sets() -> Vec<Params> {
        let cluster = |labels: serde_json::Value, team: &str| -> Params {
            [
                ("service".to_string(), json!("svc-001")),
                ("nameNormalized".to_string(), json!("cluster-001")),
                ("server".to_string(), json!("https://c1.k8s.example.com")),
                ("team".to_string(), json!(team)),
                ("port".to_string(), json!("8001")),
                (
                    "metadata".to_string(),
                    json!({"labels": labels, "annotations": {}}),
                ),
                ("unicode".to_string(), json!("École İstanbul straße ǅ")),
                ("quotey".to_string(), json!("a\"b\\c\n\t\u{1b}é\u{7f}")),
                ("empty".to_string(), json!("")),
                ("num".to_string(), json!(3)),
                ("flag".to_string(), json!(true)),
                ("list".to_string(), json!([1, "a"])),
                ("nested".to_string(), json!({"a": {"b": "deep"}})),
                ("nullv".to_string(), json!(null)),
            ]
            .into()
        };
        vec![
            cluster(json!({"env": "staging", "fleet": "yes"}), "Team3"),
            cluster(json!({"fleet": "yes"}), ""),
            cluster(json!({"env": ""}), "ALL CAPS Ü"),
        ]
    }

    fn engine_render(text: &str, params: &Params, strict: bool) -> Result<String, String> {
        let mut engine = GoEngine::new(strict);
        engine.add("f", text).map_err(|error| error.to_string())?;
        engine.finish().map_err(|error| error.to_string())?;
        engine
            .render_with_minijinja(params)
            .map(|mut fields| fields.remove(0))
            .map_err(|error| error.to_string())
    }

    #[test]
    fn renders_exactly_what_the_engine_renders_or_gives_up() {
        // Every case through both paths: where the direct path renders, the engine renders the
        // same bytes; where it gives up, the engine's result (or error) is what callers get.
        for (text, expected) in TEMPLATES {
            let direct = DirectTemplate::compile(text);
            assert_eq!(direct.is_some(), expected.is_some(), "{text:?}");
            for (set, params) in parameter_sets().iter().enumerate() {
                for strict in [true, false] {
                    let engine = engine_render(text, params, strict);
                    let output = direct.as_ref().and_then(|d| d.render(params));
                    let context = format!("{text:?}, set {set}, strict {strict}");
                    assert_eq!(
                        output.is_some(),
                        expected.is_some_and(|sets| sets.contains(&set)),
                        "{context}"
                    );
                    if let Some(output) = output {
                        assert_eq!(Ok(&output), engine.as_ref(), "{context}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_benchmark_template_renders_directly_and_a_missing_key_falls_back() {
        let params = &parameter_sets()[0];
        for (text, _) in &TEMPLATES[..7] {
            let direct = DirectTemplate::compile(text).and_then(|d| d.render(params));
            assert!(direct.is_some(), "{text:?}");
        }
        let mut engine = GoEngine::new(true);
        engine.add("metadata.name", "{{ .service }}").unwrap();
        engine
            .add("spec.project", "{{ .missing | lower }}")
            .unwrap();
        engine.finish().unwrap();
        let error = engine.render_all(params).unwrap_err();
        assert_eq!(error.field, "spec.project");
        assert_eq!(
            error.message,
            "map has no entry for key \"missing\" in {{ .missing | lower }}"
        );
    }
}

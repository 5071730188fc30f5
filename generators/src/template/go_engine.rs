//! The minijinja environment that runs translated goTemplates: functions, Go-style printing
//! (`<no value>` for missing keys), undefined-value behaviour, a fuel limit per render, one render
//! per document (all fields at once, field by field as a fallback), and the
//! translation of minijinja's errors back into Go terms. A document whose fields are all simple
//! is rendered without minijinja when it can be ([`DirectTemplate`]).

use std::sync::LazyLock;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};

use super::TemplateError;
use super::go_direct::DirectTemplate;
use super::go_format::{NO_VALUE, go_string};
use super::go_params::ParamMap;
use super::go_syntax::{Translation, go_spelling, translate};
use super::sprig;
use crate::params::Params;

/// Instructions one render may execute before it is stopped.
pub(crate) const FUEL: u64 = 200_000;

/// Separates the fields of the combined document template; it cannot come from a template's own
/// text in practice, and a rendered value containing it is detected and handled.
const SEPARATOR: &str = "\u{1}\u{2}flotilla-field\u{2}\u{1}";

/// Name of the template that renders every field at once.
const COMBINED: &str = "all";

/// What every engine starts from, built once: Go's printing, no escaping, the syntax and the fuel
/// limit. Each engine adds only the functions its templates call ([`sprig::add_used`]).
static PROTOTYPE: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::empty();
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(FUEL));
    if let Ok(syntax) = SyntaxConfig::builder().keep_trailing_newline(true).build() {
        env.set_syntax(syntax);
    }
    env.set_formatter(|out, _state, value| {
        let written = match value.kind() {
            ValueKind::Undefined | ValueKind::None => out.write_str(NO_VALUE),
            ValueKind::String => out.write_str(value.as_str().unwrap_or_default()),
            _ => out.write_str(&go_string(value)),
        };
        written.map_err(|_| minijinja::Error::from(ErrorKind::WriteFailure))
    });
    env
});

/// One templated string of the document.
struct FieldTemplate {
    /// Template name in the environment (its id).
    name: String,
    /// Path of the field, for errors.
    field: String,
    translation: Translation,
}

/// An environment holding every translated string of one prepared template. Besides one
/// template per field it holds a combined template rendering all of them in one pass,
/// separated by [`SEPARATOR`]: one minijinja render per document instead of one per field. Should
/// the combined render fail (or a value contain the separator), every field is rendered on its own,
/// so results and errors are exactly those of rendering field by field.
pub(crate) struct GoEngine {
    env: Environment<'static>,
    templates: Vec<FieldTemplate>,
    combined: bool,
    /// Every field compiled for direct rendering; `None` once one is not simple.
    direct: Option<Vec<DirectTemplate>>,
}

impl GoEngine {
    /// An engine with no templates; `strict` is `missingkey=error`.
    pub(crate) fn new(strict: bool) -> Self {
        let mut env = PROTOTYPE.clone();
        env.set_undefined_behavior(if strict {
            UndefinedBehavior::Strict
        } else {
            UndefinedBehavior::Chainable
        });
        Self {
            env,
            templates: Vec::new(),
            combined: false,
            direct: Some(Vec::new()),
        }
    }

    /// Translates and compiles `text` (the value of `field`); returns its id, the index of its
    /// result in [`Self::render_all`].
    pub(crate) fn add(&mut self, field: &str, text: &str) -> Result<usize, TemplateError> {
        let translation = translate(text).map_err(|message| TemplateError::new(field, message))?;
        let name = self.templates.len().to_string();
        sprig::add_used(&mut self.env, &translation.source);
        self.compile(&name, field, translation.source.clone())?;
        self.direct = self.direct.take().and_then(|mut direct| {
            direct.push(DirectTemplate::compile(text)?);
            Some(direct)
        });
        self.templates.push(FieldTemplate {
            name,
            field: field.to_string(),
            translation,
        });
        Ok(self.templates.len() - 1)
    }

    /// Compiles the combined template once every field is added.
    ///
    /// Fields that define templates are always rendered on their own (their macros' names would
    /// collide in one combined template).
    pub(crate) fn finish(&mut self) -> Result<(), TemplateError> {
        let defines = self
            .templates
            .iter()
            .any(|template| template.translation.defines_templates);
        if self.templates.len() > 1 && !defines {
            let sources: Vec<&str> = self
                .templates
                .iter()
                .map(|template| template.translation.source.as_str())
                .collect();
            let field = self.templates[0].field.clone();
            self.compile(COMBINED, &field, sources.join(SEPARATOR))?;
            self.combined = true;
        }
        Ok(())
    }

    fn compile(&mut self, name: &str, field: &str, source: String) -> Result<(), TemplateError> {
        self.env
            .add_template_owned(name.to_string(), source)
            .map_err(|error| {
                TemplateError::new(
                    field,
                    format!("could not compile the translated template: {error}"),
                )
            })
    }

    /// Renders every field with `params`, in the order they were added: directly when every
    /// field is simple and the direct path can render them all, with minijinja otherwise.
    pub(crate) fn render_all(&self, params: &Params) -> Result<Vec<String>, TemplateError> {
        let direct = self.direct.as_ref().and_then(|direct| {
            direct
                .iter()
                .map(|template| template.render(params))
                .collect::<Option<Vec<_>>>()
        });
        match direct {
            Some(rendered) => Ok(rendered),
            None => self.render_with_minijinja(params),
        }
    }

    /// Renders every field with minijinja (the direct path's reference in its tests).
    pub(super) fn render_with_minijinja(
        &self,
        params: &Params,
    ) -> Result<Vec<String>, TemplateError> {
        let missing_key_error = self.env.undefined_behavior() == UndefinedBehavior::Strict;
        let context = ParamMap::context(params, missing_key_error);
        if self.combined {
            let rendered = self
                .env
                .get_template(COMBINED)
                .and_then(|template| template.render(&context));
            if let Some(parts) = rendered
                .ok()
                .and_then(|text| split_fields(&text, self.templates.len()))
            {
                return Ok(parts);
            }
        }
        self.templates
            .iter()
            .map(|template| {
                self.env
                    .get_template(&template.name)
                    .and_then(|compiled| compiled.render(&context))
                    .map_err(|error| {
                        TemplateError::new(&template.field, explain(&error, &template.translation))
                    })
            })
            .collect()
    }
}

/// The fields of a combined render, split at [`SEPARATOR`]; `None` unless there are `count`
/// (a rendered value contained the separator).
fn split_fields(text: &str, count: usize) -> Option<Vec<String>> {
    let mut parts = Vec::with_capacity(count);
    let mut rest = text;
    while let Some(at) = find_separator(rest) {
        parts.push(rest[..at].to_string());
        rest = &rest[at + SEPARATOR.len()..];
    }
    parts.push(rest.to_string());
    (parts.len() == count).then_some(parts)
}

/// Where [`SEPARATOR`] first occurs in `text`: a search for its first character (a `memchr`)
/// instead of a substring search from every position.
fn find_separator(text: &str) -> Option<usize> {
    let first = SEPARATOR.chars().next()?;
    let mut from = 0;
    while let Some(found) = text[from..].find(first) {
        let at = from + found;
        if text[at..].starts_with(SEPARATOR) {
            return Some(at);
        }
        from = at + first.len_utf8();
    }
    None
}

/// Says in Go terms what went wrong, and in which action.
fn explain(error: &minijinja::Error, translation: &Translation) -> String {
    let reason = match error.kind() {
        ErrorKind::OutOfFuel => {
            format!(
                "evaluation limit exhausted (out of fuel after {FUEL} steps): the template does too much work, e.g. a huge or nested range"
            )
        }
        ErrorKind::UndefinedError => {
            let detail = error.detail().unwrap_or_default();
            match detail.split('`').nth(1) {
                Some(expression) => format!("map has no entry for key {}", go_spelling(expression)),
                None => format!("missing key: {detail}"),
            }
        }
        kind => error
            .detail()
            .map_or_else(|| kind.to_string(), str::to_string),
    };
    match error
        .range()
        .and_then(|range| translation.action_at(range.start))
    {
        Some(action) => format!("{reason} in {action}"),
        None => reason,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn engine(fields: &[(&str, &str)]) -> GoEngine {
        let mut engine = GoEngine::new(false);
        for (field, text) in fields {
            engine.add(field, text).unwrap();
        }
        engine.finish().unwrap();
        engine
    }

    #[test]
    fn renders_all_fields_in_one_pass_and_falls_back_on_the_separator() {
        let engine = engine(&[
            ("a", "{{ .x }}"),
            ("b", "-{{ .y }}-"),
            ("c", "{{ .x }}{{ .y }}"),
        ]);
        let params: Params = [("x".to_string(), json!("1")), ("y".to_string(), json!(2))].into();
        assert_eq!(engine.render_all(&params).unwrap(), vec!["1", "-2-", "12"]);
        let sneaky: Params = [
            ("x".to_string(), json!(format!("p{SEPARATOR}q"))),
            ("y".to_string(), json!("z")),
        ]
        .into();
        let expected = vec![
            format!("p{SEPARATOR}q"),
            "-z-".to_string(),
            format!("p{SEPARATOR}qz"),
        ];
        assert_eq!(engine.render_all(&sneaky).unwrap(), expected);
    }

    #[test]
    fn splitting_finds_exactly_the_separators_a_substring_split_finds() {
        let texts = [
            String::new(),
            format!("a{SEPARATOR}b{SEPARATOR}"),
            format!("\u{1}a\u{1}\u{2}flotilla{SEPARATOR}\u{1}{SEPARATOR}{SEPARATOR}é\u{1}"),
            format!("{SEPARATOR}\u{1}\u{2}flotilla-field\u{2}"),
        ];
        for text in &texts {
            let expected: Vec<String> = text.split(SEPARATOR).map(str::to_string).collect();
            assert_eq!(
                split_fields(text, expected.len()),
                Some(expected.clone()),
                "{text:?}"
            );
            assert_eq!(split_fields(text, expected.len() + 1), None, "{text:?}");
        }
    }

    #[test]
    fn a_failing_field_is_named_even_when_rendered_together() {
        let engine = engine(&[
            ("metadata.name", "{{ .x }}"),
            ("spec.path", "{{ index .list 3 }}"),
            ("spec.other", "{{ .x }}"),
        ]);
        let params: Params = [
            ("x".to_string(), json!("1")),
            ("list".to_string(), json!([1])),
        ]
        .into();
        let error = engine.render_all(&params).unwrap_err();
        assert_eq!(error.field, "spec.path");
        assert_eq!(
            error.message,
            "index: index out of range: 3 (length 1) in {{ index .list 3 }}"
        );
    }
}

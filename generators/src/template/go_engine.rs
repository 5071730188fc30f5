//! The minijinja environment that runs translated goTemplates: functions, Go-style printing
//! (`<no value>` for missing keys), missing-key behaviour, a fuel limit per render, and the
//! translation of minijinja's errors back into Go terms.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Value, ValueKind};
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};

use super::TemplateError;
use super::go_format::{NO_VALUE, go_string};
use super::go_syntax::{ROOT, Translation, go_spelling, translate};
use super::sprig;
use crate::params::Params;

/// Instructions one string may execute before its render is stopped.
pub(crate) const FUEL: u64 = 200_000;

/// An environment holding every translated string of one prepared template.
pub(crate) struct GoEngine {
    env: Environment<'static>,
    /// Template name (its index) and translation, by id.
    templates: Vec<(String, Translation)>,
}

impl GoEngine {
    /// An engine with no templates; `strict` is `missingkey=error`.
    pub(crate) fn new(strict: bool) -> Self {
        let mut env = Environment::empty();
        sprig::register(&mut env);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_undefined_behavior(if strict {
            UndefinedBehavior::Strict
        } else {
            UndefinedBehavior::Chainable
        });
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
        Self {
            env,
            templates: Vec::new(),
        }
    }

    /// Translates and compiles `text` (the value of `field`); returns its id for [`Self::render`].
    pub(crate) fn add(&mut self, field: &str, text: &str) -> Result<usize, TemplateError> {
        let strict = self.env.undefined_behavior() == UndefinedBehavior::Strict;
        let translation =
            translate(text, strict).map_err(|message| TemplateError::new(field, message))?;
        let name = self.templates.len().to_string();
        self.env
            .add_template_owned(name.clone(), translation.source.clone())
            .map_err(|error| {
                TemplateError::new(
                    field,
                    format!("could not compile the translated template: {error}"),
                )
            })?;
        self.templates.push((name, translation));
        Ok(self.templates.len() - 1)
    }

    /// The render context for `params`; build it once and reuse it for every string.
    pub(crate) fn context(params: &Params) -> Value {
        let root = Value::from(minijinja::value::Serde(params));
        Value::from_object(std::collections::BTreeMap::from([(ROOT.to_string(), root)]))
    }

    /// Renders template `id` (the value of `field`) with a context from [`Self::context`].
    pub(crate) fn render(
        &self,
        id: usize,
        field: &str,
        context: &Value,
    ) -> Result<String, TemplateError> {
        let (name, translation) = &self.templates[id];
        let rendered = self
            .env
            .get_template(name)
            .and_then(|template| template.render(context));
        rendered.map_err(|error| TemplateError::new(field, explain(&error, translation)))
    }
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

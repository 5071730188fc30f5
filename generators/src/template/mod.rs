//! Field-wise rendering of templates with generator parameters: fasttemplate (`{{key}}`) and
//! Argo CD's Go-template syntax translated to minijinja, with the sprig functions people use.
//! A value from a generator can never change a document's structure: only string leaves (and map
//! keys) are rendered.

mod fasttemplate;
mod field_walk;
mod go_direct;
mod go_engine;
mod go_format;
mod go_lexer;
mod go_params;
mod go_syntax;
mod go_time;
mod sprig;
mod typed_render;

use serde::de::DeserializeOwned;
use serde_json::Value;

use self::fasttemplate::FastTemplate;
use self::field_walk::{Node, compile};
use self::go_engine::GoEngine;
pub use self::typed_render::RenderIntoError;
use crate::params::Params;

/// How templates are interpreted, from `goTemplate` and `goTemplateOptions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateMode {
    /// Argo CD's default: `{{key.with.dots}}` replaced from flat params, unknown tags left as they are.
    Fast,
    /// Go templates; `missing_key_error` comes from `goTemplateOptions: ["missingkey=error"]`.
    Go { missing_key_error: bool },
}

impl TemplateMode {
    /// The mode for an ApplicationSet's `goTemplate` and `goTemplateOptions`. Options are Go's
    /// `missingkey=error` (strict) and `missingkey=default|zero|invalid` (lenient); the last wins.
    ///
    /// # Errors
    /// Any other option, named.
    pub fn from_options(
        go_template: bool,
        go_template_options: &[String],
    ) -> Result<TemplateMode, TemplateError> {
        let mut missing_key_error = false;
        for option in go_template_options {
            missing_key_error = match option.trim() {
                "missingkey=error" => true,
                "missingkey=default" | "missingkey=zero" | "missingkey=invalid" => false,
                other => {
                    return Err(TemplateError::new(
                        "spec.goTemplateOptions",
                        format!(
                            "unsupported option {other:?} (supported: missingkey=error, missingkey=default, missingkey=zero, missingkey=invalid)"
                        ),
                    ));
                }
            };
        }
        Ok(if go_template {
            TemplateMode::Go { missing_key_error }
        } else {
            TemplateMode::Fast
        })
    }
}

/// A template that could not be rendered; `field` is the path of the field in the template
/// (`metadata.name`, `spec.source.path`, `spec.foo[2]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {message}")]
pub struct TemplateError {
    /// Path of the field (or map key) whose template failed.
    pub field: String,
    /// What went wrong and in which construct, in plain words.
    pub message: String,
}

impl TemplateError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// Renders templates in one mode.
pub struct Renderer {
    mode: TemplateMode,
}

impl Renderer {
    /// A renderer for `mode`.
    #[must_use]
    pub fn new(mode: TemplateMode) -> Self {
        Self { mode }
    }

    /// The mode this renderer uses.
    #[must_use]
    pub fn mode(&self) -> &TemplateMode {
        &self.mode
    }

    /// Compiles every templated string (leaf or map key) of `template` once, to render it with
    /// many parameter sets.
    ///
    /// # Errors
    /// Syntax errors and unsupported constructs, naming the field.
    pub fn prepare(&self, template: &Value) -> Result<PreparedTemplate, TemplateError> {
        self.prepare_at("", template)
    }

    fn prepare_at(&self, path: &str, template: &Value) -> Result<PreparedTemplate, TemplateError> {
        match self.mode {
            TemplateMode::Fast => {
                let root = compile(template, path, &mut |_, text| Ok(FastTemplate::parse(text)))?;
                Ok(PreparedTemplate {
                    compiled: Compiled::Fast(root),
                })
            }
            TemplateMode::Go { missing_key_error } => {
                let mut engine = GoEngine::new(missing_key_error);
                let root = compile(template, path, &mut |field, text| engine.add(field, text))?;
                engine.finish()?;
                Ok(PreparedTemplate {
                    compiled: Compiled::Go {
                        root,
                        engine: Box::new(engine),
                    },
                })
            }
        }
    }

    /// Renders one string; `field` names it in errors.
    ///
    /// # Errors
    /// Syntax errors, unsupported constructs, missing keys in strict mode, fuel exhaustion.
    pub fn render_str(
        &self,
        field: &str,
        text: &str,
        params: &Params,
    ) -> Result<String, TemplateError> {
        match self
            .prepare_at(field, &Value::String(text.to_string()))?
            .render(params)?
        {
            Value::String(rendered) => Ok(rendered),
            other => Ok(other.to_string()),
        }
    }

    /// Renders every string leaf and map key of `value`.
    ///
    /// # Errors
    /// The first field that fails, named by its path.
    pub fn render_value(&self, value: &Value, params: &Params) -> Result<Value, TemplateError> {
        self.prepare(value)?.render(params)
    }
}

/// A template document compiled once by [`Renderer::prepare`].
pub struct PreparedTemplate {
    compiled: Compiled,
}

enum Compiled {
    Fast(Node<FastTemplate>),
    Go {
        root: Node<usize>,
        engine: Box<GoEngine>,
    },
}

impl PreparedTemplate {
    /// Whether the document has nothing to render: every parameter set gives the same result.
    #[must_use]
    pub fn is_literal(&self) -> bool {
        match &self.compiled {
            Compiled::Fast(root) => root.is_literal(),
            Compiled::Go { root, .. } => root.is_literal(),
        }
    }

    /// Renders the document with one parameter set. Results of templates are strings; every other
    /// value is kept as it is.
    ///
    /// # Errors
    /// The first field that fails, named by its path: missing keys in strict mode, function
    /// errors, fuel exhaustion, colliding rendered map keys.
    pub fn render(&self, params: &Params) -> Result<Value, TemplateError> {
        match &self.compiled {
            Compiled::Fast(root) => root.render(&mut |_, template| Ok(template.render(params))),
            Compiled::Go { root, engine } => {
                let mut rendered = engine.render_all(params)?;
                root.render(&mut |_, &id| Ok(std::mem::take(&mut rendered[id])))
            }
        }
    }

    /// Renders the document with one parameter set straight into `D`: the same result and the
    /// same errors as `serde_json::from_value` of [`Self::render`], without building the
    /// document (map keys are read as strings).
    ///
    /// # Errors
    /// What [`Self::render`] reports, or serde's message when the result does not fit `D`.
    pub fn render_into<D: DeserializeOwned>(&self, params: &Params) -> Result<D, RenderIntoError> {
        match &self.compiled {
            Compiled::Fast(root) => {
                typed_render::render_into(root, &mut |_, template: &FastTemplate| {
                    Ok(template.render(params))
                })
            }
            Compiled::Go { root, engine } => {
                let mut rendered = engine.render_all(params)?;
                typed_render::render_into(root, &mut |_, &id: &usize| {
                    Ok(std::mem::take(&mut rendered[id]))
                })
            }
        }
    }
}

#[cfg(test)]
mod tests;

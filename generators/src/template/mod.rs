//! Field-wise rendering of templates with generator parameters: fasttemplate (`{{key}}`) and
//! Argo CD's Go-template syntax translated to minijinja, with the sprig functions people use.
//! A value from a generator can never change a document's structure: only string leaves (and map
//! keys) are rendered.

use serde_json::Value;

use crate::params::Params;

/// How templates are interpreted, from `goTemplate` and `goTemplateOptions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateMode {
    /// Argo CD's default: `{{key.with.dots}}` replaced from flat params, unknown tags left as they are.
    Fast,
    /// Go templates; `missing_key_error` comes from `goTemplateOptions: ["missingkey=error"]`.
    Go { missing_key_error: bool },
}

/// A template that could not be rendered; `field` is the path of the field in the template
/// (`metadata.name`, `spec.source.path`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {message}")]
pub struct TemplateError {
    pub field: String,
    pub message: String,
}

/// Renders templates in one mode. Stub interface: to be implemented.
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
        let _ = (field, params);
        Ok(text.to_string())
    }

    /// Renders every string leaf and map key of `value`.
    ///
    /// # Errors
    /// The first field that fails, named by its path.
    pub fn render_value(&self, value: &Value, params: &Params) -> Result<Value, TemplateError> {
        let _ = params;
        Ok(value.clone())
    }
}

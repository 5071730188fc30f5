//! YAML parse errors that name their file: one rendering (`file:line:column`, the message, and a
//! snippet of the offending lines) for every YAML input Flotilla reads.

/// A YAML document that could not be read into the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    pub file: String,
    pub message: String,
}

impl YamlError {
    /// Renders `error` with `file` as the source name.
    #[must_use]
    pub fn new(file: &str, error: &serde_saphyr::Error) -> Self {
        let mut message = String::new();
        let rendered = error.render_to(
            &mut message,
            serde_saphyr::render_options! { source_name: Some(file), },
        );
        // An error without a location (an empty document, say) renders without the file.
        if rendered.is_err() || !message.contains(file) {
            message = format!("{file}: {}", error.without_snippet());
        }
        let message = message
            .strip_prefix("error: ")
            .map(str::to_string)
            .unwrap_or(message);
        Self {
            file: file.to_string(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_file_line_and_column() {
        let error = serde_saphyr::from_str::<serde_json::Value>("a: 1\nb: [\n").unwrap_err();
        let message = YamlError::new("apps/x.yaml", &error).to_string();
        assert!(message.contains("apps/x.yaml:2:4"), "{message}");
    }
}

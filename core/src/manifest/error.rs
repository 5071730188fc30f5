//! Validation errors for desired manifests: each names the file, document and object it is about.

use std::fmt;
use std::path::PathBuf;

/// One problem found in a source, located as precisely as possible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    /// The file, relative to the source root.
    pub file: PathBuf,
    /// The document index within the file (counting non-empty documents from 0), when known.
    pub document: Option<usize>,
    /// The object, e.g. `Deployment shop/shop-api`, when known.
    pub object: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(document) = self.document {
            write!(f, " (document {document})")?;
        }
        if let Some(object) = &self.object {
            write!(f, " {object}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every validation error of a source, reported together; nothing is applied when any exists.
#[derive(Debug, Clone, PartialEq, Eq, Default, thiserror::Error)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} validation error(s)", self.0.len())?;
        for error in &self.0 {
            write!(f, "\n  {error}")?;
        }
        Ok(())
    }
}

//! The strict reading of Flotilla's documents: every field the types do not know is collected by
//! its path (`spec.source.name`, `generators.0.clusters.selectr`), so a field Flotilla does not
//! implement is refused by name, never silently dropped. One mechanism for every reader — a
//! file's document, a `templatePatch`'s output, a generator's `template` override, a nested
//! `matrix`/`merge`, an analysis Job's spec — so they cannot disagree.

use std::fmt;

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::Value;

/// Fields a reader found that its types do not know, by path (dotted, list items by index).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnknownFields(pub Vec<String>);

impl UnknownFields {
    /// Whether every field was known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Ok when every field was known, else these fields as an error.
    ///
    /// # Errors
    /// Some field was unknown.
    pub fn refuse(self) -> Result<(), Self> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }

    /// The same fields, each prefixed by `parent` (`spec` gives `spec.source.name`).
    #[must_use]
    pub fn under(self, parent: &str) -> Self {
        Self(
            self.0
                .into_iter()
                .map(|path| format!("{parent}.{path}"))
                .collect(),
        )
    }
}

impl fmt::Display for UnknownFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unsupported field {}: Flotilla does not implement it (check the spelling, or remove it)",
            self.0.join(", ")
        )
    }
}

impl std::error::Error for UnknownFields {}

/// Deserializes a `T` from `deserializer`, collecting every field `T` does not know.
///
/// # Errors
/// The deserializer's error (a wrong type, a missing required field).
pub fn deserialize<'de, D, T>(deserializer: D) -> Result<(T, UnknownFields), D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut unknown = Vec::new();
    let value = serde_ignored::deserialize(deserializer, |path| unknown.push(path_text(&path)))?;
    Ok((value, UnknownFields(unknown)))
}

/// The fields of `value` a `T` does not know, as far as it reads as a `T` (a value of the wrong
/// type ends the reading: those after it are not seen). For checks before templates are
/// rendered, when a value may still be a template's text.
#[must_use]
pub fn unknown_fields<T: DeserializeOwned>(value: &Value) -> UnknownFields {
    let mut unknown = Vec::new();
    let _: Result<T, _> = serde_ignored::deserialize(value, |path| unknown.push(path_text(&path)));
    UnknownFields(unknown)
}

/// Why a JSON value is not a `T`.
#[derive(Debug, thiserror::Error)]
pub enum StrictError {
    /// A field the type does not know.
    #[error(transparent)]
    Unknown(#[from] UnknownFields),
    /// A wrong type or a missing field.
    #[error("{0}")]
    Invalid(#[source] serde_json::Error),
}

/// `value` as a `T`, refusing any field `T` does not know.
///
/// # Errors
/// [`StrictError::Unknown`] naming every unknown field; [`StrictError::Invalid`] when it is not
/// a `T` at all.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, StrictError> {
    let (parsed, unknown) = deserialize(value).map_err(StrictError::Invalid)?;
    unknown.refuse()?;
    Ok(parsed)
}

/// `deserialize`'s path, as `unknown_fields` writes it too.
fn path_text(path: &serde_ignored::Path<'_>) -> String {
    // An `Option`'s `Some` is written as a `?` segment: not part of the field's name.
    path.to_string().replace(".?", "")
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        #[serde(default)]
        a: u32,
    }

    #[test]
    fn unknown_fields_are_named_by_path_at_any_depth() {
        let value = json!({"inner": {"a": 1, "b": 2}, "list": [{}, {"c": 3}], "d": 4});
        let error = from_value::<Outer>(&value).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unsupported field d, inner.b, list.1.c: Flotilla does not implement it \
             (check the spelling, or remove it)"
        );
        let known = json!({"inner": {"a": 1}});
        assert_eq!(
            from_value::<Outer>(&known).unwrap(),
            Outer {
                inner: Some(Inner { a: 1 }),
                list: Vec::new()
            }
        );
        assert!(matches!(
            from_value::<Outer>(&json!({"inner": {"a": "x"}})),
            Err(StrictError::Invalid(_))
        ));
        // Read as far as it goes: what comes before a wrong type is named.
        let partly = json!({"d": 1, "inner": {"a": "{{n}}"}, "list": [{"c": 3}]});
        assert_eq!(unknown_fields::<Outer>(&partly).0, ["d"]);
        assert_eq!(UnknownFields(vec!["x".into()]).under("spec").0, ["spec.x"]);
    }
}

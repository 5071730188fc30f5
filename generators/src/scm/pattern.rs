//! The regular expressions of generator filters (`filters[0].branchMatch`): RE2 syntax, as Go's
//! `regexp` reads them, compiled once per generation; a bad one is an error naming its field.

use regex::Regex;

use super::endpoint::field_error;
use crate::generator::GeneratorError;

/// `pattern` of `filters[index].field`, compiled; `None` when the field is not set.
///
/// # Errors
/// An invalid regular expression, naming the field.
pub fn compile(
    index: usize,
    field: &str,
    pattern: Option<&String>,
) -> Result<Option<Regex>, GeneratorError> {
    pattern
        .map(|pattern| {
            Regex::new(pattern).map_err(|e| {
                field_error(
                    format!("filters[{index}].{field}"),
                    format!("invalid regular expression {pattern:?}: {e}"),
                )
            })
        })
        .transpose()
}

/// Whether `text` matches `regex`, or there is no regex.
#[must_use]
pub fn matches(regex: Option<&Regex>, text: &str) -> bool {
    regex.is_none_or(|regex| regex.is_match(text))
}

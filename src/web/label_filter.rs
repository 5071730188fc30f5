//! The Fleet page's filter by label, written as kubectl's `-l`: `key=value`, `key!=value`,
//! `key` and `!key`, joined by commas (all must hold), read as a [`LabelSelector`].

use std::collections::BTreeMap;

use flotilla_generators::selector::{LabelSelector, LabelSelectorRequirement};

/// A filter that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("label filter {filter:?}: {reason}")]
pub struct LabelFilterError {
    pub filter: String,
    pub reason: &'static str,
}

/// The selector `filter` means; an empty filter selects everything.
///
/// # Errors
/// An empty key or an empty term between commas.
pub fn parse(filter: &str) -> Result<LabelSelector, LabelFilterError> {
    let mut selector = LabelSelector::default();
    let error = |reason| LabelFilterError {
        filter: filter.to_owned(),
        reason,
    };
    if filter.trim().is_empty() {
        return Ok(selector);
    }
    for term in filter.split(',').map(str::trim) {
        let requirement =
            |key: &str, operator: &str, values: Vec<String>| LabelSelectorRequirement {
                key: key.trim().to_owned(),
                operator: operator.to_owned(),
                values,
            };
        let parsed = if let Some((key, value)) = term.split_once("!=") {
            requirement(key, "NotIn", vec![value.trim().to_owned()])
        } else if let Some((key, value)) = term.split_once('=') {
            let value = value.strip_prefix('=').unwrap_or(value);
            requirement(key, "In", vec![value.trim().to_owned()])
        } else if let Some(key) = term.strip_prefix('!') {
            requirement(key, "DoesNotExist", Vec::new())
        } else {
            requirement(term, "Exists", Vec::new())
        };
        if term.is_empty() || parsed.key.is_empty() {
            return Err(error(
                "every term needs a key (key=value, key!=value, key, !key)",
            ));
        }
        selector.match_expressions.push(parsed);
    }
    Ok(selector)
}

/// Whether `labels` pass `selector` (built by [`parse`], so always valid).
#[must_use]
pub fn selects(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    selector.matches(labels.unwrap_or(&empty)).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kubectl_label_filters() {
        let labels: BTreeMap<String, String> = [("team", "payments"), ("tier", "web")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let cases = [
            ("", true),
            ("team=payments", true),
            ("team==payments", true),
            ("team=search", false),
            ("team!=search,tier", true),
            ("!tier", false),
            ("team=payments, env", false),
        ];
        for (filter, expected) in cases {
            let selector = parse(filter).unwrap();
            assert_eq!(selects(&selector, Some(&labels)), expected, "{filter}");
        }
        assert_eq!(parse("team=a,,").unwrap_err().filter, "team=a,,");
        assert!(parse("=x").is_err());
    }
}

//! Kubernetes label selectors (`matchLabels`, `matchExpressions` with `In`, `NotIn`, `Exists`,
//! `DoesNotExist`) evaluated over a flat string map. Operators are kept as written and checked
//! when the selector is evaluated, so callers can report an unknown operator where it was found.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A label selector as written in a manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A selector that cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error(
        "unknown operator {operator:?} for key {key:?} (expected In, NotIn, Exists or DoesNotExist)"
    )]
    UnknownOperator { key: String, operator: String },
    #[error("operator {operator} for key {key:?} needs at least one value")]
    MissingValues { key: String, operator: String },
    #[error("operator {operator} for key {key:?} takes no values")]
    UnexpectedValues { key: String, operator: String },
}

/// The four selector operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelectorRequirement {
    /// Parses the operator and checks the values it needs.
    ///
    /// # Errors
    /// An unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values.
    pub fn operator(&self) -> Result<Operator, SelectorError> {
        let op = match self.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(SelectorError::UnknownOperator {
                    key: self.key.clone(),
                    operator: other.to_string(),
                });
            }
        };
        let needs_values = matches!(op, Operator::In | Operator::NotIn);
        match (needs_values, self.values.is_empty()) {
            (true, true) => Err(SelectorError::MissingValues {
                key: self.key.clone(),
                operator: self.operator.clone(),
            }),
            (false, false) => Err(SelectorError::UnexpectedValues {
                key: self.key.clone(),
                operator: self.operator.clone(),
            }),
            _ => Ok(op),
        }
    }

    /// Whether `labels` satisfy this requirement.
    ///
    /// # Errors
    /// See [`LabelSelectorRequirement::operator`].
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> Result<bool, SelectorError> {
        let value = labels.get(&self.key);
        Ok(match self.operator()? {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        })
    }
}

impl LabelSelector {
    /// Whether `labels` satisfy every `matchLabels` entry and every expression. An empty selector
    /// matches everything.
    ///
    /// # Errors
    /// The first invalid expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> Result<bool, SelectorError> {
        if !self
            .match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
        {
            // Still validate the expressions so a typo is reported even when labels differ.
            self.validate()?;
            return Ok(false);
        }
        for requirement in &self.match_expressions {
            if !requirement.matches(labels)? {
                self.validate()?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Checks every expression without evaluating it.
    ///
    /// # Errors
    /// The first invalid expression.
    pub fn validate(&self) -> Result<(), SelectorError> {
        self.match_expressions
            .iter()
            .try_for_each(|r| r.operator().map(|_| ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn operators_follow_kubernetes_semantics() {
        let l = labels(&[("env", "prod"), ("tier", "db")]);
        let cases = [
            (expr("env", "In", &["prod", "staging"]), true),
            (expr("env", "In", &["staging"]), false),
            (expr("env", "NotIn", &["staging"]), true),
            (expr("missing", "NotIn", &["x"]), true),
            (expr("tier", "Exists", &[]), true),
            (expr("missing", "Exists", &[]), false),
            (expr("missing", "DoesNotExist", &[]), true),
            (expr("tier", "DoesNotExist", &[]), false),
        ];
        for (requirement, expected) in cases {
            assert_eq!(requirement.matches(&l), Ok(expected), "{requirement:?}");
        }
    }

    #[test]
    fn invalid_expressions_are_errors() {
        let l = labels(&[]);
        assert!(matches!(
            expr("a", "Equals", &["x"]).matches(&l),
            Err(SelectorError::UnknownOperator { .. })
        ));
        assert!(matches!(
            expr("a", "In", &[]).matches(&l),
            Err(SelectorError::MissingValues { .. })
        ));
        assert!(matches!(
            expr("a", "Exists", &["x"]).matches(&l),
            Err(SelectorError::UnexpectedValues { .. })
        ));
    }

    #[test]
    fn match_labels_and_expressions_combine() {
        let selector = LabelSelector {
            match_labels: labels(&[("env", "prod")]),
            match_expressions: vec![expr("region", "In", &["eu"])],
        };
        assert_eq!(
            selector.matches(&labels(&[("env", "prod"), ("region", "eu")])),
            Ok(true)
        );
        assert_eq!(
            selector.matches(&labels(&[("env", "prod"), ("region", "us")])),
            Ok(false)
        );
        assert_eq!(
            selector.matches(&labels(&[("env", "dev"), ("region", "eu")])),
            Ok(false)
        );
        assert_eq!(LabelSelector::default().matches(&labels(&[])), Ok(true));
    }
}

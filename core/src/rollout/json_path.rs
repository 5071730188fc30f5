//! The dotted paths analyses read JSON answers with (`status.phase`, `checks.0.ok`,
//! `$.data.errorRate`, `{$.data.errorRate}` as Argo Rollouts writes them): a field name per
//! segment, a segment of digits indexing a list.

use serde_json::Value;

/// A parsed dotted path; empty: the whole value.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct JsonPath(pub Vec<String>);

impl JsonPath {
    /// Parses `text`, a leading `$.` (and Argo Rollouts' enclosing `{…}`) left out; `None`
    /// for an empty segment (`a..b`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text)
            .trim();
        if text == "$" {
            return Some(Self::default());
        }
        let text = text.strip_prefix("$.").unwrap_or(text);
        let segments: Vec<String> = text.split('.').map(str::to_owned).collect();
        (!segments.iter().any(String::is_empty)).then_some(Self(segments))
    }

    /// Whether it is the whole value.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value it names in `json`, if there is one.
    #[must_use]
    pub fn find<'a>(&self, json: &'a Value) -> Option<&'a Value> {
        self.0.iter().try_fold(json, |value, key| match value {
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            other => other.get(key),
        })
    }

    /// `status.phase`.
    #[must_use]
    pub fn text(&self) -> String {
        self.0.join(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_as_flotilla_and_argo_rollouts_write_them() {
        let json = json!({"data": {"rates": [0.1, 0.2]}});
        for text in ["data.rates.1", "$.data.rates.1", "{$.data.rates.1}"] {
            let path = JsonPath::parse(text).expect("a path");
            assert_eq!(path.find(&json), Some(&json!(0.2)), "{text}");
        }
        assert_eq!(JsonPath::parse("{$}").map(|p| p.is_empty()), Some(true));
        assert_eq!(JsonPath::parse("a..b"), None);
        assert_eq!(
            JsonPath::parse("data.none").and_then(|p| p.find(&json).cloned()),
            None
        );
    }
}

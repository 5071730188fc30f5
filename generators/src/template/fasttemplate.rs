//! Argo CD's default template syntax (valyala/fasttemplate): `{{key}}` or `{{ key.with.dots }}`
//! replaced with the flat parameter of that name; a tag naming no parameter stays as written.

use serde_json::Value;

use crate::params::Params;

/// A string parsed once into literal text and tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FastTemplate {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    /// `{{inner}}`: `key` is `inner` trimmed; `inner` is kept to reprint an unknown tag as written.
    Tag {
        key: String,
        inner: String,
    },
}

impl FastTemplate {
    /// Parses `text`; an unclosed `{{` is literal text, like fasttemplate does.
    pub(crate) fn parse(text: &str) -> Self {
        let mut segments = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let Some(close) = rest[open + 2..].find("}}") else {
                break;
            };
            if open > 0 {
                segments.push(Segment::Text(rest[..open].to_string()));
            }
            let inner = &rest[open + 2..open + 2 + close];
            segments.push(Segment::Tag {
                key: inner.trim().to_string(),
                inner: inner.to_string(),
            });
            rest = &rest[open + 2 + close + 2..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Text(rest.to_string()));
        }
        Self { segments }
    }

    /// Substitutes `params`; a non-string parameter is written as its JSON text.
    pub(crate) fn render(&self, params: &Params) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Tag { key, inner } => match params.get(key) {
                    Some(Value::String(value)) if !key.is_empty() => out.push_str(value),
                    Some(value) if !key.is_empty() => out.push_str(&value.to_string()),
                    _ => {
                        out.push_str("{{");
                        out.push_str(inner);
                        out.push_str("}}");
                    }
                },
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn substitutes_known_tags_and_leaves_the_rest_as_written() {
        let params: Params = [
            ("name".to_string(), json!("guestbook")),
            ("path.basename".to_string(), json!("apps/x")),
            ("replicas".to_string(), json!(3)),
            ("evil".to_string(), json!("{{name}}")),
        ]
        .into();
        let cases = [
            ("{{name}}", "guestbook"),
            ("{{ path.basename }}-{{name}}", "apps/x-guestbook"),
            ("n={{replicas}}", "n=3"),
            ("{{unknown}} and {{ other }}", "{{unknown}} and {{ other }}"),
            ("{{}} {{ }}", "{{}} {{ }}"),
            ("{{name", "{{name"),
            ("{{name}}}}", "guestbook}}"),
            ("{{evil}}", "{{name}}"),
            ("{{ .name }}", "{{ .name }}"),
            ("plain", "plain"),
        ];
        for (text, expected) in cases {
            assert_eq!(
                FastTemplate::parse(text).render(&params),
                expected,
                "{text}"
            );
        }
    }
}

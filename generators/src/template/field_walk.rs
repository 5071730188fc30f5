//! Walking a template document field by field: every string leaf and map key is compiled once
//! into a [`Node`] tree, and rendering rebuilds the document from it. Subtrees without `{{` are
//! kept as literal values, so untemplated fields cost a clone.

use serde_json::{Map, Value};

use super::TemplateError;

/// A compiled string: plain text, or a template to render, with the field path it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text<T> {
    Plain(String),
    Template { field: String, template: T },
}

/// A compiled document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<T> {
    /// A subtree with nothing to render.
    Literal(Value),
    String(Text<T>),
    List(Vec<Node<T>>),
    /// Entries with the path of each key (to name it when rendered keys collide).
    Map(Vec<MapEntry<T>>),
}

/// One entry of a compiled map.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MapEntry<T> {
    pub(crate) field: String,
    pub(crate) key: Text<T>,
    pub(crate) value: Node<T>,
}

/// The path of `key` under `parent`: `metadata.name`.
fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// Compiles `value` found at `path`; `compile_text` turns a string containing `{{` into a template.
pub(crate) fn compile<T>(
    value: &Value,
    path: &str,
    compile_text: &mut impl FnMut(&str, &str) -> Result<T, TemplateError>,
) -> Result<Node<T>, TemplateError> {
    let node = match value {
        Value::String(text) => Node::String(compile_string(text, path, compile_text)?),
        Value::Array(items) => {
            let items = items
                .iter()
                .enumerate()
                .map(|(i, item)| compile(item, &format!("{path}[{i}]"), compile_text))
                .collect::<Result<Vec<_>, _>>()?;
            Node::List(items)
        }
        Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (key, item) in map {
                let field = child_path(path, key);
                let key = compile_string(key, &field, compile_text)?;
                let value = compile(item, &field, compile_text)?;
                entries.push(MapEntry { field, key, value });
            }
            Node::Map(entries)
        }
        other => return Ok(Node::Literal(other.clone())),
    };
    Ok(if node.is_literal() {
        Node::Literal(value.clone())
    } else {
        node
    })
}

fn compile_string<T>(
    text: &str,
    field: &str,
    compile_text: &mut impl FnMut(&str, &str) -> Result<T, TemplateError>,
) -> Result<Text<T>, TemplateError> {
    if text.contains("{{") {
        Ok(Text::Template {
            field: field.to_string(),
            template: compile_text(field, text)?,
        })
    } else {
        Ok(Text::Plain(text.to_string()))
    }
}

impl<T> Node<T> {
    /// Whether nothing in this node needs rendering.
    pub(crate) fn is_literal(&self) -> bool {
        match self {
            Node::Literal(_) | Node::String(Text::Plain(_)) => true,
            Node::String(Text::Template { .. }) => false,
            Node::List(items) => items.iter().all(Node::is_literal),
            Node::Map(entries) => entries
                .iter()
                .all(|entry| matches!(entry.key, Text::Plain(_)) && entry.value.is_literal()),
        }
    }

    /// Rebuilds the document; `render_text(field, template)` renders one string.
    pub(crate) fn render(
        &self,
        render_text: &mut impl FnMut(&str, &T) -> Result<String, TemplateError>,
    ) -> Result<Value, TemplateError> {
        Ok(match self {
            Node::Literal(value) => value.clone(),
            Node::String(text) => Value::String(text.render(render_text)?),
            Node::List(items) => Value::Array(
                items
                    .iter()
                    .map(|item| item.render(render_text))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Map(entries) => {
                let mut map = Map::new();
                for entry in entries {
                    let key = entry.key.render(render_text)?;
                    let value = entry.value.render(render_text)?;
                    if map.contains_key(&key) {
                        return Err(key_collision(&entry.field, &key));
                    }
                    map.insert(key, value);
                }
                Value::Object(map)
            }
        })
    }
}

/// The error for a rendered map key equal to an earlier key of the same map.
pub(crate) fn key_collision(field: &str, key: &str) -> TemplateError {
    TemplateError::new(
        field,
        format!("rendered key {key:?} collides with another key of the same map"),
    )
}

impl<T> Text<T> {
    fn render(
        &self,
        render_text: &mut impl FnMut(&str, &T) -> Result<String, TemplateError>,
    ) -> Result<String, TemplateError> {
        match self {
            Text::Plain(text) => Ok(text.clone()),
            Text::Template { field, template } => render_text(field, template),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Compiles with a "template" that upper-cases the text, recording the fields it saw.
    fn compile_upper(value: &Value) -> (Node<String>, Vec<String>) {
        let mut fields = Vec::new();
        let node = compile(value, "", &mut |field: &str, text: &str| {
            fields.push(field.to_string());
            Ok(text.to_uppercase())
        })
        .unwrap();
        (node, fields)
    }

    fn render_upper(node: &Node<String>) -> Result<Value, TemplateError> {
        node.render(&mut |_: &str, text: &String| Ok(text.clone()))
    }

    #[test]
    fn walks_leaves_and_keys_and_names_their_paths() {
        let document = json!({
            "metadata": {"name": "{{a}}", "labels": {"{{k}}": "v", "plain": 1}},
            "spec": {"list": ["x", "{{b}}", {"deep": "{{c}}"}], "count": 2, "flag": true},
        });
        let (node, fields) = compile_upper(&document);
        assert_eq!(
            fields,
            vec![
                "metadata.labels.{{k}}",
                "metadata.name",
                "spec.list[1]",
                "spec.list[2].deep"
            ]
        );
        assert_eq!(
            render_upper(&node).unwrap(),
            json!({
                "metadata": {"name": "{{A}}", "labels": {"{{K}}": "v", "plain": 1}},
                "spec": {"list": ["x", "{{B}}", {"deep": "{{C}}"}], "count": 2, "flag": true},
            })
        );
    }

    #[test]
    fn untemplated_subtrees_stay_literal() {
        let (node, fields) = compile_upper(&json!({"a": {"b": ["c", 1, null]}}));
        assert!(fields.is_empty());
        assert_eq!(node, Node::Literal(json!({"a": {"b": ["c", 1, null]}})));
    }

    #[test]
    fn rendered_keys_that_collide_are_errors() {
        let (node, _) = compile_upper(&json!({"labels": {"{{x}}": "1", "{{X}}": "2"}}));
        let error = render_upper(&node).unwrap_err();
        assert_eq!(error.field, "labels.{{x}}");
        assert!(error.message.contains("collides"), "{error}");
    }
}

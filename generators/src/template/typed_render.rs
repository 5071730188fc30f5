//! Rendering a compiled document straight into a typed value: a serde `Deserializer` over the
//! [`Node`] tree that renders each templated string where it is read, so no intermediate JSON
//! document is built and literal subtrees are read in place instead of cloned. The result is
//! what `serde_json::from_value` gives for the rendered document.

use std::borrow::Cow;
use std::fmt;
use std::slice;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::TemplateError;
use super::field_walk::{MapEntry, Node, Text, key_collision};

/// Why a document could not be rendered into a type.
#[derive(Debug, thiserror::Error)]
pub enum RenderIntoError {
    /// A template failed, or rendered map keys collide.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The rendered document does not have the type's shape (serde's message).
    #[error("{0}")]
    Shape(String),
}

impl de::Error for RenderIntoError {
    fn custom<M: fmt::Display>(message: M) -> Self {
        Self::Shape(message.to_string())
    }
}

fn shape(error: serde_json::Error) -> RenderIntoError {
    RenderIntoError::Shape(error.to_string())
}

/// Renders one templated string: `(field, template)` → text.
pub(crate) trait RenderText<T>: FnMut(&str, &T) -> Result<String, TemplateError> {}

impl<T, F: FnMut(&str, &T) -> Result<String, TemplateError>> RenderText<T> for F {}

/// Renders `node` into `D`; `render_text(field, template)` renders one string.
pub(crate) fn render_into<'de, T, D, F>(
    node: &'de Node<T>,
    render_text: &mut F,
) -> Result<D, RenderIntoError>
where
    D: de::Deserialize<'de>,
    F: RenderText<T>,
{
    D::deserialize(NodeDeserializer { node, render_text })
}

struct NodeDeserializer<'de, 'r, T, F> {
    node: &'de Node<T>,
    render_text: &'r mut F,
}

impl<'de, T, F> NodeDeserializer<'de, '_, T, F>
where
    F: RenderText<T>,
{
    /// The rendered document as JSON, for the requests only a JSON value answers the same way
    /// (numbers, booleans, enums, skipped fields); templates never render into those in practice.
    fn rendered(self) -> Result<Value, RenderIntoError> {
        Ok(self.node.render(self.render_text)?)
    }
}

/// Forwards a request to the literal JSON value, or answers it from the rendered document.
macro_rules! literal_or_rendered {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, RenderIntoError> {
            match self.node {
                Node::Literal(value) => value.$method($($arg,)* visitor).map_err(shape),
                _ => self.rendered()?.$method($($arg,)* visitor).map_err(shape),
            }
        }
    )*};
}

/// Forwards a request to the literal JSON value, or reads the node as `deserialize_any` does
/// (for strings, lists and maps the JSON value answers these requests the same way).
macro_rules! literal_or_any {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, RenderIntoError> {
            match self.node {
                Node::Literal(value) => value.$method($($arg,)* visitor).map_err(shape),
                _ => self.deserialize_any(visitor),
            }
        }
    )*};
}

impl<'de, T, F> Deserializer<'de> for NodeDeserializer<'de, '_, T, F>
where
    F: RenderText<T>,
{
    type Error = RenderIntoError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RenderIntoError> {
        match self.node {
            Node::Literal(value) => value.deserialize_any(visitor).map_err(shape),
            Node::String(Text::Plain(text)) => visitor.visit_borrowed_str(text),
            Node::String(Text::Template { field, template }) => {
                visitor.visit_string((self.render_text)(field, template)?)
            }
            Node::List(items) => {
                let mut access = Items {
                    items: items.iter(),
                    render_text: self.render_text,
                };
                let value = visitor.visit_seq(&mut access)?;
                match access.items.len() {
                    0 => Ok(value),
                    _ => Err(de::Error::invalid_length(
                        items.len(),
                        &"fewer elements in array",
                    )),
                }
            }
            Node::Map(entries) => {
                let mut access = Entries::new(entries, self.render_text);
                let value = visitor.visit_map(&mut access)?;
                match access.entries.len() {
                    0 => Ok(value),
                    _ => Err(de::Error::invalid_length(
                        entries.len(),
                        &"fewer elements in map",
                    )),
                }
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RenderIntoError> {
        match self.node {
            Node::Literal(value) => value.deserialize_option(visitor).map_err(shape),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, RenderIntoError> {
        match self.node {
            Node::Literal(value) => value
                .deserialize_newtype_struct(name, visitor)
                .map_err(shape),
            _ => visitor.visit_newtype_struct(self),
        }
    }

    literal_or_any! {
        deserialize_str();
        deserialize_string();
        deserialize_identifier();
        deserialize_seq();
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
    }

    literal_or_rendered! {
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_ignored_any();
    }
}

/// The items of a compiled list.
struct Items<'de, 'r, T, F> {
    items: slice::Iter<'de, Node<T>>,
    render_text: &'r mut F,
}

impl<'de, T, F> SeqAccess<'de> for Items<'de, '_, T, F>
where
    F: RenderText<T>,
{
    type Error = RenderIntoError;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, RenderIntoError> {
        self.items
            .next()
            .map(|node| {
                seed.deserialize(NodeDeserializer {
                    node,
                    render_text: &mut *self.render_text,
                })
            })
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of a compiled map. Keys are read as strings. When some key is templated, every
/// key read so far is kept to report rendered keys that collide.
struct Entries<'de, 'r, T, F> {
    entries: slice::Iter<'de, MapEntry<T>>,
    render_text: &'r mut F,
    value: Option<&'de Node<T>>,
    seen: Option<Vec<String>>,
}

impl<'de, 'r, T, F> Entries<'de, 'r, T, F> {
    fn new(entries: &'de [MapEntry<T>], render_text: &'r mut F) -> Self {
        let templated = entries
            .iter()
            .any(|entry| matches!(entry.key, Text::Template { .. }));
        Self {
            entries: entries.iter(),
            render_text,
            value: None,
            seen: templated.then(Vec::new),
        }
    }
}

impl<'de, T, F> MapAccess<'de> for Entries<'de, '_, T, F>
where
    F: RenderText<T>,
{
    type Error = RenderIntoError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, RenderIntoError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(&entry.value);
        let key: Cow<'de, str> = match &entry.key {
            Text::Plain(key) => Cow::Borrowed(key),
            Text::Template { field, template } => Cow::Owned((self.render_text)(field, template)?),
        };
        if let Some(seen) = &mut self.seen {
            if seen.iter().any(|earlier| *earlier == key) {
                return Err(key_collision(&entry.field, &key).into());
            }
            seen.push(key.to_string());
        }
        match key {
            Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
            Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
        }
        .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, RenderIntoError> {
        let node = self
            .value
            .take()
            .ok_or_else(|| RenderIntoError::Shape("a map value was read before its key".into()))?;
        seed.deserialize(NodeDeserializer {
            node,
            render_text: &mut *self.render_text,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::template::field_walk::compile;

    /// Compiles with a "template" that upper-cases the text.
    fn compile_upper(value: &Value) -> Node<String> {
        compile(
            value,
            "",
            &mut |_: &str, text: &str| Ok(text.to_uppercase()),
        )
        .unwrap()
    }

    /// The compiled (already upper-cased) text of a field.
    fn upper<T: Clone>(_: &str, text: &T) -> Result<T, TemplateError> {
        Ok(text.clone())
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Doc {
        name: String,
        labels: BTreeMap<String, String>,
        #[serde(default)]
        maybe: Option<String>,
        count: u32,
        list: Vec<String>,
        kind: Kind,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Kind {
        Plain,
        Fancy,
    }

    #[test]
    fn typed_results_equal_rendering_then_deserializing() {
        let documents = [
            json!({"name": "{{a}}", "labels": {"{{k}}": "{{v}}", "plain": "x"}, "maybe": "{{m}}",
                   "count": 2, "list": ["x", "{{y}}"], "kind": "Plain"}),
            json!({"name": "n", "labels": {}, "maybe": null, "count": 0, "list": [], "kind": "Fancy"}),
        ];
        for document in documents {
            let node = compile_upper(&document);
            let direct: Doc = render_into(&node, &mut upper).unwrap();
            let via_json: Doc = serde_json::from_value(node.render(&mut upper).unwrap()).unwrap();
            assert_eq!(direct, via_json, "{document}");
            let as_json: Value = render_into(&node, &mut upper).unwrap();
            assert_eq!(as_json, node.render(&mut upper).unwrap(), "{document}");
        }
    }

    #[test]
    fn shape_errors_are_serdes_and_key_collisions_name_the_field() {
        let node = compile_upper(&json!({"name": ["{{a}}"]}));
        let direct = render_into::<_, Doc, _>(&node, &mut upper).unwrap_err();
        let via_json = serde_json::from_value::<Doc>(node.render(&mut upper).unwrap()).unwrap_err();
        assert_eq!(direct.to_string(), via_json.to_string());

        let node = compile_upper(&json!({"labels": {"{{X}}": "1", "{{x}}": "2"}}));
        let RenderIntoError::Template(error) =
            render_into::<_, Value, _>(&node, &mut upper).unwrap_err()
        else {
            panic!("expected a template error");
        };
        assert_eq!(error, node.render(&mut upper).unwrap_err());
        assert_eq!(error.field, "labels.{{x}}");
    }
}

//! The `list` generator: one parameter set per literal element of `elements`, then per element
//! of the `elementsYaml` string. In fasttemplate mode every value must be a string, except
//! `values`, whose string entries become `values.<key>`; in goTemplate mode elements are kept
//! as they are.

use serde_json::{Map, Value};

use crate::generator::{GenerateContext, Generator, GeneratorError, GeneratorErrorReason};
use crate::params::Params;
use crate::spec::ListGenerator;
use crate::template::TemplateMode;

impl Generator for ListGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let mut sets = Vec::with_capacity(self.elements.len());
        for (index, element) in self.elements.iter().enumerate() {
            let set = element_params(element, ctx.mode()).map_err(|message| {
                GeneratorError::here(GeneratorErrorReason::ListElement { index, message })
            })?;
            sets.push(set);
        }
        if let Some(text) = &self.elements_yaml {
            let elements_yaml_error = |message: String| {
                GeneratorError::here(GeneratorErrorReason::ElementsYaml { message })
            };
            let parsed: Value =
                serde_saphyr::from_str(text).map_err(|e| elements_yaml_error(e.to_string()))?;
            let elements = match parsed {
                Value::Null => Vec::new(),
                Value::Array(items) => items,
                other => {
                    return Err(elements_yaml_error(format!(
                        "expected a list of maps, found {}",
                        kind_name(&other)
                    )));
                }
            };
            for (index, element) in elements.iter().enumerate() {
                let set = element_params(element, ctx.mode()).map_err(|message| {
                    elements_yaml_error(format!("element {index}: {message}"))
                })?;
                sets.push(set);
            }
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

fn element_params(element: &Value, mode: &TemplateMode) -> Result<Params, String> {
    let Value::Object(fields) = element else {
        return Err(format!("expected a map, found {}", kind_name(element)));
    };
    match mode {
        TemplateMode::Go { .. } => Ok(fields.clone().into_iter().collect()),
        TemplateMode::Fast => flat_string_params(fields),
    }
}

fn flat_string_params(fields: &Map<String, Value>) -> Result<Params, String> {
    let mut params = Params::new();
    for (key, value) in fields {
        if key == "values" {
            let Value::Object(values) = value else {
                return Err(format!("values must be a map, found {}", kind_name(value)));
            };
            for (k, v) in values {
                params.insert(
                    format!("values.{k}"),
                    Value::String(string_value(&format!("values.{k}"), v)?),
                );
            }
        } else {
            params.insert(key.clone(), Value::String(string_value(key, value)?));
        }
    }
    Ok(params)
}

fn string_value(key: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!(
            "{key} must be a string in fasttemplate mode, found {} (quote it, or use goTemplate)",
            kind_name(other)
        )),
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::generator::GeneratorErrorReason;
    use crate::testing::{fast, go, params, run};

    #[test]
    fn fasttemplate_elements_are_flat_strings_with_values() {
        let spec = json!({"list": {"elements": [
            {"cluster": "eu", "url": "https://eu", "values": {"replicas": "3"}},
            {"cluster": "us", "url": "https://us"},
        ]}});
        let sets = run(&fast(), &spec).unwrap();
        assert_eq!(
            sets,
            vec![
                params(json!({"cluster": "eu", "url": "https://eu", "values.replicas": "3"})),
                params(json!({"cluster": "us", "url": "https://us"})),
            ]
        );
    }

    #[test]
    fn fasttemplate_rejects_non_string_values() {
        for element in [
            json!({"replicas": 3}),
            json!({"values": {"n": true}}),
            json!({"values": "x"}),
            json!("x"),
        ] {
            let spec = json!({"list": {"elements": [{"ok": "1"}, element]}});
            let err = run(&fast(), &spec).unwrap_err();
            assert_eq!(err.at, "list", "{element}");
            assert!(
                matches!(
                    err.reason,
                    GeneratorErrorReason::ListElement { index: 1, .. }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn gotemplate_keeps_elements_structured() {
        let spec = json!({"list": {"elements": [{"name": "a", "replicas": 3, "tags": ["x"], "nested": {"k": true}}]}});
        assert_eq!(
            run(&go(), &spec).unwrap(),
            vec![params(
                json!({"name": "a", "replicas": 3, "tags": ["x"], "nested": {"k": true}})
            )]
        );
    }

    #[test]
    fn elements_yaml_is_appended_after_elements() {
        let spec = json!({"list": {
            "elements": [{"name": "first"}],
            "elementsYaml": "- name: second\n  size: 2\n- {\"name\": \"third\"}\n",
        }});
        assert_eq!(
            run(&go(), &spec).unwrap(),
            vec![
                params(json!({"name": "first"})),
                params(json!({"name": "second", "size": 2})),
                params(json!({"name": "third"})),
            ]
        );
        let spec = json!({"list": {"elementsYaml": "- name: x\n  size: 2\n"}});
        let err = run(&fast(), &spec).unwrap_err();
        assert!(
            err.to_string()
                .contains("elementsYaml: element 0: size must be a string"),
            "{err}"
        );
    }

    #[test]
    fn elements_yaml_must_be_a_list() {
        for text in ["name: x", "[1, 2"] {
            let spec = json!({"list": {"elementsYaml": text}});
            let err = run(&go(), &spec).unwrap_err();
            assert!(
                matches!(err.reason, GeneratorErrorReason::ElementsYaml { .. }),
                "{text}: {err}"
            );
        }
        assert_eq!(
            run(&go(), &json!({"list": {"elementsYaml": ""}})).unwrap(),
            vec![]
        );
    }
}

//! The `plugin` generator (Argo CD's generator plugins): the ConfigMap `configMapRef.name` gives
//! the service's `baseUrl` and its `token` (`$<secret>:<key>` names a key of a Secret, `$<key>`
//! a key of `argocd-secret`, anything else is the token itself); the generator POSTs
//! `{"applicationSetName", "input": {"parameters"}}` to `<baseUrl>/api/v1/getparams.execute` and
//! makes one parameter set of each object of the answer's `output.parameters`, plus
//! `generator.input.parameters` (what was sent) and templated `values`.

use serde_json::{Map, Value, json};

use crate::generator::{
    GenerateContext, Generator, GeneratorError, GeneratorErrorReason, add_templated_values,
};
use crate::params::{Params, format_scalar};
use crate::source::{NamespaceObjects, ObjectsError};
use crate::spec::PluginGenerator;
use crate::template::TemplateMode;

/// The Secret a `$<key>` token reference reads, as in Argo CD.
pub const DEFAULT_TOKEN_SECRET: &str = "argocd-secret";

/// The path Argo CD's plugin protocol POSTs to, under `baseUrl`.
pub const GETPARAMS_PATH: &str = "/api/v1/getparams.execute";

impl Generator for PluginGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let namespace = ctx.namespace();
        let config_map = self.config_map_ref.name.clone();
        let config_error = |source| {
            GeneratorError::here(GeneratorErrorReason::PluginConfig {
                config_map: config_map.clone(),
                source: Box::new(source),
            })
        };
        let config = namespace
            .objects
            .config_map(&config_map)
            .map_err(config_error)?;
        let entry = |key: &str| {
            config.get(key).ok_or_else(|| {
                config_error(ObjectsError::MissingKey {
                    kind: "ConfigMap".into(),
                    name: config_map.clone(),
                    key: key.into(),
                })
            })
        };
        let url = format!(
            "{}{GETPARAMS_PATH}",
            entry("baseUrl")?.trim_end_matches('/')
        );
        let token = resolve_token(entry("token")?, namespace.objects).map_err(config_error)?;
        let parameters = self
            .input
            .as_ref()
            .map(|input| input.parameters.clone())
            .unwrap_or_default();
        let body = json!({
            "applicationSetName": namespace.appset,
            "input": {"parameters": parameters},
        });
        let answer = namespace
            .plugins
            .call(&url, &token, &body)
            .map_err(|source| {
                GeneratorError::here(GeneratorErrorReason::PluginCall {
                    config_map: config_map.clone(),
                    url: url.clone(),
                    source: Box::new(source),
                })
            })?;
        let output_error = |message: String| {
            GeneratorError::here(GeneratorErrorReason::PluginOutput {
                config_map: config_map.clone(),
                url: url.clone(),
                message,
            })
        };
        let objects = output_parameters(&answer).map_err(output_error)?;
        let mut sets = Vec::with_capacity(objects.len());
        for object in objects {
            let mut params = plugin_params(object, ctx.mode());
            add_input(&mut params, &parameters, ctx.mode());
            add_templated_values(&self.values, &mut params, ctx)?;
            sets.push(params);
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

/// The token a ConfigMap's `token` entry stands for.
fn resolve_token(reference: &str, objects: &dyn NamespaceObjects) -> Result<String, ObjectsError> {
    let Some(reference) = reference.strip_prefix('$') else {
        return Ok(reference.to_string());
    };
    match reference.split_once(':') {
        Some((secret, key)) => objects.secret_value(secret, key),
        None => objects.secret_value(DEFAULT_TOKEN_SECRET, reference),
    }
}

/// The objects of `output.parameters` in a plugin's answer.
fn output_parameters(answer: &Value) -> Result<&Vec<Value>, String> {
    let list = answer
        .get("output")
        .and_then(|output| output.get("parameters"))
        .ok_or("the answer has no output.parameters")?;
    let Value::Array(items) = list else {
        return Err("output.parameters is not a list".into());
    };
    if let Some(index) = items.iter().position(|item| !item.is_object()) {
        return Err(format!("output.parameters[{index}] is not a map"));
    }
    Ok(items)
}

/// One answered object as parameters: kept as it is in goTemplate mode; flattened to strings
/// (`a.b` keys, scalars printed, lists as JSON) in fasttemplate mode.
fn plugin_params(object: &Value, mode: &TemplateMode) -> Params {
    let fields = object.as_object().cloned().unwrap_or_default();
    match mode {
        TemplateMode::Go { .. } => fields.into_iter().collect(),
        TemplateMode::Fast => {
            let mut params = Params::new();
            flatten_into(&mut params, "", &fields);
            params
        }
    }
}

fn flatten_into(params: &mut Params, prefix: &str, fields: &Map<String, Value>) {
    for (key, value) in fields {
        let key = format!("{prefix}{key}");
        match value {
            Value::Object(nested) => flatten_into(params, &format!("{key}."), nested),
            Value::Array(_) => params.insert(key, Value::String(value.to_string())),
            scalar => params.insert(key, Value::String(format_scalar(scalar))),
        }
    }
}

/// `generator.input.parameters`: what the plugin was sent, as Argo CD adds it.
fn add_input(params: &mut Params, parameters: &Map<String, Value>, mode: &TemplateMode) {
    match mode {
        TemplateMode::Go { .. } => params.insert(
            "generator".into(),
            json!({"input": {"parameters": parameters}}),
        ),
        TemplateMode::Fast => flatten_into(params, "generator.input.parameters.", parameters),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};

    use crate::generator::{GenerateContext, GeneratorErrorReason, NamespaceSources, generate};
    use crate::params::Params;
    use crate::source::{NamespaceObjects, ObjectsError, PluginCallError, PluginService};
    use crate::spec::GeneratorSpec;
    use crate::template::Renderer;
    use crate::testing::{MemoryGit, MemoryInventory, MemoryObjects, fast, go, params};

    /// A plugin answering `answer` and remembering what it was asked.
    struct FakePlugin {
        answer: Result<Value, PluginCallError>,
        asked: Mutex<Vec<(String, String, Value)>>,
    }

    impl FakePlugin {
        fn answering(answer: Result<Value, PluginCallError>) -> Self {
            Self {
                answer,
                asked: Mutex::default(),
            }
        }
    }

    impl PluginService for FakePlugin {
        fn call(&self, url: &str, token: &str, body: &Value) -> Result<Value, PluginCallError> {
            self.asked
                .lock()
                .unwrap()
                .push((url.into(), token.into(), body.clone()));
            self.answer.clone()
        }
    }

    fn objects(token: &str) -> MemoryObjects {
        MemoryObjects::default()
            .with_config_map(
                "my-plugin",
                &[("baseUrl", "http://plugin.test:4355/"), ("token", token)],
            )
            .with_secret("plugin-secrets", "token", "s3cret")
            .with_secret("argocd-secret", "plugin.my.token", "from-argocd-secret")
    }

    fn run(
        renderer: &Renderer,
        objects: &dyn NamespaceObjects,
        plugin: &FakePlugin,
        spec: Value,
    ) -> Result<Vec<Params>, crate::generator::GeneratorError> {
        let spec: GeneratorSpec = serde_json::from_value(spec).unwrap();
        let (inventory, git) = (MemoryInventory::default(), MemoryGit::default());
        let ctx =
            GenerateContext::new(renderer, &inventory, &git).with_namespace(NamespaceSources {
                appset: "fleet",
                objects,
                plugins: plugin,
                scm: &crate::source::Offline,
            });
        Ok(generate(&spec, &ctx)?
            .into_iter()
            .map(|s| s.params)
            .collect())
    }

    fn spec() -> Value {
        json!({"plugin": {
            "configMapRef": {"name": "my-plugin"},
            "input": {"parameters": {"env": "prod", "regions": ["eu", "us"]}},
            "values": {"team": "a", "label": "{{ .region }}"},
        }})
    }

    #[test]
    fn asks_the_plugin_and_yields_its_parameters_in_go_mode() {
        let plugin = FakePlugin::answering(Ok(json!({"output": {"parameters": [
            {"region": "eu", "replicas": 2},
            {"region": "us", "replicas": 3},
        ]}})));
        let sets = run(&go(), &objects("$plugin-secrets:token"), &plugin, spec()).unwrap();
        let input = json!({"input": {"parameters": {"env": "prod", "regions": ["eu", "us"]}}});
        assert_eq!(
            sets,
            vec![
                params(
                    json!({"region": "eu", "replicas": 2, "generator": input, "values": {"team": "a", "label": "eu"}})
                ),
                params(
                    json!({"region": "us", "replicas": 3, "generator": input, "values": {"team": "a", "label": "us"}})
                ),
            ]
        );
        let asked = plugin.asked.lock().unwrap();
        assert_eq!(
            *asked,
            vec![(
                "http://plugin.test:4355/api/v1/getparams.execute".to_string(),
                "s3cret".to_string(),
                json!({"applicationSetName": "fleet", "input": {"parameters": {"env": "prod", "regions": ["eu", "us"]}}}),
            )]
        );
    }

    #[test]
    fn fasttemplate_parameters_are_flat_strings() {
        let plugin = FakePlugin::answering(Ok(json!({"output": {"parameters": [
            {"region": "eu", "replicas": 2, "meta": {"tier": "gold"}, "zones": ["a", "b"]},
        ]}})));
        let spec = json!({"plugin": {
            "configMapRef": {"name": "my-plugin"},
            "input": {"parameters": {"env": "prod"}},
            "values": {"where": "{{region}}-{{meta.tier}}"},
        }});
        let sets = run(&fast(), &objects("$plugin.my.token"), &plugin, spec).unwrap();
        assert_eq!(
            sets,
            vec![params(json!({
                "region": "eu",
                "replicas": "2",
                "meta.tier": "gold",
                "zones": "[\"a\",\"b\"]",
                "generator.input.parameters.env": "prod",
                "values.where": "eu-gold",
            }))]
        );
        assert_eq!(plugin.asked.lock().unwrap()[0].1, "from-argocd-secret");
    }

    #[test]
    fn failures_name_the_plugin_and_the_reason() {
        type Case = (
            &'static str,
            MemoryObjects,
            Result<Value, PluginCallError>,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                "no ConfigMap",
                MemoryObjects::default(),
                Ok(json!({})),
                "plugin: plugin my-plugin: ConfigMap my-plugin not found",
            ),
            (
                "no Secret key",
                objects("$plugin-secrets:other"),
                Ok(json!({})),
                "plugin my-plugin: Secret plugin-secrets has no key \"other\"",
            ),
            (
                "HTTP 500",
                objects("literal"),
                Err(PluginCallError::Status {
                    status: 500,
                    body: "boom".into(),
                }),
                "plugin my-plugin (http://plugin.test:4355/api/v1/getparams.execute): answered HTTP 500: boom",
            ),
            (
                "timeout",
                objects("literal"),
                Err(PluginCallError::Timeout { seconds: 30 }),
                "no answer within 30 s",
            ),
            (
                "no output",
                objects("literal"),
                Ok(json!({"parameters": []})),
                "the answer has no output.parameters",
            ),
            (
                "not maps",
                objects("literal"),
                Ok(json!({"output": {"parameters": [{}, "x"]}})),
                "output.parameters[1] is not a map",
            ),
        ];
        for (name, objects, answer, expected) in cases {
            let plugin = FakePlugin::answering(answer);
            let err = run(&go(), &objects, &plugin, spec()).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(expected), "{name}: {text}");
            assert_eq!(err.at, "plugin", "{name}");
        }
        let err = run(
            &go(),
            &MemoryObjects::default(),
            &FakePlugin::answering(Ok(json!({}))),
            spec(),
        )
        .unwrap_err();
        assert!(matches!(
            err.reason,
            GeneratorErrorReason::PluginConfig { source, .. }
                if matches!(*source, ObjectsError::NotFound { .. })
        ));
    }

    #[test]
    fn a_literal_token_is_used_as_it_is_and_no_input_sends_empty_parameters() {
        let plugin = FakePlugin::answering(Ok(json!({"output": {"parameters": []}})));
        let spec = json!({"plugin": {"configMapRef": {"name": "my-plugin"}}});
        assert_eq!(
            run(&go(), &objects("plain"), &plugin, spec).unwrap(),
            vec![]
        );
        let asked = plugin.asked.lock().unwrap();
        assert_eq!(asked[0].1, "plain");
        assert_eq!(
            asked[0].2,
            json!({"applicationSetName": "fleet", "input": {"parameters": {}}})
        );
    }
}

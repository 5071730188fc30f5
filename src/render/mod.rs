//! Rendering an ApplicationSet into Applications, offline and all-or-nothing: generate parameter
//! sets → merge each generator's template override → render field by field → apply
//! `templatePatch` → validate names and destinations. Nothing is created here; an error anywhere
//! means no Application at all.

pub mod admission;

use std::collections::BTreeMap;
use std::fmt;

use flotilla_generators::generator::{
    GenerateContext, GeneratedSet, GeneratorError, NamespaceSources, generate_all,
};
use flotilla_generators::params::Params;
use flotilla_generators::source::{ClusterInventory, GitReader};
use flotilla_generators::strict::{self, StrictError, UnknownFields};
use flotilla_generators::template::{
    PreparedTemplate, RenderIntoError, Renderer, TemplateError, TemplateMode,
};
use serde_json::Value;

use flotilla_core::api::application_set::ApplicationSetTemplate;
use flotilla_core::api::template_merge;
use flotilla_core::api::unrendered_fields::unrendered_unknown_fields;
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use flotilla_core::manifest::{NameRule, check_label};
use flotilla_core::rollout::reverse_deletion::{DeletionOrderError, check_deletion_order};

/// The data sources generators read.
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    pub clusters: &'a dyn ClusterInventory,
    pub git: &'a dyn GitReader,
    /// The ApplicationSet's namespace: ConfigMaps, Secrets, custom resources and plugins.
    pub namespace: NamespaceSources<'a>,
}

impl<'a> Sources<'a> {
    /// Clusters and repositories only: plugin and clusterDecisionResource generators fail,
    /// saying they need a cluster.
    #[must_use]
    pub fn offline(clusters: &'a dyn ClusterInventory, git: &'a dyn GitReader) -> Self {
        Self {
            clusters,
            git,
            namespace: NamespaceSources::offline(),
        }
    }
}

/// Which parameter set an error comes from: its position and a short view of its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSetRef {
    pub index: usize,
    pub summary: String,
}

impl ParamSetRef {
    const MAX_SUMMARY: usize = 200;

    fn new(index: usize, params: &Params) -> Self {
        let mut summary = serde_json::to_string(params).unwrap_or_default();
        if summary.len() > Self::MAX_SUMMARY {
            let cut = (0..=Self::MAX_SUMMARY)
                .rev()
                .find(|i| summary.is_char_boundary(*i))
                .unwrap_or(0);
            summary.truncate(cut);
            summary.push('…');
        }
        Self { index, summary }
    }
}

impl fmt::Display for ParamSetRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "parameter set {} {}", self.index, self.summary)
    }
}

/// Where the fields of a rendered template that Flotilla does not know came from (the template
/// itself is checked when the ApplicationSet is read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldsOrigin {
    /// A generator's `template` override.
    Override,
    /// `templatePatch`.
    Patch,
    /// A generator's `template` override or `templatePatch`.
    OverrideOrPatch,
}

impl FieldsOrigin {
    fn of(over: bool, patch: bool) -> Self {
        match (over, patch) {
            (true, true) => Self::OverrideOrPatch,
            (true, false) => Self::Override,
            (false, _) => Self::Patch,
        }
    }
}

impl fmt::Display for FieldsOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Override => "the generator's template override",
            Self::Patch => "templatePatch",
            Self::OverrideOrPatch => "the generator's template override or templatePatch",
        })
    }
}

/// One generated Application that cannot be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplicationProblem {
    pub set: ParamSetRef,
    pub name: String,
    pub reason: String,
}

impl fmt::Display for ApplicationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Application {:?} from {}: {}",
            self.name, self.set, self.reason
        )
    }
}

/// Why an ApplicationSet could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("ApplicationSet {appset}: spec.{error}")]
    DeletionOrder {
        appset: String,
        #[source]
        error: DeletionOrderError,
    },
    #[error("ApplicationSet {appset}: {fields}")]
    SpecFields {
        appset: String,
        fields: UnknownFields,
    },
    #[error("ApplicationSet {appset}: goTemplateOptions: {error}")]
    TemplateOptions {
        appset: String,
        #[source]
        error: TemplateError,
    },
    #[error("ApplicationSet {appset}: spec.{error}")]
    Generate {
        appset: String,
        #[source]
        error: Box<GeneratorError>,
    },
    #[error("ApplicationSet {appset}: template, {set}: {error}")]
    Template {
        appset: String,
        set: ParamSetRef,
        #[source]
        error: TemplateError,
    },
    #[error("ApplicationSet {appset}: templatePatch, {set}: {message}")]
    Patch {
        appset: String,
        set: ParamSetRef,
        message: String,
    },
    #[error("ApplicationSet {appset}: {origin}, {set}: {fields}")]
    Fields {
        appset: String,
        origin: FieldsOrigin,
        set: ParamSetRef,
        fields: UnknownFields,
    },
    #[error("ApplicationSet {appset}: {} invalid Application(s); nothing was generated:\n  {}", problems.len(), problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Invalid {
        appset: String,
        problems: Vec<ApplicationProblem>,
    },
}

/// Renders every Application of `appset`, sorted by name.
///
/// # Errors
/// The first generator or template error, or every invalid Application at once.
pub fn render_application_set(
    appset: &ApplicationSet,
    sources: Sources<'_>,
) -> Result<Vec<Application>, RenderError> {
    let appset_name = appset.metadata.name.clone().unwrap_or_default();
    let spec = &appset.spec;
    check_deletion_order(spec.strategy.as_ref()).map_err(|error| RenderError::DeletionOrder {
        appset: appset_name.clone(),
        error,
    })?;
    unrendered_unknown_fields(spec)
        .refuse()
        .map_err(|fields| RenderError::SpecFields {
            appset: appset_name.clone(),
            fields,
        })?;
    let mode = TemplateMode::from_options(spec.go_template, &spec.go_template_options).map_err(
        |error| RenderError::TemplateOptions {
            appset: appset_name.clone(),
            error,
        },
    )?;
    let renderer = Renderer::new(mode);
    // Git generators read with the template's project's credentials, unless it is templated
    // (then only unscoped Secrets serve them), as in Argo CD.
    let project = Some(spec.template.spec.project.as_str())
        .filter(|project| !project.is_empty() && !project.contains("{{"));
    let context = GenerateContext::new(&renderer, sources.clusters, sources.git)
        .with_namespace(sources.namespace)
        .with_project(project);
    let sets = generate_all(&spec.generators, &context).map_err(|error| RenderError::Generate {
        appset: appset_name.clone(),
        error: Box::new(error),
    })?;

    let base = serde_json::to_value(&spec.template).unwrap_or(Value::Null);
    let template_error = |set: ParamSetRef, error| RenderError::Template {
        appset: appset_name.clone(),
        set,
        error,
    };
    let prepared_base = renderer
        .prepare(&base)
        .map_err(|error| template_error(ParamSetRef::new(0, &Params::new()), error))?;

    let not_a_template = |set: ParamSetRef, message: String| RenderError::Patch {
        appset: appset_name.clone(),
        set,
        message: format!("the result is not a valid Application template: {message}"),
    };

    // Allocated once: growing a vector of Applications (large values) moves them all each time.
    let mut rendered = Vec::with_capacity(sets.len());
    for (index, GeneratedSet { params, template }) in sets.iter().enumerate() {
        // The reference to the parameter set is only built for an error message.
        let set = || ParamSetRef::new(index, params);
        let prepared_override;
        let prepared = match template {
            None => &prepared_base,
            Some(over) => {
                prepared_override = prepare_override(&renderer, over, &base)
                    .map_err(|error| template_error(set(), error))?;
                &prepared_override
            }
        };
        let template: ApplicationSetTemplate = match (template, spec.template_patch.as_deref()) {
            (None, None) => prepared.render_into(params).map_err(|error| match error {
                RenderIntoError::Template(error) => template_error(set(), error),
                RenderIntoError::Shape(message) => not_a_template(set(), message),
            })?,
            (over, patch) => {
                let mut value = prepared
                    .render(params)
                    .map_err(|error| template_error(set(), error))?;
                if let Some(patch) = patch {
                    value = apply_template_patch(&renderer, patch, value, params).map_err(
                        |message| RenderError::Patch {
                            appset: appset_name.clone(),
                            set: set(),
                            message,
                        },
                    )?;
                }
                // An override or a patch may add any field: the result is read strictly, so
                // one Flotilla does not implement is refused by name, never dropped.
                strict::from_value(&value).map_err(|error| match error {
                    StrictError::Unknown(fields) => RenderError::Fields {
                        appset: appset_name.clone(),
                        origin: FieldsOrigin::of(over.is_some(), patch.is_some()),
                        set: set(),
                        fields,
                    },
                    StrictError::Invalid(error) => not_a_template(set(), error.to_string()),
                })?
            }
        };
        rendered.push(to_application(appset, &appset_name, template));
    }
    validated(&appset_name, &sets, rendered)
}

fn prepare_override(
    renderer: &Renderer,
    over: &Value,
    base: &Value,
) -> Result<PreparedTemplate, TemplateError> {
    renderer.prepare(&template_merge::fill_empty(over, base))
}

/// Renders `templatePatch` with `params`, parses it as YAML and merges it onto `value`;
/// `spec.project` must stay what the template says. A patch that renders to nothing (its whole
/// text inside an `if` that is false) leaves the template as it is, as in Argo CD.
fn apply_template_patch(
    renderer: &Renderer,
    patch: &str,
    mut value: Value,
    params: &Params,
) -> Result<Value, String> {
    let text = renderer
        .render_str("templatePatch", patch, params)
        .map_err(|e| e.to_string())?;
    let patch: Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("the rendered patch is not valid YAML: {e}"))?;
    if patch.is_null() {
        return Ok(value);
    }
    let project_before = value.pointer("/spec/project").cloned();
    template_merge::merge_patch(&mut value, &patch);
    let project_after = value.pointer("/spec/project").cloned();
    if project_before != project_after {
        return Err(format!(
            "templatePatch may not change spec.project (from {} to {})",
            project_before.unwrap_or(Value::Null),
            project_after.unwrap_or(Value::Null)
        ));
    }
    Ok(value)
}

/// Validates the rendered templates (`rendered[i]` comes from `sets[i]`, every one `Some`) and
/// turns them into Applications sorted by name, or reports every invalid one. Only names and
/// positions are sorted: each template is taken from its slot once, straight into its place in
/// the result.
/// `applications` (rendered from `sets`, in order) sorted by name, or every problem of them.
fn validated(
    appset_name: &str,
    sets: &[GeneratedSet],
    mut applications: Vec<Application>,
) -> Result<Vec<Application>, RenderError> {
    let mut problems = Vec::new();
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, application) in applications.iter().enumerate() {
        let name = application.metadata.name.as_deref().unwrap_or_default();
        let problem = |reason: String| ApplicationProblem {
            set: ParamSetRef::new(index, &sets[index].params),
            name: name.to_string(),
            reason,
        };
        if let Err(reason) = NameRule::Subdomain.check(name) {
            problems.push(problem(format!(
                "{reason}; an Application name must be {}",
                NameRule::Subdomain
            )));
            continue;
        }
        // The template's labels; the ApplicationSet's own label is set whatever it says.
        let labels = application.metadata.labels.iter().flatten();
        if let Some(reason) = labels
            .filter(|(key, _)| *key != APPLICATION_SET_LABEL)
            .find_map(|(k, v)| check_label(k, v).err())
        {
            problems.push(problem(format!("metadata.labels: {reason}")));
            continue;
        }
        let destination = &application.spec.destination;
        if destination.server.is_some() == destination.name.is_some() {
            problems.push(problem(
                "spec.destination needs exactly one of server or name".to_string(),
            ));
            continue;
        }
        if application.spec.operation.is_some() {
            problems.push(problem(
                "spec.operation: a template cannot request a sync (use syncPolicy or a RollingSync strategy)".to_string(),
            ));
            continue;
        }
        if let Some(first) = by_name.get(name) {
            let first = ParamSetRef::new(*first, &sets[*first].params);
            problems.push(problem(format!("the same name is generated by {first}")));
            continue;
        }
        by_name.insert(name, index);
    }
    if !problems.is_empty() {
        return Err(RenderError::Invalid {
            appset: appset_name.to_string(),
            problems,
        });
    }
    // Every name is unique: sorted in place, not copied.
    applications.sort_unstable_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(applications)
}

fn to_application(
    appset: &ApplicationSet,
    appset_name: &str,
    template: ApplicationSetTemplate,
) -> Application {
    let meta = template.metadata;
    let mut labels = meta.labels;
    labels.insert(APPLICATION_SET_LABEL.to_string(), appset_name.to_string());
    // The name is moved in rather than copied by `Application::new`.
    let mut application = Application::new("", template.spec);
    application.metadata.name = Some(meta.name);
    // As in Argo CD, an Application lives in its ApplicationSet's namespace whatever the
    // template says (the template's only counts for an ApplicationSet read without one).
    application.metadata.namespace = appset.metadata.namespace.clone().or(meta.namespace);
    application.metadata.labels = Some(labels);
    application.metadata.annotations = (!meta.annotations.is_empty()).then_some(meta.annotations);
    application.metadata.finalizers = (!meta.finalizers.is_empty()).then_some(meta.finalizers);
    application
}

#[cfg(test)]
mod tests;

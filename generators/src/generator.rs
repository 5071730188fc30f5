//! The entry point of generation: dispatches each `spec.generators` entry to the generator of its
//! kind, applies the entry's `selector`, attaches its `template` override, and names where an
//! error happened (`generators[1].matrix.generators[0].git`). The generators themselves live in
//! one module each.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::params::{self, Params};
use crate::scm_api::paging::ScmError;
use crate::scm_api::rate_limit::RetryAfter;
use crate::selector::{LabelSelector, SelectorError};
use crate::source::{
    ClusterInventory, GitError, GitReader, InventoryError, NamespaceObjects, ObjectsError, Offline,
    PluginCallError, PluginService, ScmApi,
};
use crate::spec::{GeneratorSpec, MatrixGenerator, MergeGenerator, NestedGeneratorSpec};
use crate::strict::{self, StrictError, UnknownFields};
use crate::template::{Renderer, TemplateError, TemplateMode};

/// What generation reads: the renderer (and so the template mode) and the injected data sources.
/// Git revisions are resolved once per context, so one generation sees one commit per
/// repository and revision even when a matrix lists the same repository many times.
pub struct GenerateContext<'a> {
    renderer: &'a Renderer,
    clusters: &'a dyn ClusterInventory,
    git: &'a dyn GitReader,
    namespace: NamespaceSources<'a>,
    /// The project whose repository credentials git generators fetch with.
    project: Option<&'a str>,
    snapshots: Mutex<BTreeMap<(String, String), GitSnapshot>>,
}

/// What the plugin, clusterDecisionResource, pullRequest and scmProvider generators read: the
/// ApplicationSet's name (sent to plugins), the objects of its namespace (tokens), the plugin
/// services and the SCM providers' APIs.
#[derive(Clone, Copy)]
pub struct NamespaceSources<'a> {
    pub appset: &'a str,
    pub objects: &'a dyn NamespaceObjects,
    pub plugins: &'a dyn PluginService,
    pub scm: &'a dyn ScmApi,
}

impl NamespaceSources<'_> {
    /// No cluster: every read fails, saying so.
    #[must_use]
    pub fn offline() -> NamespaceSources<'static> {
        NamespaceSources {
            appset: "",
            objects: &Offline,
            plugins: &Offline,
            scm: &Offline,
        }
    }
}

/// A repository tree at a resolved commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitSnapshot {
    pub commit: String,
    /// Every blob path of the tree.
    pub files: Arc<Vec<String>>,
}

impl<'a> GenerateContext<'a> {
    /// A context rendering with `renderer` and reading from `clusters` and `git`, without
    /// access to the namespace's objects (see [`Self::with_namespace`]).
    #[must_use]
    pub fn new(
        renderer: &'a Renderer,
        clusters: &'a dyn ClusterInventory,
        git: &'a dyn GitReader,
    ) -> Self {
        Self {
            renderer,
            clusters,
            git,
            namespace: NamespaceSources::offline(),
            project: None,
            snapshots: Mutex::new(BTreeMap::new()),
        }
    }

    /// The same context reading the namespace's objects and plugins from `namespace`.
    #[must_use]
    pub fn with_namespace(mut self, namespace: NamespaceSources<'a>) -> Self {
        self.namespace = namespace;
        self
    }

    /// The same context fetching repositories with the credentials of `project` (see
    /// [`GitReader::resolve`]).
    #[must_use]
    pub fn with_project(mut self, project: Option<&'a str>) -> Self {
        self.project = project;
        self
    }

    /// The namespace's objects, plugin services and the ApplicationSet's name.
    #[must_use]
    pub fn namespace(&self) -> NamespaceSources<'a> {
        self.namespace
    }

    /// The renderer templated values and matrix children are rendered with.
    #[must_use]
    pub fn renderer(&self) -> &Renderer {
        self.renderer
    }

    /// Whether parameters are flat strings (fasttemplate) or structured (goTemplate).
    #[must_use]
    pub fn mode(&self) -> &TemplateMode {
        self.renderer.mode()
    }

    /// The cluster inventory.
    #[must_use]
    pub fn clusters(&self) -> &dyn ClusterInventory {
        self.clusters
    }

    /// The git reader, for reading blobs of a [`GitSnapshot`].
    #[must_use]
    pub fn git(&self) -> &dyn GitReader {
        self.git
    }

    /// The tree of `repo_url` at `revision`, resolved and listed on first use.
    ///
    /// # Errors
    /// The revision cannot be resolved or the tree cannot be listed.
    pub fn snapshot(&self, repo_url: &str, revision: &str) -> Result<GitSnapshot, GitError> {
        let key = (repo_url.to_string(), revision.to_string());
        if let Some(found) = self.lock_snapshots().get(&key) {
            return Ok(found.clone());
        }
        let commit = self.git.resolve(repo_url, revision, self.project)?;
        let mut files = self.git.list_files(repo_url, &commit)?;
        files.sort();
        let snapshot = GitSnapshot {
            commit,
            files: Arc::new(files),
        };
        self.lock_snapshots().insert(key, snapshot.clone());
        Ok(snapshot)
    }

    fn lock_snapshots(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), GitSnapshot>> {
        // The map is only ever inserted into whole, so a poisoned lock still holds valid data.
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One parameter set, with the template override of the generator that produced it (merged onto
/// the ApplicationSet's template by the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedSet {
    pub params: Params,
    pub template: Option<Value>,
}

/// A generator that failed; `at` names it (`generators[1].matrix.generators[0].git`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{at}: {reason}")]
pub struct GeneratorError {
    pub at: String,
    pub reason: GeneratorErrorReason,
}

/// Why a generator failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeneratorErrorReason {
    #[error(
        "no generator kind is set (expected one of list, clusters, git, matrix, merge, plugin, clusterDecisionResource, pullRequest, scmProvider)"
    )]
    NoKind,
    #[error("several generator kinds are set ({}); set exactly one", .0.join(", "))]
    SeveralKinds(Vec<&'static str>),
    #[error("git generator needs either directories or files")]
    NoGitPaths,
    #[error("git generator sets both directories and files; set only one")]
    BothGitPaths,
    #[error("element {index}: {message}")]
    ListElement { index: usize, message: String },
    #[error("elementsYaml: {message}")]
    ElementsYaml { message: String },
    #[error("invalid glob {pattern:?}: {message}")]
    InvalidGlob { pattern: String, message: String },
    #[error("repository {repo}: {source}")]
    Git { repo: String, source: GitError },
    #[error("repository {repo}, file {path}: {message}")]
    GitFile {
        repo: String,
        path: String,
        message: String,
    },
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    #[error("selector: {0}")]
    Selector(#[from] SelectorError),
    #[error("template: {0}")]
    Template(#[from] TemplateError),
    #[error("matrix needs exactly two generators, found {0}")]
    MatrixChildren(usize),
    #[error("merge needs at least two generators, found {0}")]
    MergeChildren(usize),
    #[error("merge needs at least one merge key")]
    NoMergeKeys,
    #[error("parameter sets are not unique by the merge keys: {key} occurs more than once")]
    DuplicateMergeKey { key: String },
    #[error(
        "parameter {key:?} has different values in the two generators: {first:?} and {second:?}"
    )]
    ConflictingParam {
        key: String,
        first: String,
        second: String,
    },
    #[error("plugin {config_map}: {source}")]
    PluginConfig {
        config_map: String,
        #[source]
        source: Box<ObjectsError>,
    },
    #[error("plugin {config_map} ({url}): {source}")]
    PluginCall {
        config_map: String,
        url: String,
        #[source]
        source: Box<PluginCallError>,
    },
    #[error("plugin {config_map} ({url}): {message}")]
    PluginOutput {
        config_map: String,
        url: String,
        message: String,
    },
    #[error("clusterDecisionResource {config_map}: {source}")]
    DecisionConfig {
        config_map: String,
        #[source]
        source: Box<ObjectsError>,
    },
    #[error("clusterDecisionResource {config_map}: {message}")]
    DecisionResource { config_map: String, message: String },
    /// A pullRequest or scmProvider generator sets no provider, or several.
    #[error("{0}")]
    ScmProviders(String),
    /// A field of a pullRequest or scmProvider generator (`github.appSecretName`).
    #[error("{field}: {message}")]
    ScmField { field: String, message: String },
    #[error("{field}: {source}")]
    ScmSecret {
        field: String,
        #[source]
        source: Box<ObjectsError>,
    },
    /// Asking the provider's API failed; `provider` is its field (`github`).
    #[error("{provider}: {source}")]
    ScmApi {
        provider: &'static str,
        #[source]
        source: Box<ScmError>,
    },
    #[error("invalid nested {kind}: {message}")]
    InvalidNested { kind: &'static str, message: String },
    /// Fields of a nested generator (kept as raw JSON by the schema) that Flotilla does not know.
    #[error(transparent)]
    Unknown(#[from] UnknownFields),
    #[error(
        "a nested {kind} may only contain list, clusters, git, plugin, clusterDecisionResource, pullRequest and scmProvider generators (nesting is limited to one level)"
    )]
    NestedTooDeep { kind: &'static str },
}

impl GeneratorError {
    /// An error at the generator being expanded; callers prefix where it is.
    #[must_use]
    pub fn here(reason: impl Into<GeneratorErrorReason>) -> Self {
        Self {
            at: String::new(),
            reason: reason.into(),
        }
    }

    /// When to generate again, if a provider's API answered that the client is rate limited.
    #[must_use]
    pub fn retry_after(&self) -> Option<RetryAfter> {
        match &self.reason {
            GeneratorErrorReason::ScmApi { source, .. } => match **source {
                ScmError::RateLimited { retry, .. } => Some(retry),
                _ => None,
            },
            _ => None,
        }
    }

    /// The same error seen from one level up: `segment` is prepended to the location.
    #[must_use]
    pub fn within(mut self, segment: &str) -> Self {
        self.at = if self.at.is_empty() {
            segment.to_string()
        } else {
            format!("{segment}.{}", self.at)
        };
        self
    }
}

/// One generator kind: expands its spec into parameter sets.
pub trait Generator {
    /// The parameter sets, in a deterministic order.
    ///
    /// # Errors
    /// Invalid spec, failing data source, template error; located relative to this generator.
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError>;

    /// The `template` override written on this generator.
    fn template(&self) -> Option<&Value>;
}

/// Expands one `spec.generators` entry: its generator's parameter sets, kept when they match the
/// entry's `selector`, each with the generator's template override.
///
/// # Errors
/// Zero or several kinds set, or the generator's own errors, located from this entry down.
pub fn generate(
    spec: &GeneratorSpec,
    ctx: &GenerateContext<'_>,
) -> Result<Vec<GeneratedSet>, GeneratorError> {
    let (kind, generator) = kind_of(spec)?;
    let sets = generator.generate(ctx).map_err(|e| e.within(kind))?;
    let sets = select(sets, spec.selector.as_ref()).map_err(|e| e.within("selector"))?;
    let template = generator.template().cloned();
    Ok(sets
        .into_iter()
        .map(|params| GeneratedSet {
            params,
            template: template.clone(),
        })
        .collect())
}

/// Expands every entry of `spec.generators` and concatenates the results in order.
///
/// # Errors
/// The first entry that fails, located as `generators[i]...`.
pub fn generate_all(
    specs: &[GeneratorSpec],
    ctx: &GenerateContext<'_>,
) -> Result<Vec<GeneratedSet>, GeneratorError> {
    let mut all = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        all.extend(generate(spec, ctx).map_err(|e| e.within(&format!("generators[{i}]")))?);
    }
    Ok(all)
}

/// The fields Flotilla does not know in the nested matrix/merge children of `specs` (kept as
/// raw JSON by the schema), by path from `generators` (`generators.0.matrix.generators.1.matrix
/// .generators.0.clusters.selectr`): checked before anything is generated, so a misspelt field
/// is named even when the child would never be expanded. A child not yet valid (a value
/// templated from the first child's parameters) is read as far as it goes, and strictly again
/// when it is expanded.
#[must_use]
pub fn unknown_nested_fields(specs: &[GeneratorSpec]) -> UnknownFields {
    let mut unknown = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let children = spec
            .matrix
            .iter()
            .map(|m| ("matrix", &m.generators))
            .chain(spec.merge.iter().map(|m| ("merge", &m.generators)));
        for (kind, children) in children {
            for (j, child) in children.iter().enumerate() {
                let nested = [
                    (
                        "matrix",
                        child
                            .matrix
                            .as_ref()
                            .map(strict::unknown_fields::<MatrixGenerator>),
                    ),
                    (
                        "merge",
                        child
                            .merge
                            .as_ref()
                            .map(strict::unknown_fields::<MergeGenerator>),
                    ),
                ];
                for (nested_kind, fields) in nested {
                    let at = format!("generators.{i}.{kind}.generators.{j}.{nested_kind}");
                    unknown.extend(fields.map(|f| f.under(&at).0).unwrap_or_default());
                }
            }
        }
    }
    UnknownFields(unknown)
}

/// Expands child `index` of a matrix or merge: the nested spec is converted (nested
/// matrix/merge parsed from JSON, one level deep) and generated; its template is ignored, as in
/// Argo CD.
pub(crate) fn generate_child(
    child: &NestedGeneratorSpec,
    index: usize,
    ctx: &GenerateContext<'_>,
) -> Result<Vec<Params>, GeneratorError> {
    let at = format!("generators[{index}]");
    let spec = to_spec(child).map_err(|e| e.within(&at))?;
    let sets = generate(&spec, ctx).map_err(|e| e.within(&at))?;
    Ok(sets.into_iter().map(|set| set.params).collect())
}

/// Renders `values` with `params` and adds them: `values.<key>` in fasttemplate mode, a nested
/// `values` map in goTemplate mode. Values see only the generator's own parameters, not each other.
pub(crate) fn add_templated_values(
    values: &BTreeMap<String, String>,
    params: &mut Params,
    ctx: &GenerateContext<'_>,
) -> Result<(), GeneratorError> {
    if values.is_empty() {
        return Ok(());
    }
    let mut rendered = serde_json::Map::new();
    for (key, text) in values {
        let value = ctx
            .renderer()
            .render_str(&format!("values.{key}"), text, params)
            .map_err(GeneratorError::here)?;
        rendered.insert(key.clone(), Value::String(value));
    }
    match ctx.mode() {
        TemplateMode::Fast => params.extend(
            rendered
                .into_iter()
                .map(|(k, v)| (format!("values.{k}"), v)),
        ),
        TemplateMode::Go { .. } => {
            params.insert("values".to_string(), Value::Object(rendered));
        }
    }
    Ok(())
}

fn kind_of(spec: &GeneratorSpec) -> Result<(&'static str, &dyn Generator), GeneratorError> {
    let candidates: [(&'static str, Option<&dyn Generator>); 9] = [
        ("list", spec.list.as_ref().map(|g| g as &dyn Generator)),
        (
            "clusters",
            spec.clusters.as_ref().map(|g| g as &dyn Generator),
        ),
        ("git", spec.git.as_ref().map(|g| g as &dyn Generator)),
        ("matrix", spec.matrix.as_ref().map(|g| g as &dyn Generator)),
        ("merge", spec.merge.as_ref().map(|g| g as &dyn Generator)),
        ("plugin", spec.plugin.as_ref().map(|g| g as &dyn Generator)),
        (
            "clusterDecisionResource",
            spec.cluster_decision_resource
                .as_ref()
                .map(|g| g as &dyn Generator),
        ),
        (
            "pullRequest",
            spec.pull_request.as_ref().map(|g| g as &dyn Generator),
        ),
        (
            "scmProvider",
            spec.scm_provider.as_ref().map(|g| g as &dyn Generator),
        ),
    ];
    let mut set = candidates
        .into_iter()
        .filter_map(|(kind, g)| g.map(|g| (kind, g)));
    match (set.next(), set.next()) {
        (Some(only), None) => Ok(only),
        (None, _) => Err(GeneratorError::here(GeneratorErrorReason::NoKind)),
        (Some(first), Some(second)) => {
            let kinds = [first.0, second.0]
                .into_iter()
                .chain(set.map(|(kind, _)| kind))
                .collect();
            Err(GeneratorError::here(GeneratorErrorReason::SeveralKinds(
                kinds,
            )))
        }
    }
}

fn to_spec(child: &NestedGeneratorSpec) -> Result<GeneratorSpec, GeneratorError> {
    Ok(GeneratorSpec {
        list: child.list.clone(),
        clusters: child.clusters.clone(),
        git: child.git.clone(),
        matrix: child
            .matrix
            .as_ref()
            .map(|raw| parse_nested::<MatrixGenerator>(raw, "matrix", |m| &m.generators))
            .transpose()?,
        merge: child
            .merge
            .as_ref()
            .map(|raw| parse_nested::<MergeGenerator>(raw, "merge", |m| &m.generators))
            .transpose()?,
        plugin: child.plugin.clone(),
        cluster_decision_resource: child.cluster_decision_resource.clone(),
        pull_request: child.pull_request.clone(),
        scm_provider: child.scm_provider.clone(),
        selector: child.selector.clone(),
    })
}

fn parse_nested<T: serde::de::DeserializeOwned>(
    raw: &Value,
    kind: &'static str,
    children: impl Fn(&T) -> &Vec<NestedGeneratorSpec>,
) -> Result<T, GeneratorError> {
    // Strict: the schema keeps a nested matrix/merge as raw JSON, so nothing else would refuse
    // a misspelt field there (`clusters: {selectr: …}` would select every cluster).
    let parsed: T = strict::from_value(raw).map_err(|error| {
        let reason = match error {
            StrictError::Unknown(fields) => GeneratorErrorReason::Unknown(fields),
            StrictError::Invalid(error) => GeneratorErrorReason::InvalidNested {
                kind,
                message: error.to_string(),
            },
        };
        GeneratorError::here(reason).within(kind)
    })?;
    for (i, grandchild) in children(&parsed).iter().enumerate() {
        if grandchild.matrix.is_some() || grandchild.merge.is_some() {
            return Err(
                GeneratorError::here(GeneratorErrorReason::NestedTooDeep { kind })
                    .within(&format!("generators[{i}]"))
                    .within(kind),
            );
        }
    }
    Ok(parsed)
}

fn select(
    sets: Vec<Params>,
    selector: Option<&LabelSelector>,
) -> Result<Vec<Params>, GeneratorError> {
    let Some(selector) = selector else {
        return Ok(sets);
    };
    selector.validate().map_err(GeneratorError::here)?;
    let mut kept = Vec::with_capacity(sets.len());
    for set in sets {
        if selector
            .matches(&params::flatten(&set))
            .map_err(GeneratorError::here)?
        {
            kept.push(set);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{MemoryGit, MemoryInventory, fast, go, params, run, run_sets};

    #[test]
    fn selector_filters_flattened_params_in_both_modes() {
        let fast_spec = json!({
            "list": {"elements": [{"env": "prod", "n": "1"}, {"env": "dev", "n": "2"}]},
            "selector": {"matchLabels": {"env": "prod"}},
        });
        assert_eq!(
            run(&fast(), &fast_spec).unwrap(),
            vec![params(json!({"env": "prod", "n": "1"}))]
        );

        let go_spec = json!({
            "list": {"elements": [{"app": {"env": "prod", "replicas": 2}}, {"app": {"env": "dev", "replicas": 1}}]},
            "selector": {"matchExpressions": [{"key": "app.replicas", "operator": "In", "values": ["2"]}]},
        });
        assert_eq!(
            run(&go(), &go_spec).unwrap(),
            vec![params(json!({"app": {"env": "prod", "replicas": 2}}))]
        );

        let invalid = json!({"list": {"elements": []}, "selector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}});
        let err = run(&fast(), &invalid).unwrap_err();
        assert_eq!(err.at, "selector");
        assert!(matches!(
            err.reason,
            GeneratorErrorReason::Selector(SelectorError::UnexpectedValues { .. })
        ));
    }

    #[test]
    fn exactly_one_kind_per_entry() {
        assert_eq!(
            run(&fast(), &json!({})).unwrap_err().reason,
            GeneratorErrorReason::NoKind
        );
        assert_eq!(
            GeneratorErrorReason::NoKind.to_string(),
            "no generator kind is set (expected one of list, clusters, git, matrix, merge, plugin, clusterDecisionResource, pullRequest, scmProvider)"
        );
        let err = run(&fast(), &json!({"list": {}, "git": {"repoURL": "r"}, "merge": {"generators": [], "mergeKeys": []}})).unwrap_err();
        assert_eq!(
            err.reason,
            GeneratorErrorReason::SeveralKinds(vec!["list", "git", "merge"])
        );
    }

    #[test]
    fn template_override_comes_with_each_set() {
        let spec = json!({"list": {"elements": [{"a": "1"}, {"a": "2"}], "template": {"spec": {"project": "p"}}}});
        let sets = run_sets(
            &fast(),
            &MemoryInventory::default(),
            &MemoryGit::default(),
            &spec,
        )
        .unwrap();
        assert_eq!(sets.len(), 2);
        assert!(
            sets.iter()
                .all(|s| s.template == Some(json!({"spec": {"project": "p"}})))
        );
    }

    #[test]
    fn generate_all_concatenates_and_locates_errors() {
        let renderer = fast();
        let (inventory, git) = (MemoryInventory::default(), MemoryGit::default());
        let ctx = GenerateContext::new(&renderer, &inventory, &git);
        let specs: Vec<GeneratorSpec> = serde_json::from_value(json!([
            {"list": {"elements": [{"a": "1"}]}},
            {"list": {"elements": [{"a": "2"}]}},
        ]))
        .unwrap();
        let all: Vec<_> = generate_all(&specs, &ctx)
            .unwrap()
            .into_iter()
            .map(|s| s.params)
            .collect();
        assert_eq!(
            all,
            vec![params(json!({"a": "1"})), params(json!({"a": "2"}))]
        );

        let specs: Vec<GeneratorSpec> = serde_json::from_value(json!([
            {"list": {"elements": []}},
            {"matrix": {"generators": [
                {"git": {"repoURL": "https://git.example/missing.git", "directories": [{"path": "*"}]}},
                {"list": {"elements": []}},
            ]}},
        ]))
        .unwrap();
        let err = generate_all(&specs, &ctx).unwrap_err();
        assert_eq!(err.at, "generators[1].matrix.generators[0].git");
        assert_eq!(
            err.to_string(),
            "generators[1].matrix.generators[0].git: repository https://git.example/missing.git: revision \"HEAD\" not found"
        );
    }
}

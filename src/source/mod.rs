//! The one generation step: a source directory becomes manifests here, for `render`, `plan`,
//! `sync`, `diff`, `simulate` and the controller alike. A directory is a Kustomize source when
//! `source.kustomize` is given or it holds a kustomization file, a Helm chart when `source.helm`
//! is given or it holds `Chart.yaml` (Argo CD's detection), a Config Management Plugin's output
//! when `source.plugin` is given ([`plugin`]), else plain manifests
//! ([`flotilla_core::manifest::load_directory_of`] reading this machine's files through [`disk`],
//! its Jsonnet files evaluated by a child process, [`jsonnet`]). Tools run through [`run`]; their output is parsed like manifest files, each
//! object labelled with the tool (and for Helm the template) that made it.

pub mod cache;
pub mod chart_repo;
pub mod dependencies;
pub mod disk;
pub mod helm;
pub mod helm_session;
pub mod jsonnet;
pub mod kustomize;
pub mod multi;
pub mod plugin;
pub mod run;
pub mod toolchain;
pub mod tools;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use flotilla_generators::cause::Cause;

use flotilla_core::api::application::ApplicationSource;
use flotilla_core::api::helm_source::HelmSource;
use flotilla_core::api::kustomize_source::KustomizeSource;
use flotilla_core::api::plugin_source::PluginSource;
use flotilla_core::cmp::{BuildEnvironment, KubeCapabilities};
use flotilla_core::manifest::limits::MAX_APPLICATION_OBJECTS;
use flotilla_core::manifest::{
    DirectoryOptions, Resource, ValidationError, load_directory_of, parse_documents,
};

pub use run::{ToolCommand, ToolError};
pub use toolchain::Toolchain;
pub use tools::Tools;

/// Everything that decides the manifests of a source directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceOptions {
    /// `source.directory` (with flags over it).
    pub directory: DirectoryOptions,
    /// `source.helm`, when given.
    pub helm: Option<HelmSource>,
    /// `source.kustomize`, when given.
    pub kustomize: Option<KustomizeSource>,
    /// `source.plugin`, when given.
    pub plugin: Option<PluginSource>,
    /// Whether `source.directory` was given (the source is plain manifests, whatever it holds).
    pub plain: bool,
    /// The source's `path` in its repository (the directory given to [`generate`] is that far
    /// below the repository root, which confines Jsonnet imports).
    pub path: String,
    /// The source's `repoURL` and `targetRevision` (Argo CD's build environment).
    pub repo_url: String,
    pub target_revision: String,
    /// The Application's name: Helm's default release name, named in errors.
    pub application: String,
    /// The Application's project (`ARGOCD_APP_PROJECT_NAME`).
    pub project: String,
    /// What a plugin is told of the destination cluster (`KUBE_VERSION`, `KUBE_API_VERSIONS`).
    pub kube: KubeCapabilities,
    /// The destination namespace (Helm's default release namespace).
    pub namespace: Option<String>,
    /// The commit (or chart version) the source directory holds, when it is one that is never
    /// written again: generations of it are kept ([`cache`]).
    pub revision: Option<String>,
    /// For an Application with `sources`: the sources to generate, each with its own options
    /// (the directory given to [`generate`] is then not read).
    pub parts: Vec<multi::SourcePart>,
    /// The repository roots lent by the `ref` sources of a multi-source Application, by name
    /// (`$values/…` in a Helm `valueFiles` reads below `refs["values"]`).
    pub refs: BTreeMap<String, PathBuf>,
    /// What the fields named in errors start with (`sources[1].` for a source of `sources`).
    pub field: String,
}

/// What turns a source directory into manifests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generator {
    /// Plain manifest files.
    Directory,
    /// `helm template`.
    Helm,
    /// `kustomize build`.
    Kustomize,
    /// A Config Management Plugin's `generate`.
    Plugin,
}

impl fmt::Display for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Directory => "directory",
            Self::Helm => "helm",
            Self::Kustomize => "kustomize",
            Self::Plugin => "plugin",
        })
    }
}

/// A source whose manifests could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{field}: {message}")]
    Field { field: String, message: String },
    /// The tool failed (the error's label names it).
    #[error("{error}")]
    Tool {
        tool: &'static str,
        #[source]
        error: ToolError,
    },
    #[error("{tool} cannot be used: {error}")]
    Unusable {
        tool: &'static str,
        #[source]
        error: Cause,
    },
    /// The plugin gave no manifests (its error names it and the command).
    #[error("{0}")]
    Plugin(#[source] Box<plugin::PluginError>),
    #[error("cannot write the private file {path}: {error}")]
    Private {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

impl SourceOptions {
    /// The options of a stored Application's source (or sources) as checked out at `revision`
    /// (for `sources`, each of them in `sources`), as the controller generates it.
    #[must_use]
    pub fn of_application(
        app: &flotilla_core::api::Application,
        revision: Option<String>,
        sources: &[multi::SourceCheckout],
    ) -> Self {
        let name = app.metadata.name.clone().unwrap_or_default();
        Self {
            project: app.spec.project.clone(),
            ..Self::of(
                &app.spec.source,
                app.spec.source.directory_options(),
                &name,
                app.spec.destination.namespace.as_deref(),
            )
        }
        .checked_out(revision, sources)
    }

    /// The options of an Application's `source`, with `directory` (its options with any flags
    /// over them) and its destination namespace.
    #[must_use]
    pub fn of(
        source: &ApplicationSource,
        directory: DirectoryOptions,
        application: &str,
        namespace: Option<&str>,
    ) -> Self {
        Self {
            directory,
            helm: source.helm.as_deref().cloned(),
            kustomize: source.kustomize.as_deref().cloned(),
            plugin: source.plugin.as_deref().cloned(),
            plain: source.directory.is_some(),
            path: source.path.clone(),
            repo_url: source.repo_url.clone(),
            target_revision: source.target_revision.clone(),
            application: application.to_owned(),
            namespace: namespace.map(str::to_owned),
            ..Self::default()
        }
    }

    /// These options at the checked-out `revision` (see [`multi::join_revisions`]), with the
    /// `checkouts` of a multi-source Application as the parts to generate.
    #[must_use]
    pub fn checked_out(
        self,
        revision: Option<String>,
        checkouts: &[multi::SourceCheckout],
    ) -> Self {
        Self {
            revision,
            parts: multi::parts(&self, checkouts),
            ..self
        }
    }

    /// These options for a destination cluster that reports `kube` (what a plugin is told of
    /// it), each part of a multi-source Application too.
    #[must_use]
    pub fn for_cluster(mut self, kube: &KubeCapabilities) -> Self {
        self.kube = kube.clone();
        for part in &mut self.parts {
            part.options.kube = kube.clone();
        }
        self
    }

    /// Which generator makes the manifests of `root`: the one the options name, else what the
    /// directory holds (a kustomization before a chart, as Argo CD decides).
    #[must_use]
    pub fn generator(&self, root: &Path) -> Generator {
        let holds = |file: &str| root.join(file).is_file();
        if self.plugin.is_some() {
            Generator::Plugin
        } else if self.plain {
            Generator::Directory
        } else if self.kustomize.is_some() {
            Generator::Kustomize
        } else if self.helm.is_some() {
            Generator::Helm
        } else if kustomize::KUSTOMIZATION_FILES.into_iter().any(holds) {
            Generator::Kustomize
        } else if holds("Chart.yaml") {
            Generator::Helm
        } else {
            Generator::Directory
        }
    }
}

impl SourceOptions {
    /// The options that decide the manifests of `root`: plain directories, and kustomizations
    /// that expand no `${ARGOCD_APP_*}`, do not depend on the Application's name or namespace,
    /// so Applications that differ only there share them.
    #[must_use]
    pub fn inputs(&self, root: &Path) -> Self {
        if !self.parts.is_empty() {
            return self.clone();
        }
        match self.generator(root) {
            Generator::Directory if !self.directory.jsonnet.uses_environment() => Self {
                directory: self.directory.clone(),
                plain: true,
                path: self.path.clone(),
                revision: self.revision.clone(),
                ..Self::default()
            },
            Generator::Kustomize
                if !self
                    .kustomize
                    .as_ref()
                    .is_some_and(|k| k.common_annotations_envsubst) =>
            {
                Self {
                    application: String::new(),
                    namespace: None,
                    ..self.clone()
                }
            }
            Generator::Directory | Generator::Helm | Generator::Kustomize | Generator::Plugin => {
                self.clone()
            }
        }
    }
}

/// The manifests of the source at `root`: its valid resources and every error (each naming the
/// file or tool, and for a tool the Application and the command with its stderr). A tool's
/// output at a known revision is kept ([`cache`]) and shared by every Application with the same
/// inputs, in `toolchain`'s [`cache::Generations`].
#[must_use]
pub fn generate(
    toolchain: &Toolchain,
    root: &Path,
    options: &SourceOptions,
) -> (Vec<Resource>, Vec<ValidationError>) {
    if !options.parts.is_empty() {
        return multi::generate(toolchain, &options.parts);
    }
    match (&options.revision, options.generator(root)) {
        (Some(revision), Generator::Helm | Generator::Kustomize | Generator::Plugin) => {
            let inputs = SourceOptions {
                revision: None,
                ..options.inputs(root)
            };
            let key = cache::Key::new(revision, root, &inputs, toolchain.versions());
            toolchain
                .generations
                .get_or_generate(key, || generate_now(toolchain, root, options))
        }
        _ => generate_now(toolchain, root, options),
    }
}

/// [`generate`] without the cache.
fn generate_now(
    toolchain: &Toolchain,
    root: &Path,
    options: &SourceOptions,
) -> (Vec<Resource>, Vec<ValidationError>) {
    let generator = options.generator(root);
    let tools = &toolchain.tools;
    // Tools run in a private directory: they get the source by its absolute path.
    let absolute = std::path::absolute(root);
    let output = match (generator, &absolute) {
        (Generator::Directory, _) => {
            let repository = repository_of(root, &options.path);
            let jsonnet = jsonnet::ChildProcess { tools };
            if !options.directory.jsonnet.uses_environment() {
                return load_directory_of(
                    &disk::Disk,
                    root,
                    repository,
                    &options.directory,
                    &jsonnet,
                );
            }
            let directory = DirectoryOptions {
                jsonnet: options.directory.jsonnet.expanded(&options.environment()),
                ..options.directory.clone()
            };
            return load_directory_of(&disk::Disk, root, repository, &directory, &jsonnet);
        }
        (Generator::Helm, Ok(root)) => helm::render(root, options, toolchain),
        (Generator::Kustomize, Ok(root)) => kustomize::build(root, options, toolchain),
        (Generator::Plugin, Ok(root)) => match &options.plugin {
            Some(source)
                if !options.plain && options.helm.is_none() && options.kustomize.is_none() =>
            {
                plugin::render(root, options, source, tools)
            }
            _ => Err(SourceError::Field {
                field: "plugin".into(),
                message: "cannot be given with directory, helm or kustomize (one kind of source)"
                    .into(),
            }),
        },
        (_, Err(error)) => Err(SourceError::Field {
            field: "path".into(),
            message: format!("{}: {error}", root.display()),
        }),
    };
    match output {
        Ok(text) => parse_output(generator, &text),
        Err(SourceError::Field { field, message }) if !options.field.is_empty() => {
            let field = format!("{}{field}", options.field);
            failed(generator, options, &SourceError::Field { field, message })
        }
        Err(error) => failed(generator, options, &error),
    }
}

impl SourceOptions {
    /// Argo CD's build environment of the source (what `$ARGOCD_APP_NAME` and the others in
    /// Jsonnet `tlas` and `extVars` values expand to).
    #[must_use]
    pub fn environment(&self) -> BTreeMap<String, String> {
        self.build_environment().variables().into_iter().collect()
    }

    /// What Argo CD's build environment of the source is made of.
    #[must_use]
    pub fn build_environment(&self) -> BuildEnvironment {
        BuildEnvironment {
            application: self.application.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            project: self.project.clone(),
            revision: self.revision.clone().unwrap_or_default(),
            repo_url: self.repo_url.clone(),
            path: self.path.clone(),
            target_revision: self.target_revision.clone(),
        }
    }
}

/// The repository root of the source directory `root` at `path` in it.
fn repository_of<'a>(root: &'a Path, path: &str) -> &'a Path {
    let depth = Path::new(path)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    root.ancestors().nth(depth).unwrap_or(root)
}

/// A generation that failed: no resources, one error naming the Application.
fn failed(
    generator: Generator,
    options: &SourceOptions,
    error: &SourceError,
) -> (Vec<Resource>, Vec<ValidationError>) {
    let error = ValidationError {
        file: PathBuf::from(generator.to_string()),
        document: None,
        object: None,
        message: format!("Application {}: {error}", options.application),
    };
    (Vec::new(), vec![error])
}

/// Parses a tool's output: Helm's documents grouped by the template named in their
/// `# Source:` line (`helm:<chart>/templates/<file>`), kustomize's as one stream
/// (`kustomize`).
fn parse_output(generator: Generator, text: &str) -> (Vec<Resource>, Vec<ValidationError>) {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut order = Vec::new();
    let mut label = generator.to_string();
    let mut document = String::new();
    let mut flush = |label: &str, document: &mut String| {
        if document.trim().is_empty() {
            return;
        }
        let text = files.entry(label.to_owned()).or_insert_with(|| {
            order.push(label.to_owned());
            String::new()
        });
        text.push_str("---\n");
        text.push_str(document);
        document.clear();
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&label, &mut document);
            label = generator.to_string();
        } else {
            if let Some(source) = line.strip_prefix("# Source: ") {
                label = format!("{generator}:{}", source.trim());
            }
            document.push_str(line);
            document.push('\n');
        }
    }
    flush(&label, &mut document);
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    for label in order {
        let (found, problems) = parse_documents(Path::new(&label), &files[&label]);
        resources.extend(found);
        errors.extend(problems);
    }
    if resources.len() > MAX_APPLICATION_OBJECTS {
        errors.push(ValidationError {
            file: PathBuf::from(generator.to_string()),
            document: None,
            object: None,
            message: format!(
                "more than {MAX_APPLICATION_OBJECTS} objects (the limit of an Application)"
            ),
        });
        resources.clear();
    }
    (resources, errors)
}

/// `relative` under `base`, refusing absolute paths, URLs and `..` (a source's files stay
/// inside it).
///
/// # Errors
/// A path that could leave `base`, naming `field`.
fn inside(base: &Path, relative: &str, field: &str) -> Result<PathBuf, SourceError> {
    let path = Path::new(relative);
    let escapes = relative.contains("://")
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if escapes || relative.is_empty() {
        return Err(SourceError::Field {
            field: field.to_owned(),
            message: format!("{relative:?} must be a relative path inside the source"),
        });
    }
    Ok(base.join(path))
}

/// A private temporary directory for one generation (removed when dropped).
fn private_dir() -> Result<tempfile::TempDir, SourceError> {
    private_dir_in(&std::env::temp_dir())
}

/// A private temporary directory under `parent` (removed when dropped).
fn private_dir_in(parent: &Path) -> Result<tempfile::TempDir, SourceError> {
    tempfile::Builder::new()
        .prefix("flotilla-source-")
        .tempdir_in(parent)
        .map_err(|error| SourceError::Private {
            path: parent.to_owned(),
            error,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_as_argo_cd() {
        let dir = tempfile::tempdir().unwrap();
        let options = SourceOptions::default();
        assert_eq!(options.generator(dir.path()), Generator::Directory);
        std::fs::write(dir.path().join("Chart.yaml"), "name: c").unwrap();
        assert_eq!(options.generator(dir.path()), Generator::Helm);
        std::fs::write(dir.path().join("Kustomization"), "").unwrap();
        assert_eq!(options.generator(dir.path()), Generator::Kustomize);
        let helm = SourceOptions {
            helm: Some(HelmSource::default()),
            ..SourceOptions::default()
        };
        assert_eq!(helm.generator(dir.path()), Generator::Helm);
        let plain = SourceOptions {
            plain: true,
            ..helm
        };
        assert_eq!(plain.generator(dir.path()), Generator::Directory);
    }

    #[test]
    fn inputs_leave_out_what_does_not_change_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let of = |application: &str, kustomize: Option<KustomizeSource>| SourceOptions {
            application: application.into(),
            namespace: Some(format!("{application}-ns")),
            kustomize,
            ..SourceOptions::default()
        };
        let plain = |application| of(application, None).inputs(dir.path());
        assert_eq!(plain("a"), plain("b"), "a plain directory");
        let kustomize = |application, envsubst| {
            let overrides = KustomizeSource {
                common_annotations_envsubst: envsubst,
                ..KustomizeSource::default()
            };
            of(application, Some(overrides)).inputs(dir.path())
        };
        assert_eq!(kustomize("a", false), kustomize("b", false));
        assert_ne!(kustomize("a", true), kustomize("b", true), "envsubst");
        let helm = |application| SourceOptions {
            helm: Some(HelmSource::default()),
            ..of(application, None)
        };
        assert_ne!(
            helm("a").inputs(dir.path()),
            helm("b").inputs(dir.path()),
            "the default release name"
        );
    }

    #[test]
    fn helm_output_is_labelled_by_template() {
        let text = "---\n# Source: db/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n\
                    ---\n# Source: db/templates/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n\
                    ---\n# Source: db/templates/a.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: a}\n";
        let (resources, errors) = parse_output(Generator::Helm, text);
        assert!(errors.is_empty(), "{errors:?}");
        let labels: Vec<String> = resources
            .iter()
            .map(|r| {
                format!(
                    "{}#{} {}",
                    r.source.file.display(),
                    r.source.document,
                    r.kind
                )
            })
            .collect();
        assert_eq!(
            labels,
            [
                "helm:db/templates/a.yaml#0 ConfigMap",
                "helm:db/templates/a.yaml#1 Secret",
                "helm:db/templates/b.yaml#0 ConfigMap",
            ]
        );
    }

    #[test]
    fn paths_stay_inside() {
        for bad in ["/etc/passwd", "../x", "a/../../x", "https://x/v.yaml", ""] {
            assert!(inside(Path::new("/r"), bad, "f").is_err(), "{bad}");
        }
        assert_eq!(
            inside(Path::new("/r"), "./a/b.yaml", "f").unwrap(),
            Path::new("/r/./a/b.yaml")
        );
    }
}

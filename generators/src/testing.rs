//! Test fixtures shared by the generator tests: in-memory cluster inventories, git
//! repositories and namespace objects, renderers for both template modes, and shorthands to run a spec written as JSON.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::generator::{GenerateContext, GeneratedSet, GeneratorError, NamespaceSources, generate};
use crate::params::Params;
use crate::source::{
    Cluster, ClusterInventory, GitError, GitReader, HttpAnswer, InventoryError, NamespaceObjects,
    ObjectsError, Offline, ScmApi, ScmCallError,
};
use crate::spec::GeneratorSpec;
use crate::template::{Renderer, TemplateMode};

/// A fixed list of clusters.
#[derive(Default)]
pub struct MemoryInventory(pub Vec<Cluster>);

impl ClusterInventory for MemoryInventory {
    fn clusters(&self) -> Result<Vec<Cluster>, InventoryError> {
        Ok(self.0.clone())
    }
}

/// A cluster with labels.
pub fn cluster(name: &str, server: &str, labels: &[(&str, &str)]) -> Cluster {
    Cluster {
        name: name.to_string(),
        server: server.to_string(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Cluster::default()
    }
}

/// Repositories by URL: revisions pointing at commits, and the files of each commit.
#[derive(Default)]
pub struct MemoryGit {
    revisions: BTreeMap<(String, String), String>,
    trees: BTreeMap<(String, String), BTreeMap<String, String>>,
    resolves: AtomicUsize,
}

impl MemoryGit {
    /// Adds commit `commit` of `repo` with `files`, pointed at by `revision` (`HEAD` for "").
    #[must_use]
    pub fn with_commit(
        mut self,
        repo: &str,
        revision: &str,
        commit: &str,
        files: &[(&str, &str)],
    ) -> Self {
        self.revisions
            .insert((repo.to_string(), revision.to_string()), commit.to_string());
        let tree = files
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
        self.trees
            .insert((repo.to_string(), commit.to_string()), tree);
        self
    }

    /// How many times a revision was resolved.
    pub fn resolves(&self) -> usize {
        self.resolves.load(Ordering::SeqCst)
    }

    fn tree(&self, repo: &str, commit: &str) -> Result<&BTreeMap<String, String>, GitError> {
        self.trees
            .get(&(repo.to_string(), commit.to_string()))
            .ok_or_else(|| GitError::Unavailable {
                message: format!("no commit {commit}"),
            })
    }
}

impl GitReader for MemoryGit {
    fn resolve(
        &self,
        repo_url: &str,
        revision: &str,
        _project: Option<&str>,
    ) -> Result<String, GitError> {
        self.resolves.fetch_add(1, Ordering::SeqCst);
        let revision = if revision.is_empty() {
            "HEAD"
        } else {
            revision
        };
        self.revisions
            .get(&(repo_url.to_string(), revision.to_string()))
            .cloned()
            .ok_or_else(|| GitError::RevisionNotFound {
                revision: revision.to_string(),
            })
    }

    fn list_files(&self, repo_url: &str, commit: &str) -> Result<Vec<String>, GitError> {
        Ok(self.tree(repo_url, commit)?.keys().cloned().collect())
    }

    fn read_file(&self, repo_url: &str, commit: &str, path: &str) -> Result<Vec<u8>, GitError> {
        self.tree(repo_url, commit)?
            .get(path)
            .map(|content| content.as_bytes().to_vec())
            .ok_or_else(|| GitError::FileNotFound {
                commit: commit.to_string(),
                path: path.to_string(),
            })
    }
}

/// ConfigMaps, Secrets and custom resources of a namespace.
#[derive(Default)]
pub struct MemoryObjects {
    config_maps: BTreeMap<String, BTreeMap<String, String>>,
    secrets: BTreeMap<(String, String), String>,
    resources: BTreeMap<(String, String), Vec<Value>>,
}

impl MemoryObjects {
    /// Adds ConfigMap `name` with `data`.
    #[must_use]
    pub fn with_config_map(mut self, name: &str, data: &[(&str, &str)]) -> Self {
        let data = data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.config_maps.insert(name.to_string(), data);
        self
    }

    /// Adds `key` = `value` to Secret `name`.
    #[must_use]
    pub fn with_secret(mut self, name: &str, key: &str, value: &str) -> Self {
        self.secrets
            .insert((name.to_string(), key.to_string()), value.to_string());
        self
    }

    /// Adds an object of `kind` in `api_version`.
    #[must_use]
    pub fn with_resource(mut self, api_version: &str, kind: &str, object: Value) -> Self {
        self.resources
            .entry((api_version.to_string(), kind.to_string()))
            .or_default()
            .push(object);
        self
    }
}

impl NamespaceObjects for MemoryObjects {
    fn config_map(&self, name: &str) -> Result<BTreeMap<String, String>, ObjectsError> {
        self.config_maps
            .get(name)
            .cloned()
            .ok_or_else(|| ObjectsError::NotFound {
                kind: "ConfigMap".into(),
                name: name.into(),
            })
    }

    fn secret_value(&self, name: &str, key: &str) -> Result<String, ObjectsError> {
        self.secrets
            .get(&(name.to_string(), key.to_string()))
            .cloned()
            .ok_or_else(|| ObjectsError::MissingKey {
                kind: "Secret".into(),
                name: name.into(),
                key: key.into(),
            })
    }

    fn list(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ObjectsError> {
        self.resources
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
            .ok_or_else(|| ObjectsError::Unavailable {
                message: format!("no kind {kind} in {api_version}"),
            })
    }
}

/// A fasttemplate renderer.
pub fn fast() -> Renderer {
    Renderer::new(TemplateMode::Fast)
}

/// A goTemplate renderer (missing keys are not errors).
pub fn go() -> Renderer {
    Renderer::new(TemplateMode::Go {
        missing_key_error: false,
    })
}

/// Parameters written as a JSON object.
pub fn params(value: Value) -> Params {
    serde_json::from_value(value).expect("test params are a JSON object")
}

/// Runs one generator entry written as JSON with no clusters and no repositories.
pub fn run(renderer: &Renderer, spec: &Value) -> Result<Vec<Params>, GeneratorError> {
    run_with(
        renderer,
        &MemoryInventory::default(),
        &MemoryGit::default(),
        spec,
    )
}

/// Runs one generator entry written as JSON and keeps only the parameters.
pub fn run_with(
    renderer: &Renderer,
    inventory: &dyn ClusterInventory,
    git: &MemoryGit,
    spec: &Value,
) -> Result<Vec<Params>, GeneratorError> {
    Ok(run_sets(renderer, inventory, git, spec)?
        .into_iter()
        .map(|set| set.params)
        .collect())
}

/// Runs one generator entry written as JSON.
pub fn run_sets(
    renderer: &Renderer,
    inventory: &dyn ClusterInventory,
    git: &MemoryGit,
    spec: &Value,
) -> Result<Vec<GeneratedSet>, GeneratorError> {
    let spec: GeneratorSpec = serde_json::from_value(spec.clone()).expect("test spec parses");
    generate(&spec, &GenerateContext::new(renderer, inventory, git))
}

/// A URL asked of an SCM provider's API and the headers sent.
pub type Asked = (String, Vec<(String, String)>);

/// An SCM provider's API answering by URL (404 `Not Found` for any other), recording what it
/// was asked.
#[derive(Default)]
pub struct MemoryScm {
    pub pages: BTreeMap<String, HttpAnswer>,
    pub asked: Mutex<Vec<Asked>>,
}

impl MemoryScm {
    /// Answers `url` with 200, `headers` and the JSON `body`.
    #[must_use]
    pub fn page(mut self, url: &str, headers: &[(&str, &str)], body: Value) -> Self {
        self.pages.insert(
            url.into(),
            HttpAnswer {
                status: 200,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                body: body.to_string().into_bytes(),
            },
        );
        self
    }

    /// The URLs asked, in order.
    pub fn urls(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|(url, _)| url.clone())
            .collect()
    }

    /// The value of header `name` sent with the first request of `url`.
    pub fn header(&self, url: &str, name: &str) -> Option<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .find(|(asked, _)| asked == url)
            .and_then(|(_, headers)| headers.iter().find(|(n, _)| n == name))
            .map(|(_, value)| value.clone())
    }
}

impl ScmApi for MemoryScm {
    fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        _: bool,
    ) -> Result<HttpAnswer, ScmCallError> {
        self.asked
            .lock()
            .unwrap()
            .push((url.into(), headers.to_vec()));
        Ok(self.pages.get(url).cloned().unwrap_or(HttpAnswer {
            status: 404,
            headers: Vec::new(),
            body: b"{\"message\":\"Not Found\"}".to_vec(),
        }))
    }
}

/// Runs one generator entry written as JSON against the SCM API `api`, with the Secret `scm`
/// holding `token` (`t0k`) and `password` (`pw`).
pub fn run_scm(
    renderer: &Renderer,
    api: &dyn ScmApi,
    spec: Value,
) -> Result<Vec<Params>, GeneratorError> {
    let spec: GeneratorSpec = serde_json::from_value(spec).expect("test spec parses");
    let objects = MemoryObjects::default()
        .with_secret("scm", "token", "t0k\n")
        .with_secret("scm", "password", "pw");
    let (inventory, git) = (MemoryInventory::default(), MemoryGit::default());
    let ctx = GenerateContext::new(renderer, &inventory, &git).with_namespace(NamespaceSources {
        appset: "previews",
        objects: &objects,
        plugins: &Offline,
        scm: api,
    });
    Ok(generate(&spec, &ctx)?
        .into_iter()
        .map(|set| set.params)
        .collect())
}

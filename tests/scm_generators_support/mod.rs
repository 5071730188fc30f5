//! Helpers shared by tests/scm_generators.rs and tests/scm_generators_offline.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use crate::support::object;
use crate::support::scm_fake::{Kind, Repo, pull_request_entry};
use flotilla::api::ApplicationSet;
use flotilla::controller::scm_client::{HttpScm, SCM_TIMEOUT};
use flotilla_generators::generator::{GenerateContext, NamespaceSources, generate};
use flotilla_generators::source::{
    Cluster, ClusterInventory, GitError, GitReader, InventoryError, NamespaceObjects, ObjectsError,
    Offline,
};
use flotilla_generators::spec::GeneratorSpec;
use flotilla_generators::template::{Renderer, TemplateMode};
use serde_json::{Value, json};

/// One Secret key, `scm`/`token`, as the controller's namespace would hold it.
pub struct OneSecret(&'static str);

impl NamespaceObjects for OneSecret {
    fn config_map(&self, name: &str) -> Result<BTreeMap<String, String>, ObjectsError> {
        Err(ObjectsError::NotFound {
            kind: "ConfigMap".into(),
            name: name.into(),
        })
    }

    fn secret_value(&self, name: &str, key: &str) -> Result<String, ObjectsError> {
        match (name, key) {
            ("scm", "token") => Ok(self.0.into()),
            _ => Err(ObjectsError::NotFound {
                kind: "Secret".into(),
                name: name.into(),
            }),
        }
    }

    fn list(&self, _: &str, _: &str) -> Result<Vec<Value>, ObjectsError> {
        Ok(Vec::new())
    }
}

/// No clusters and no repositories: the pullRequest generator reads neither.
pub struct Nothing;

impl ClusterInventory for Nothing {
    fn clusters(&self) -> Result<Vec<Cluster>, InventoryError> {
        Ok(Vec::new())
    }
}

impl GitReader for Nothing {
    fn resolve(&self, _: &str, _: &str, _: Option<&str>) -> Result<String, GitError> {
        Err(GitError::Unavailable {
            message: "no repositories".into(),
        })
    }

    fn list_files(&self, _: &str, _: &str) -> Result<Vec<String>, GitError> {
        Ok(Vec::new())
    }

    fn read_file(&self, _: &str, _: &str, _: &str) -> Result<Vec<u8>, GitError> {
        Ok(Vec::new())
    }
}

/// Runs the generator entry `spec` with the HTTP client on a blocking thread, reading the token
/// `token` from Secret `scm`; the parameter sets, or the error.
pub async fn generated(spec: Value, token: &'static str) -> Result<Vec<Value>, String> {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let spec: GeneratorSpec = serde_json::from_value(spec).expect("a generator entry");
        let renderer = Renderer::new(TemplateMode::Go {
            missing_key_error: true,
        });
        let scm = HttpScm::new(runtime, SCM_TIMEOUT);
        let objects = OneSecret(token);
        let ctx =
            GenerateContext::new(&renderer, &Nothing, &Nothing).with_namespace(NamespaceSources {
                appset: "previews",
                objects: &objects,
                plugins: &Offline,
                scm: &scm,
            });
        generate(&spec, &ctx)
            .map(|sets| sets.iter().map(|set| json!(set.params)).collect())
            .map_err(|error| error.to_string())
    })
    .await
    .expect("the generation thread ends")
}

/// The generator entry of `kind` for repository `acme/web` of the fake at `api`.
pub fn entry(kind: Kind, api: &str) -> Value {
    pull_request_entry(kind, api, "scm", "token")
}

/// An ApplicationSet making one Application per pull request of the fake GitHub at `api`,
/// asking again every second.
pub fn previews(api: &str) -> ApplicationSet {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "previews"},
        "spec": {
            "goTemplate": true,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"pullRequest": {
                "github": {"owner": "acme", "repo": "web", "api": api,
                           "tokenRef": {"secretName": "github-token", "key": "token"}},
                "requeueAfterSeconds": 1,
            }}],
            "template": {
                "metadata": {"name": "preview-{{ .number }}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "file:///srv/repo", "targetRevision": "{{ .head_sha }}", "path": "deploy"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "preview-{{ .branch_slug }}"}
                }
            }
        }
    }))
}

/// Five repositories: three `app-…` with the kustomization (one with two more branches), one
/// `app-…` without, and `docs` with it.
pub fn five_repos() -> Vec<Repo> {
    let kustomized = [
        "deploy/kustomization.yaml",
        "deploy/service.yaml",
        "README.md",
    ];
    let mut api = Repo::new(2, "app-api", &kustomized);
    api.branches
        .push(("release-1".into(), Repo::sha(2, "release-1")));
    api.branches.push(("wip".into(), Repo::sha(2, "wip")));
    vec![
        Repo::new(1, "app-web", &kustomized),
        api,
        Repo::new(3, "app-batch", &kustomized),
        Repo::new(4, "app-legacy", &["manifests/all.yaml"]),
        Repo::new(5, "docs", &kustomized),
    ]
}

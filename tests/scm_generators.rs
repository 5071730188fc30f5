//! The pullRequest and scmProvider generators against hand-written fakes of the providers' REST
//! APIs on loopback (`support::scm_fake`): every provider read over HTTP page by page with its
//! credential (pull requests; an organisation's repositories, their branches and paths), a wrong
//! credential refused with the provider's own answer, and — on the real control plane, with the
//! controller run in-process — ApplicationSets whose Applications follow the open pull requests
//! of a GitHub-shaped API (opened: created; closed: deleted) and the repositories of a
//! GitLab-shaped group (added: created; removed: deleted), with the token read from a Secret,
//! and a rate-limited API asked again only once its limit is over.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_support::{setup, start};
use flotilla::controller::http_clients::scm_client::{HttpScm, SCM_TIMEOUT};
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_generators::generator::{GenerateContext, NamespaceSources, generate};
use flotilla_generators::source::{
    Cluster, ClusterInventory, GitError, GitReader, InventoryError, NamespaceObjects, ObjectsError,
    Offline,
};
use flotilla_generators::spec::GeneratorSpec;
use flotilla_generators::template::{Renderer, TemplateMode};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use support::scm_fake::{FakeScm, Kind, Pull, Repo, pull_request_entry};
use support::{TestNamespace, apply, eventually, eventually_within, object, wait_until};

/// One Secret key, `scm`/`token`, as the controller's namespace would hold it.
struct OneSecret(&'static str);

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
struct Nothing;

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
async fn generated(spec: Value, token: &'static str) -> Result<Vec<Value>, String> {
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

/// The pull request numbers and branch slugs `spec` generates, or the error.
async fn pull_requests(spec: Value, token: &'static str) -> Result<Vec<(String, String)>, String> {
    let sets = generated(spec, token).await?;
    Ok(sets
        .iter()
        .map(|set| {
            let text = |key: &str| set[key].as_str().unwrap().to_string();
            (text("number"), text("branch_slug"))
        })
        .collect())
}

/// The generator entry of `kind` for repository `acme/web` of the fake at `api`.
fn entry(kind: Kind, api: &str) -> Value {
    pull_request_entry(kind, api, "scm", "token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_is_read_page_by_page_with_its_credential() {
    for kind in [
        Kind::Github,
        Kind::Gitlab,
        Kind::Gitea,
        Kind::BitbucketServer,
    ] {
        let credential = if kind == Kind::BitbucketServer {
            "ci:s3cret"
        } else {
            "s3cret"
        };
        let fake = FakeScm::start(kind, "acme", "web", credential, 2);
        let pulls = (1..=5).map(|n| Pull::new(n, &format!("feature/Part_{n}")));
        fake.set_pulls(pulls.collect());
        let found = pull_requests(entry(kind, &fake.url()), "s3cret").await;
        let expected: Vec<(String, String)> = (1..=5)
            .map(|n| (n.to_string(), format!("feature-part-{n}")))
            .collect();
        assert_eq!(found, Ok(expected), "{kind:?}");
        assert_eq!(
            fake.requests(),
            3,
            "{kind:?}: five pull requests, two a page"
        );

        let refused = pull_requests(entry(kind, &fake.url()), "wrong")
            .await
            .unwrap_err();
        assert!(
            refused.starts_with("pullRequest: ") && refused.contains("answered HTTP 401"),
            "{kind:?}: {refused}"
        );
    }
}

/// An ApplicationSet making one Application per pull request of the fake GitHub at `api`,
/// asking again every second.
fn previews(api: &str) -> ApplicationSet {
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

/// The names of the Applications in the namespace, with their target revision.
async fn applications(ns: &TestNamespace) -> BTreeMap<String, String> {
    let api: Api<Application> = ns.api();
    api.list(&Default::default())
        .await
        .expect("lists Applications")
        .items
        .into_iter()
        .map(|app| (app.name_any(), app.spec.source.target_revision.clone()))
        .collect()
}

async fn wait_for_applications(ns: &TestNamespace, names: &[&str]) -> BTreeMap<String, String> {
    eventually(&format!("Applications {names:?}"), async || {
        let current = applications(ns).await;
        if current.keys().map(String::as_str).eq(names.iter().copied()) {
            Ok(current)
        } else {
            Err(format!("{:?}", current.keys().collect::<Vec<_>>()))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applications_follow_the_open_pull_requests_and_a_rate_limit_is_waited_out() {
    let ns = setup("scm-pulls").await;
    let fake = Arc::new(FakeScm::start(Kind::Github, "acme", "web", "gh-t0ken", 2));
    fake.set_pulls(vec![Pull::new(1, "feat/a"), Pull::new(2, "fix_b")]);
    let secret: Secret = object(json!({
        "metadata": {"name": "github-token"},
        "stringData": {"token": "gh-t0ken"}
    }));
    apply(&ns.api::<Secret>(), &secret).await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &previews(&fake.url())).await;

    let generated = wait_for_applications(&ns, &["preview-1", "preview-2"]).await;
    assert_eq!(generated["preview-1"], Pull::new(1, "feat/a").sha);

    // A pull request opened (a third one: two pages now) gets its Application.
    fake.set_pulls(vec![
        Pull::new(1, "feat/a"),
        Pull::new(2, "fix_b"),
        Pull::new(3, "feat/c"),
    ]);
    wait_for_applications(&ns, &["preview-1", "preview-2", "preview-3"]).await;

    // Closed ones (gone from the open list) lose theirs.
    fake.set_pulls(vec![Pull::new(3, "feat/c")]);
    wait_for_applications(&ns, &["preview-3"]).await;

    // Rate limited for a few seconds: the generation fails saying so, the Applications stay,
    // and the API is not asked again before the limit resets.
    let limit = Duration::from_secs(6);
    fake.rate_limit_for(limit);
    let before = fake.requests();
    let failed = wait_until(&appsets, "previews", "a rate-limit error", |appset| {
        appset.status.as_ref().is_some_and(|status| {
            status.conditions.iter().any(|c| {
                c.type_ == ConditionType::ErrorOccurred
                    && c.status == ConditionStatus::True
                    && c.message.contains("rate limited")
            })
        })
    })
    .await;
    let message = &failed.status.as_ref().unwrap().conditions;
    let message = message
        .iter()
        .find(|c| c.type_ == ConditionType::ErrorOccurred)
        .map(|c| c.message.clone())
        .unwrap();
    assert!(
        message.contains("generators[0].pullRequest: github: GET ")
            && message.contains("rate limited (HTTP 403); asked again when the limit resets at"),
        "{message}"
    );
    assert_eq!(applications(&ns).await.len(), 1, "nothing deleted");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = fake.requests() - before;
    assert!(
        during <= 2,
        "{during} requests while rate limited: the controller must wait for the reset"
    );
    fake.set_pulls(vec![Pull::new(3, "feat/c"), Pull::new(4, "feat/d")]);
    eventually_within(
        limit + Duration::from_secs(30),
        "preview-4 once the limit reset",
        async || {
            let names: Vec<String> = applications(&ns).await.into_keys().collect();
            if names == ["preview-3", "preview-4"] {
                Ok(())
            } else {
                Err(format!("{names:?}"))
            }
        },
    )
    .await;
    controller.stop().await;
}

/// The scmProvider entry of `kind` for organisation `acme` of the fake at `api`, keeping the
/// repositories named `app-…` that have `deploy/kustomization.yaml`; every branch matching
/// `^(main|release-.*)$` when `all_branches`.
fn organisation(kind: Kind, api: &str, all_branches: bool) -> Value {
    let token = json!({"secretName": "scm", "key": "token"});
    let provider = match kind {
        Kind::Github => json!({"github": {"organization": "acme", "api": api, "tokenRef": token,
            "allBranches": all_branches}}),
        Kind::Gitlab => json!({"gitlab": {"group": "acme", "api": api, "tokenRef": token,
            "allBranches": all_branches}}),
        Kind::Gitea => json!({"gitea": {"owner": "acme", "api": api, "tokenRef": token,
            "allBranches": all_branches}}),
        Kind::BitbucketServer => json!({"bitbucketServer": {"project": "acme", "api": api,
            "basicAuth": {"username": "ci", "passwordRef": token}, "allBranches": all_branches}}),
    };
    let mut entry = provider;
    entry["filters"] = json!([{"repositoryMatch": "^app-", "pathsExist": ["deploy/kustomization.yaml"],
        "branchMatch": "^(main|release-.*)$"}]);
    json!({"scmProvider": entry})
}

/// Five repositories: three `app-…` with the kustomization (one with two more branches), one
/// `app-…` without, and `docs` with it.
fn five_repos() -> Vec<Repo> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_lists_an_organisations_repositories_page_by_page() {
    for kind in [
        Kind::Github,
        Kind::Gitlab,
        Kind::Gitea,
        Kind::BitbucketServer,
    ] {
        let credential = if kind == Kind::BitbucketServer {
            "ci:s3cret"
        } else {
            "s3cret"
        };
        let fake = FakeScm::start(kind, "acme", "web", credential, 2);
        fake.set_repos(five_repos());
        let branches = |sets: &[Value]| -> Vec<(String, String, String)> {
            sets.iter()
                .map(|set| {
                    let text = |key: &str| set[key].as_str().unwrap().to_string();
                    (text("repository"), text("branch"), text("sha"))
                })
                .collect()
        };
        let t = |repo: &str, branch: &str, id: u64| {
            (repo.to_string(), branch.to_string(), Repo::sha(id, branch))
        };
        let defaults = generated(organisation(kind, &fake.url(), false), "s3cret").await;
        assert_eq!(
            defaults.as_deref().map(branches),
            Ok(vec![
                t("app-web", "main", 1),
                t("app-api", "main", 2),
                t("app-batch", "main", 3)
            ]),
            "{kind:?}"
        );
        let sets = defaults.unwrap();
        assert_eq!(sets[0]["organization"], json!("acme"), "{kind:?}");
        assert_eq!(
            sets[0]["short_sha_7"],
            json!(&Repo::sha(1, "main")[..7]),
            "{kind:?}"
        );
        let url = sets[0]["url"].as_str().unwrap();
        assert!(
            url.contains("app-web") && (url.starts_with("git@") || url.starts_with("ssh://")),
            "{kind:?}: {url}"
        );

        let all = generated(organisation(kind, &fake.url(), true), "s3cret")
            .await
            .map(|sets| branches(&sets));
        assert_eq!(
            all,
            Ok(vec![
                t("app-web", "main", 1),
                t("app-api", "main", 2),
                t("app-api", "release-1", 2),
                t("app-batch", "main", 3)
            ]),
            "{kind:?}"
        );

        let refused = generated(organisation(kind, &fake.url(), false), "wrong")
            .await
            .unwrap_err();
        assert!(
            refused.starts_with("scmProvider: ") && refused.contains("answered HTTP 401"),
            "{kind:?}: {refused}"
        );
    }
}

/// An ApplicationSet making one Application per `app-…` repository with a kustomization of the
/// fake GitLab group at `api`, asking again every second.
fn team_apps(api: &str) -> ApplicationSet {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "team-apps"},
        "spec": {
            "goTemplate": true,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"scmProvider": {
                "gitlab": {"group": "acme", "api": api,
                           "tokenRef": {"secretName": "gitlab-token", "key": "token"}},
                "cloneProtocol": "https",
                "filters": [{"repositoryMatch": "^app-", "pathsExist": ["deploy/kustomization.yaml"]}],
                "requeueAfterSeconds": 1,
            }}],
            "template": {
                "metadata": {"name": "{{ .repository }}", "annotations": {"scm-url": "{{ .url }}"}},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "file:///srv/{{ .repository }}", "targetRevision": "{{ .sha }}", "path": "deploy"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "{{ .repository }}"}
                }
            }
        }
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applications_follow_the_repositories_of_an_organisation() {
    let ns = setup("scm-repos").await;
    let fake = FakeScm::start(Kind::Gitlab, "acme", "web", "gl-t0ken", 2);
    fake.set_repos(five_repos());
    let secret: Secret = object(json!({
        "metadata": {"name": "gitlab-token"},
        "stringData": {"token": "gl-t0ken"}
    }));
    apply(&ns.api::<Secret>(), &secret).await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &team_apps(&fake.url())).await;

    let generated = wait_for_applications(&ns, &["app-api", "app-batch", "app-web"]).await;
    assert_eq!(generated["app-web"], Repo::sha(1, "main"));
    let apps: Api<Application> = ns.api();
    let web = apps.get("app-web").await.expect("reads app-web");
    assert_eq!(
        web.annotations().get("scm-url").map(String::as_str),
        Some(format!("{}/acme/app-web.git", fake.url()).as_str())
    );

    // A repository added to the group gets its Application at the next requeue.
    let mut repos = five_repos();
    repos.push(Repo::new(6, "app-new", &["deploy/kustomization.yaml"]));
    fake.set_repos(repos.clone());
    wait_for_applications(&ns, &["app-api", "app-batch", "app-new", "app-web"]).await;

    // One removed (or whose kustomization is gone) loses it.
    repos.retain(|repo| repo.name != "app-web");
    repos
        .iter_mut()
        .filter(|repo| repo.name == "app-batch")
        .for_each(|repo| repo.files = vec!["README.md".into()]);
    fake.set_repos(repos);
    wait_for_applications(&ns, &["app-api", "app-new"]).await;
    controller.stop().await;
}

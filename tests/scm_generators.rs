//! The pullRequest and scmProvider generators against hand-written fakes of the providers' REST
//! APIs on loopback (`support::scm_fake`): every provider read over HTTP page by page with its
//! credential (pull requests; an organisation's repositories, their branches and paths), a wrong
//! credential refused with the provider's own answer, and — on the real control plane, with the
//! controller run in-process — ApplicationSets whose Applications follow the open pull requests
//! of a GitHub-shaped API (opened: created; closed: deleted) and the repositories of a
//! GitLab-shaped group (added: created; removed: deleted), with the token read from a Secret,
//! and a rate-limited API asked again only once its limit is over.
//! (Feature `controlplane`; the generators read without a cluster are in scm_generators_offline.rs.)

mod controller_support;
mod scm_generators_support;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_support::{setup, start};
use flotilla::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla::api::{Application, ApplicationSet};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::scm_fake::{FakeScm, Kind, Pull, Repo};
use support::{TestNamespace, apply, eventually, eventually_within, object, wait_until};

use scm_generators_support::{five_repos, previews};

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

//! The SCM generators against fake providers on loopback, without a cluster: every provider is read
//! page by page with its credential, and lists an organisation's repositories page by page. The
//! Applications that follow them through the controller are in scm_generators.rs.

mod controller_support;
mod scm_generators_support;
mod support;

use serde_json::{Value, json};
use support::scm_fake::{FakeScm, Kind, Pull, Repo};

use scm_generators_support::{entry, five_repos, generated};

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

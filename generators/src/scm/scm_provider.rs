//! The `scmProvider` generator: one parameter set per repository of an organisation (GitHub),
//! group (GitLab), owner (Gitea) or project (Bitbucket Server) — per branch with `allBranches` —
//! listed from the provider's REST API ([`super::repositories`]) through the injected
//! [`crate::source::ScmApi`], kept when it matches a filter (`repositoryMatch`, `labelMatch`,
//! `branchMatch`, `pathsExist`, `pathsDoNotExist`, all of one filter), with Argo CD's
//! parameters (`organization`, `repository`, `url`, `branch`, `sha`, …).

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use super::endpoint::{self, Auth, Provider, api_error, ensure_available, field_error, segment};
use super::pattern::{compile, matches};
use super::repositories::{Branch, CloneProtocol, Repository, Scan};
use crate::generator::{GenerateContext, Generator, GeneratorError, add_templated_values};
use crate::params::{Params, normalize_name};
use crate::scm_api::paging::ScmError;
use crate::spec::{
    ScmProviderBitbucketServer, ScmProviderFilter, ScmProviderGenerator, ScmProviderGitea,
    ScmProviderGithub, ScmProviderGitlab,
};

impl Generator for ScmProviderGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let filters = compile_filters(&self.filters)?;
        let clone = CloneProtocol::parse(&self.clone_protocol)
            .map_err(|message| field_error("cloneProtocol", message))?;
        let block = Block::one(
            "bitbucket, azureDevOps and awsCodeCommit",
            self.github.as_ref(),
            self.gitlab.as_ref(),
            self.gitea.as_ref(),
            self.bitbucket_server.as_ref(),
        )?;
        let provider = block.provider();
        let listing = listing(provider, block)?;
        let namespace = ctx.namespace();
        // No network (render, simulate): say so before reading any Secret.
        ensure_available(namespace.scm, provider, &listing.url)?;
        let credential = listing.auth.credential(provider, namespace.objects)?;
        let scan = Scan {
            provider,
            client: provider.client(namespace.scm, &credential, listing.insecure),
            root: provider.root(listing.api),
            clone,
            all_branches: listing.all_branches,
            exclude_archived: listing.exclude_archived,
            owner: listing.owner,
        };
        let api = |error| api_error(provider, error);
        let mut sets = Vec::new();
        for repository in scan.repositories(&listing.url).map_err(api)? {
            let candidates: Vec<&Filter> = filters
                .iter()
                .filter(|filter| filter.matches_repository(&repository))
                .collect();
            if !filters.is_empty() && candidates.is_empty() {
                continue;
            }
            for branch in scan.branches(&repository).map_err(api)? {
                if filters.is_empty()
                    || keeps(&scan, &repository, &branch, &candidates).map_err(api)?
                {
                    let mut params = repository_params(&repository, &branch);
                    add_templated_values(&self.values, &mut params, ctx)?;
                    sets.push(params);
                }
            }
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

/// The provider block a generator sets.
type Block<'a> = endpoint::Block<
    &'a ScmProviderGithub,
    &'a ScmProviderGitlab,
    &'a ScmProviderGitea,
    &'a ScmProviderBitbucketServer,
>;

/// What a provider block asks: the first page of its repositories and how to read them.
struct Listing<'a> {
    url: String,
    api: &'a str,
    auth: Auth<'a>,
    insecure: bool,
    all_branches: bool,
    exclude_archived: bool,
    owner: String,
}

/// The listing of `block`, the block of `provider`.
fn listing(provider: Provider, block: Block<'_>) -> Result<Listing<'_>, GeneratorError> {
    Ok(match block {
        Block::Github(github) => {
            if !github.app_secret_name.is_empty() {
                return Err(field_error(
                    "github.appSecretName",
                    "GitHub App authentication is not supported; use tokenRef",
                ));
            }
            Listing {
                url: format!(
                    "{}/orgs/{}/repos?per_page=100",
                    provider.root(&github.api),
                    segment(&github.organization)
                ),
                api: &github.api,
                auth: Auth::Token(github.token_ref.as_ref()),
                insecure: false,
                all_branches: github.all_branches,
                exclude_archived: github.exclude_archived_repos,
                owner: String::new(),
            }
        }
        Block::Gitlab(gitlab) => {
            let mut url = format!(
                "{}/groups/{}/projects?per_page=100&include_subgroups={}&with_shared={}",
                provider.root(&gitlab.api),
                segment(&gitlab.group),
                gitlab.include_subgroups,
                gitlab.include_shared_projects.unwrap_or(true),
            );
            if !gitlab.topic.is_empty() {
                url.push_str(&format!("&topic={}", segment(&gitlab.topic)));
            }
            // GitLab filters archived projects itself.
            if !gitlab.include_archived_repos {
                url.push_str("&archived=false");
            }
            Listing {
                url,
                api: &gitlab.api,
                auth: Auth::Token(gitlab.token_ref.as_ref()),
                insecure: gitlab.insecure,
                all_branches: gitlab.all_branches,
                exclude_archived: false,
                owner: String::new(),
            }
        }
        Block::Gitea(gitea) => Listing {
            url: format!(
                "{}/orgs/{}/repos?limit=50",
                provider.root(&gitea.api),
                segment(&gitea.owner)
            ),
            api: &gitea.api,
            auth: Auth::Token(gitea.token_ref.as_ref()),
            insecure: gitea.insecure,
            all_branches: gitea.all_branches,
            exclude_archived: gitea.exclude_archived_repos,
            owner: gitea.owner.clone(),
        },
        Block::BitbucketServer(server) => Listing {
            url: format!(
                "{}/api/1.0/projects/{}/repos?limit=100",
                provider.root(&server.api),
                segment(&server.project)
            ),
            api: &server.api,
            auth: Auth::BitbucketServer {
                basic_auth: server.basic_auth.as_ref(),
                bearer_token: server.bearer_token.as_ref(),
            },
            insecure: server.insecure,
            all_branches: server.all_branches,
            exclude_archived: false,
            owner: String::new(),
        },
    })
}

/// A filter with its regular expressions compiled.
struct Filter {
    repository: Option<Regex>,
    label: Option<Regex>,
    branch: Option<Regex>,
    paths_exist: Vec<String>,
    paths_do_not_exist: Vec<String>,
}

impl Filter {
    /// Whether the repository's name and labels pass (any label may match `labelMatch`).
    fn matches_repository(&self, repository: &Repository) -> bool {
        matches(self.repository.as_ref(), &repository.name)
            && self
                .label
                .as_ref()
                .is_none_or(|label| repository.labels.iter().any(|name| label.is_match(name)))
    }
}

fn compile_filters(filters: &[ScmProviderFilter]) -> Result<Vec<Filter>, GeneratorError> {
    filters
        .iter()
        .enumerate()
        .map(|(index, filter)| {
            Ok(Filter {
                repository: compile(index, "repositoryMatch", filter.repository_match.as_ref())?,
                label: compile(index, "labelMatch", filter.label_match.as_ref())?,
                branch: compile(index, "branchMatch", filter.branch_match.as_ref())?,
                paths_exist: filter.paths_exist.clone(),
                paths_do_not_exist: filter.paths_do_not_exist.clone(),
            })
        })
        .collect()
}

/// Whether `branch` passes one of `candidates` (the filters its repository passes): its
/// `branchMatch`, then its paths, each asked of the provider at most once.
fn keeps(
    scan: &Scan<'_>,
    repository: &Repository,
    branch: &Branch,
    candidates: &[&Filter],
) -> Result<bool, ScmError> {
    let mut known: BTreeMap<String, bool> = BTreeMap::new();
    let mut exists = |path: &str| -> Result<bool, ScmError> {
        let path = path.trim_end_matches('/');
        if let Some(found) = known.get(path) {
            return Ok(*found);
        }
        let found = scan.has_path(repository, &branch.name, path)?;
        known.insert(path.to_string(), found);
        Ok(found)
    };
    'filters: for filter in candidates {
        if !matches(filter.branch.as_ref(), &branch.name) {
            continue;
        }
        for path in &filter.paths_exist {
            if !exists(path.as_str())? {
                continue 'filters;
            }
        }
        for path in &filter.paths_do_not_exist {
            if exists(path.as_str())? {
                continue 'filters;
            }
        }
        return Ok(true);
    }
    Ok(false)
}

/// Argo CD's parameters of one repository branch, the same in both template modes (`labels`
/// is the labels joined with commas, `repository_id` the id as text).
fn repository_params(repository: &Repository, branch: &Branch) -> Params {
    let short = |n: usize| branch.sha.chars().take(n).collect::<String>();
    [
        ("organization", repository.organization.clone()),
        ("repository", repository.name.clone()),
        ("repository_id", repository.id.clone()),
        ("url", repository.url.clone()),
        ("branch", branch.name.clone()),
        ("branchNormalized", normalize_name(&branch.name)),
        ("sha", branch.sha.clone()),
        ("short_sha", short(8)),
        ("short_sha_7", short(7)),
        ("labels", repository.labels.join(",")),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), Value::String(value)))
    .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::source::{HttpAnswer, Offline};
    use crate::testing::{MemoryScm as Api, fast, go, params, run_scm as run};

    const SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

    fn github_repo(id: u64, name: &str, topics: &[&str], archived: bool) -> Value {
        json!({
            "id": id, "name": name, "full_name": format!("acme/{name}"),
            "owner": {"login": "acme", "type": "Organization"},
            "default_branch": "main", "archived": archived, "topics": topics,
            "ssh_url": format!("git@github.com:acme/{name}.git"),
            "clone_url": format!("https://github.com/acme/{name}.git"),
        })
    }

    fn branch(name: &str, sha_key: &str) -> Value {
        json!({"name": name, "commit": {sha_key: SHA, "url": "https://example/commit"}, "protected": false})
    }

    #[test]
    fn github_repositories_over_two_pages_filtered_by_name_and_path() {
        let first = "https://api.github.com/orgs/acme/repos?per_page=100";
        let second = "https://api.github.com/organizations/1/repos?per_page=100&page=2";
        let repo = "https://api.github.com/repos/acme";
        let api = Api::default()
            .page(
                first,
                &[("link", &format!("<{second}>; rel=\"next\""))],
                json!([
                    github_repo(1, "app-web", &["deploy", "team-a"], false),
                    github_repo(2, "docs", &[], false)
                ]),
            )
            .page(
                second,
                &[],
                json!([
                    github_repo(3, "app-api", &[], false),
                    github_repo(4, "app-old", &[], true)
                ]),
            )
            .page(
                &format!("{repo}/app-web/branches/main"),
                &[],
                branch("main", "sha"),
            )
            .page(
                &format!("{repo}/app-api/branches/main"),
                &[],
                branch("main", "sha"),
            )
            .page(
                &format!("{repo}/app-web/contents/deploy/kustomization.yaml?ref=main"),
                &[],
                json!({"type": "file", "name": "kustomization.yaml"}),
            );
        let spec = json!({"scmProvider": {
            "github": {"organization": "acme", "tokenRef": {"secretName": "scm", "key": "token"}, "excludeArchivedRepos": true},
            "filters": [{"repositoryMatch": "^app-", "pathsExist": ["deploy/kustomization.yaml/"]}],
            "values": {"name": "{{ .organization }}-{{ .repository }}"},
        }});
        let sets = run(&go(), &api, spec).unwrap();
        assert_eq!(
            sets,
            vec![params(json!({
                "organization": "acme", "repository": "app-web", "repository_id": "1",
                "url": "git@github.com:acme/app-web.git", "branch": "main",
                "branchNormalized": "main", "sha": SHA, "short_sha": "6dcb09b5",
                "short_sha_7": "6dcb09b", "labels": "deploy,team-a",
                "values": {"name": "acme-app-web"},
            }))]
        );
        // docs fails repositoryMatch and app-old is archived: neither is asked about.
        assert_eq!(
            api.urls(),
            [
                first.to_string(),
                second.to_string(),
                format!("{repo}/app-web/branches/main"),
                format!("{repo}/app-web/contents/deploy/kustomization.yaml?ref=main"),
                format!("{repo}/app-api/branches/main"),
                format!("{repo}/app-api/contents/deploy/kustomization.yaml?ref=main"),
            ]
        );
        assert_eq!(
            api.header(first, "authorization").as_deref(),
            Some("Bearer t0k")
        );
    }

    #[test]
    fn gitlab_every_branch_of_a_group_with_subgroups_filtered_by_branch_and_path() {
        let list = "https://gl.example/api/v4/groups/acme%2Fplatform/projects?per_page=100&include_subgroups=true&with_shared=false&topic=deploy&archived=false";
        let project = "https://gl.example/api/v4/projects/42";
        let api = Api::default()
            .page(list, &[("x-next-page", "2")], json!([{
                "id": 42, "path": "web", "name": "Web", "namespace": {"full_path": "acme/platform/team"},
                "default_branch": "main", "topics": [], "tag_list": ["deploy"],
                "ssh_url_to_repo": "git@gl.example:acme/platform/team/web.git",
                "http_url_to_repo": "https://gl.example/acme/platform/team/web.git",
            }]))
            .page(&format!("{list}&page=2"), &[("x-next-page", "")], json!([{
                "id": 43, "path": "empty", "namespace": {"full_path": "acme/platform"},
                "default_branch": null, "topics": ["deploy"],
                "ssh_url_to_repo": "git@gl.example:acme/platform/empty.git",
                "http_url_to_repo": "https://gl.example/acme/platform/empty.git",
            }]))
            .page(&format!("{project}/repository/branches?per_page=100"), &[], json!([
                branch("main", "id"), branch("release/1.0", "id"), branch("wip", "id")
            ]))
            .page(&format!("{project}/repository/tree?ref=main&per_page=100&path=deploy"), &[],
                json!([{"id": "a1", "name": "kustomization.yaml", "type": "blob", "path": "deploy/kustomization.yaml", "mode": "100644"}]))
            .page(&format!("{project}/repository/tree?ref=release%2F1.0&per_page=100&path=deploy"), &[],
                json!([{"id": "a2", "name": "values.yaml", "type": "blob", "path": "deploy/values.yaml", "mode": "100644"}]));
        let spec = json!({"scmProvider": {
            "gitlab": {"group": "acme/platform", "api": "https://gl.example", "allBranches": true,
                       "includeSubgroups": true, "includeSharedProjects": false, "topic": "deploy",
                       "tokenRef": {"secretName": "scm", "key": "token"}},
            "cloneProtocol": "https",
            "filters": [{"branchMatch": "^(main|release/.*)$", "pathsExist": ["deploy/kustomization.yaml"]}],
        }});
        let sets = run(&fast(), &api, spec).unwrap();
        let found: Vec<(&Value, &Value, &Value, &Value)> = sets
            .iter()
            .map(|s| (&s["organization"], &s["branch"], &s["url"], &s["labels"]))
            .collect();
        assert_eq!(
            found,
            [(
                &json!("acme/platform/team"),
                &json!("main"),
                &json!("https://gl.example/acme/platform/team/web.git"),
                &json!("deploy")
            )]
        );
        assert_eq!(api.header(list, "private-token").as_deref(), Some("t0k"));
        // The empty project (404 on its branches) gives nothing, and is not an error.
        assert!(api.urls().contains(
            &"https://gl.example/api/v4/projects/43/repository/branches?per_page=100".to_string()
        ));
    }

    #[test]
    fn gitea_labels_and_bitbucket_server_paths_that_must_not_exist() {
        let gitea = "https://gitea.example/api/v1";
        let api = Api::default()
            .page(&format!("{gitea}/orgs/acme/repos?limit=50"), &[], json!([
                {"id": 7, "name": "web", "owner": {"login": "acme"}, "default_branch": "main",
                 "ssh_url": "git@gitea.example:acme/web.git", "html_url": "https://gitea.example/acme/web",
                 "clone_url": "https://gitea.example/acme/web.git", "archived": false},
                {"id": 8, "name": "api", "owner": {"login": "acme"}, "default_branch": "main",
                 "ssh_url": "git@gitea.example:acme/api.git", "html_url": "https://gitea.example/acme/api",
                 "clone_url": "https://gitea.example/acme/api.git", "archived": false},
            ]))
            .page(&format!("{gitea}/repos/acme/web/labels?limit=50"), &[], json!([{"id": 1, "name": "deploy-ok", "color": "00aabb"}]))
            .page(&format!("{gitea}/repos/acme/api/labels?limit=50"), &[], json!([]))
            .page(&format!("{gitea}/repos/acme/web/branches/main"), &[], branch("main", "id"));
        let sets = run(&go(), &api, json!({"scmProvider": {
            "gitea": {"owner": "acme", "api": "https://gitea.example", "tokenRef": {"secretName": "scm", "key": "token"}},
            "cloneProtocol": "https",
            "filters": [{"labelMatch": "^deploy-"}],
        }}))
        .unwrap();
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0]["url"], json!("https://gitea.example/acme/web"));
        assert_eq!(sets[0]["labels"], json!("deploy-ok"));
        assert_eq!(
            api.header(
                &format!("{gitea}/orgs/acme/repos?limit=50"),
                "authorization"
            )
            .as_deref(),
            Some("token t0k")
        );

        let rest = "https://bb.example/rest/api/1.0/projects/PRJ";
        let repo = |id: u64, slug: &str| {
            json!({
                "id": id, "slug": slug, "name": slug.to_uppercase(), "project": {"key": "PRJ"},
                "links": {"clone": [
                    {"href": format!("https://bb.example/scm/prj/{slug}.git"), "name": "http"},
                    {"href": format!("ssh://git@bb.example:7999/prj/{slug}.git"), "name": "ssh"},
                ]},
            })
        };
        let api = Api::default()
            .page(&format!("{rest}/repos?limit=100"), &[], json!({"size": 1, "limit": 1, "isLastPage": false, "start": 0, "nextPageStart": 1, "values": [repo(1, "web")]}))
            .page(&format!("{rest}/repos?limit=100&start=1"), &[], json!({"size": 2, "limit": 2, "isLastPage": true, "start": 1, "values": [repo(2, "api"), repo(3, "empty")]}))
            .page(&format!("{rest}/repos/web/branches/default"), &[], json!({"id": "refs/heads/master", "displayId": "master", "latestCommit": SHA, "isDefault": true}))
            .page(&format!("{rest}/repos/api/branches/default"), &[], json!({"id": "refs/heads/master", "displayId": "master", "latestCommit": SHA, "isDefault": true}))
            .page(&format!("{rest}/repos/api/browse/disabled.txt?at=master&type=true"), &[], json!({"type": "FILE"}));
        let sets = run(&go(), &api, json!({"scmProvider": {
            "bitbucketServer": {"project": "PRJ", "api": "https://bb.example", "basicAuth": {"username": "ci", "passwordRef": {"secretName": "scm", "key": "password"}}},
            "filters": [{"pathsDoNotExist": ["disabled.txt"]}],
        }}))
        .unwrap();
        let found: Vec<(&Value, &Value, &Value)> = sets
            .iter()
            .map(|s| (&s["repository"], &s["url"], &s["branch"]))
            .collect();
        assert_eq!(
            found,
            [(
                &json!("WEB"),
                &json!("ssh://git@bb.example:7999/prj/web.git"),
                &json!("master")
            )]
        );
        assert_eq!(
            api.header(&format!("{rest}/repos?limit=100"), "authorization")
                .as_deref(),
            Some("Basic Y2k6cHc=")
        );
    }

    #[test]
    fn a_branch_is_kept_when_any_filter_matches_all_its_fields() {
        let repo = "https://api.github.com/repos/acme/app";
        let api = Api::default()
            .page(
                "https://api.github.com/orgs/acme/repos?per_page=100",
                &[],
                json!([github_repo(1, "app", &["helm"], false)]),
            )
            .page(&format!("{repo}/branches/main"), &[], branch("main", "sha"))
            .page(
                &format!("{repo}/contents/helm?ref=main"),
                &[],
                json!([{"type": "dir"}]),
            );
        let keep = |filters: Value| {
            run(
                &go(),
                &api,
                json!({"scmProvider": {"github": {"organization": "acme"}, "filters": filters}}),
            )
            .unwrap()
            .len()
        };
        // The first filter fails on its path, the second passes whole.
        assert_eq!(
            keep(
                json!([{"repositoryMatch": "^app$", "pathsExist": ["kustomize"]}, {"labelMatch": "^helm$", "pathsExist": ["helm"]}])
            ),
            1
        );
        // One filter's fields are all required.
        assert_eq!(
            keep(json!([{"labelMatch": "^helm$", "pathsDoNotExist": ["helm"]}])),
            0
        );
        assert_eq!(
            keep(json!([{"repositoryMatch": "^app$", "labelMatch": "^kustomize$"}])),
            0
        );
        assert_eq!(
            keep(json!([{"branchMatch": "^release-"}, {"repositoryMatch": "^other"}])),
            0
        );
        assert_eq!(keep(json!([{}])), 1);
    }

    #[test]
    fn errors_name_the_generator_the_field_and_the_reason() {
        let api = Api::default();
        let error = |spec: Value| {
            run(&go(), &api, json!({"scmProvider": spec}))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error(json!({})),
            "scmProvider: set one provider: github, gitlab, gitea or bitbucketServer (bitbucket, azureDevOps and awsCodeCommit are not supported)"
        );
        assert_eq!(
            error(json!({"github": {"organization": "a"}, "gitlab": {"group": "g"}})),
            "scmProvider: several providers are set (github, gitlab); set one"
        );
        assert_eq!(
            error(json!({"github": {"organization": "a", "appSecretName": "app"}})),
            "scmProvider: github.appSecretName: GitHub App authentication is not supported; use tokenRef"
        );
        assert_eq!(
            error(json!({"github": {"organization": "a"}, "cloneProtocol": "git"})),
            "scmProvider: cloneProtocol: unknown clone protocol \"git\" (ssh or https)"
        );
        assert_eq!(
            error(json!({"github": {"organization": "a"}, "filters": [{"pathsExist": ["x"]}, {"labelMatch": "("}]}))
                .lines()
                .next()
                .unwrap(),
            "scmProvider: filters[1].labelMatch: invalid regular expression \"(\": regex parse error:"
        );
        assert_eq!(
            error(
                json!({"bitbucketServer": {"project": "P", "api": "https://bb", "basicAuth": {"username": "u", "passwordRef": {"secretName": "scm", "key": "password"}}, "bearerToken": {"tokenRef": {"secretName": "scm", "key": "token"}}}})
            ),
            "scmProvider: bitbucketServer: set basicAuth or bearerToken, not both"
        );
        assert_eq!(
            error(
                json!({"gitea": {"owner": "o", "api": "https://g", "tokenRef": {"secretName": "scm", "key": "nope"}}})
            ),
            "scmProvider: gitea.tokenRef: Secret scm has no key \"nope\""
        );
        assert_eq!(
            error(json!({"github": {"organization": "a"}})),
            "scmProvider: github: GET https://api.github.com/orgs/a/repos?per_page=100: answered HTTP 404: {\"message\":\"Not Found\"}"
        );
        let broken = Api::default().page(
            "https://api.github.com/orgs/a/repos?per_page=100",
            &[],
            json!([{"id": 1, "name": "x", "owner": {"login": "a"}}]),
        );
        assert_eq!(
            run(
                &go(),
                &broken,
                json!({"scmProvider": {"github": {"organization": "a"}}})
            )
            .unwrap_err()
            .to_string(),
            "scmProvider: github: GET https://api.github.com/orgs/a/repos?per_page=100: repository 0: no ssh_url in the answer"
        );
        let offline = run(&go(), &Offline, json!({"scmProvider": {"github": {"organization": "a", "tokenRef": {"secretName": "missing", "key": "k"}}}}))
            .unwrap_err();
        assert_eq!(
            offline.to_string(),
            "scmProvider: github: GET https://api.github.com/orgs/a/repos?per_page=100: pullRequest and scmProvider generators ask the provider's API over the network, which flotilla render and simulate do not (they read files only)"
        );
    }

    #[test]
    fn a_rate_limit_says_when_to_ask_again() {
        let mut api = Api::default();
        api.pages.insert(
            "https://gl.example/api/v4/groups/g/projects?per_page=100&include_subgroups=false&with_shared=true&archived=false".into(),
            HttpAnswer {
                status: 429,
                headers: vec![("retry-after".into(), "30".into())],
                body: b"Retry later".to_vec(),
            },
        );
        let error = run(
            &go(),
            &api,
            json!({"scmProvider": {"gitlab": {"group": "g", "api": "https://gl.example"}}}),
        )
        .unwrap_err();
        assert_eq!(
            error.retry_after(),
            Some(crate::scm_api::rate_limit::RetryAfter::Seconds(30))
        );
    }
}

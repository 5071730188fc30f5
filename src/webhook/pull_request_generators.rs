//! Which ApplicationSets a pull-request event refreshes: those with a `pullRequest` generator of
//! the event's provider — at the top, or in a matrix or merge at any depth — that lists the
//! event's repository, compared as Argo CD compares: GitHub's `owner` and `repo` without case and
//! the host of `api` (default `https://api.github.com`) with the event's API host; GitLab's
//! `project` with the target project's id (Argo CD's only comparison) or its path
//! (`group/name`, without case), and the host of `api` (default `https://gitlab.com`); Gitea's
//! `owner`, `repo` (without case) and the host of `api`; Bitbucket Server's `project` key and
//! `repo` slug (without case; its payloads carry no usable URL). Ports are not compared (an
//! API and its web pages may be served on different ones). A field templated from a matrix's
//! other generator (`{{ … }}`) matches any value: Argo CD renders it first; here a refresh too
//! many costs one listing. Pure.

use flotilla_generators::spec::{GeneratorSpec, PullRequestGenerator};
use serde_json::Value;

use super::pull_request_event::{PullRequestEvent, PullRequestRepo};
use super::repo_url::url_host;

/// Whether one of `generators` (nested ones included) lists the pull requests of `event`'s
/// repository.
#[must_use]
pub fn lists_pull_requests_of(generators: &[GeneratorSpec], event: &PullRequestEvent) -> bool {
    serde_json::to_value(generators).is_ok_and(|entries| any_lists(&entries, event))
}

/// Whether an entry of the array `entries` lists them, or a matrix's or merge's children do.
fn any_lists(entries: &Value, event: &PullRequestEvent) -> bool {
    entries.as_array().into_iter().flatten().any(|entry| {
        let own = entry
            .get("pullRequest")
            .and_then(|generator| {
                serde_json::from_value::<PullRequestGenerator>(generator.clone()).ok()
            })
            .is_some_and(|generator| lists(&generator, &event.repo));
        own || ["matrix", "merge"].iter().any(|kind| {
            entry
                .get(kind)
                .and_then(|combined| combined.get("generators"))
                .is_some_and(|children| any_lists(children, event))
        })
    })
}

/// Whether `generator` lists the pull requests of `repo`.
fn lists(generator: &PullRequestGenerator, repo: &PullRequestRepo) -> bool {
    match repo {
        PullRequestRepo::Github {
            api_host,
            owner,
            repo,
        } => generator.github.as_ref().is_some_and(|github| {
            same(&github.owner, owner)
                && same(&github.repo, repo)
                && same_host(&github.api, "https://api.github.com", api_host)
        }),
        PullRequestRepo::Gitlab {
            host,
            project_id,
            path,
        } => generator.gitlab.as_ref().is_some_and(|gitlab| {
            let project = gitlab.project.trim();
            let by_id = project_id.is_some_and(|id| project == id.to_string());
            let by_path = path.as_deref().is_some_and(|path| same(project, path));
            (templated(project) || by_id || by_path)
                && same_host(&gitlab.api, "https://gitlab.com", host)
        }),
        PullRequestRepo::Gitea { host, owner, repo } => {
            generator.gitea.as_ref().is_some_and(|gitea| {
                same(&gitea.owner, owner)
                    && same(&gitea.repo, repo)
                    && same_host(&gitea.api, "", host)
            })
        }
        PullRequestRepo::BitbucketServer { project, repo } => generator
            .bitbucket_server
            .as_ref()
            .is_some_and(|server| same(&server.project, project) && same(&server.repo, repo)),
    }
}

/// Whether `field` is templated from another generator's parameters.
fn templated(field: &str) -> bool {
    field.contains("{{")
}

/// Whether the generator's `field` names `value` (case aside) or is templated.
fn same(field: &str, value: &str) -> bool {
    templated(field) || field.trim().eq_ignore_ascii_case(value)
}

/// Whether the API URL `api` (`default` when empty) is on `host`, or is templated.
fn same_host(api: &str, default: &str, host: &str) -> bool {
    let api = if api.trim().is_empty() { default } else { api };
    templated(api) || url_host(api).is_some_and(|api_host| api_host == host)
}

#[cfg(test)]
mod tests {
    use flotilla_generators::spec::GeneratorSpec;
    use serde_json::json;

    use super::*;
    use crate::webhook::provider::Provider;

    fn event(provider: Provider, repo: PullRequestRepo) -> PullRequestEvent {
        PullRequestEvent {
            provider,
            repo,
            number: Some(7),
            action: "opened".into(),
        }
    }

    fn github(api_host: &str, owner: &str, repo: &str) -> PullRequestEvent {
        event(
            Provider::GitHub,
            PullRequestRepo::Github {
                api_host: api_host.into(),
                owner: owner.into(),
                repo: repo.into(),
            },
        )
    }

    fn generators(entries: Value) -> Vec<GeneratorSpec> {
        serde_json::from_value(entries).expect("generator entries")
    }

    fn listed(entries: Value, event: &PullRequestEvent) -> bool {
        lists_pull_requests_of(&generators(entries), event)
    }

    #[test]
    fn github_compares_owner_and_repo_without_case_and_the_api_host() {
        let public = json!([{"pullRequest": {"github": {"owner": "Acme", "repo": "Web"}}}]);
        assert!(listed(
            public.clone(),
            &github("api.github.com", "acme", "web")
        ));
        for other in [
            github("api.github.com", "acme", "web-docs"),
            github("api.github.com", "other", "web"),
            github("ghe.example", "acme", "web"),
        ] {
            assert!(!listed(public.clone(), &other), "{other}");
        }
        let enterprise = json!([{"pullRequest": {"github": {"owner": "acme", "repo": "web", "api": "https://GHE.example:8443/"}}}]);
        assert!(listed(
            enterprise.clone(),
            &github("ghe.example", "acme", "web")
        ));
        assert!(!listed(
            enterprise,
            &github("api.github.com", "acme", "web")
        ));
    }

    #[test]
    fn gitlab_compares_the_project_id_or_path_and_the_host() {
        let merge_request = |host: &str| {
            event(
                Provider::GitLab,
                PullRequestRepo::Gitlab {
                    host: host.into(),
                    project_id: Some(14),
                    path: Some("group/web".into()),
                },
            )
        };
        for project in ["14", "group/web", "Group/Web"] {
            let entries = json!([{"pullRequest": {"gitlab": {"project": project}}}]);
            assert!(
                listed(entries.clone(), &merge_request("gitlab.com")),
                "{project}"
            );
            assert!(
                !listed(entries, &merge_request("gitlab.example")),
                "{project}"
            );
        }
        for project in ["15", "group/web-docs", "web"] {
            let entries = json!([{"pullRequest": {"gitlab": {"project": project}}}]);
            assert!(!listed(entries, &merge_request("gitlab.com")), "{project}");
        }
        let own_server = json!([{"pullRequest": {"gitlab": {"project": "14", "api": "https://gitlab.example/"}}}]);
        assert!(listed(own_server, &merge_request("gitlab.example")));
    }

    #[test]
    fn gitea_and_bitbucket_server_compare_their_repository() {
        let gitea = event(
            Provider::Gitea,
            PullRequestRepo::Gitea {
                host: "gitea.example".into(),
                owner: "acme".into(),
                repo: "web".into(),
            },
        );
        let entries = json!([{"pullRequest": {"gitea": {"owner": "acme", "repo": "web", "api": "https://gitea.example"}}}]);
        assert!(listed(entries, &gitea));
        let elsewhere = json!([{"pullRequest": {"gitea": {"owner": "acme", "repo": "web", "api": "https://forgejo.example"}}}]);
        assert!(!listed(elsewhere, &gitea));
        let server = |project: &str, repo: &str| {
            event(
                Provider::BitbucketServer,
                PullRequestRepo::BitbucketServer {
                    project: project.into(),
                    repo: repo.into(),
                },
            )
        };
        let entries = json!([{"pullRequest": {"bitbucketServer": {"project": "PRJ", "repo": "web", "api": "https://bb.example"}}}]);
        assert!(listed(entries.clone(), &server("PRJ", "web")));
        assert!(listed(entries.clone(), &server("prj", "web")));
        assert!(!listed(entries, &server("PRJ", "api")));
    }

    #[test]
    fn another_providers_generator_or_another_kind_lists_nothing() {
        let event = github("api.github.com", "acme", "web");
        let entries = json!([
            {"pullRequest": {"gitea": {"owner": "acme", "repo": "web", "api": "https://api.github.com"}}},
            {"git": {"repoURL": "https://github.com/acme/web", "revision": "HEAD", "directories": [{"path": "*"}]}},
            {"list": {"elements": [{"pullRequest": {"github": {"owner": "acme", "repo": "web"}}}]}}
        ]);
        assert!(!listed(entries, &event));
    }

    #[test]
    fn generators_nested_in_matrix_and_merge_are_found_and_templates_match_any_value() {
        let event = github("api.github.com", "acme", "web");
        let nested = json!([{"matrix": {"generators": [
            {"list": {"elements": [{"stage": "preview"}]}},
            {"merge": {"mergeKeys": ["number"], "generators": [
                {"pullRequest": {"github": {"owner": "acme", "repo": "web"}}},
                {"list": {"elements": []}}
            ]}}
        ]}}]);
        assert!(listed(nested, &event));
        let templated = json!([{"matrix": {"generators": [
            {"list": {"elements": [{"repo": "web"}]}},
            {"pullRequest": {"github": {"owner": "acme", "repo": "{{ .repo }}"}}}
        ]}}]);
        assert!(listed(templated, &event));
        let other = json!([{"merge": {"mergeKeys": ["number"], "generators": [
            {"pullRequest": {"github": {"owner": "acme", "repo": "api"}}},
            {"list": {"elements": []}}
        ]}}]);
        assert!(!listed(other, &event));
    }
}

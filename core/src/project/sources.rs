//! Which repositories a project lets its Applications deploy from (`sourceRepos`): some allow
//! entry matches and no `!` entry does, comparing URLs as Argo CD normalises them. As in Argo
//! CD, the repositories of the project's own repository Secrets (`project: NAME`) are permitted
//! as if listed, unless a `!` entry denies them.

use crate::api::app_project::AppProjectSpec;

use super::memos::ProjectMemos;
use super::pattern::{ListVerdict, judge_list};
use super::refusal::{Refusal, no_entry};

/// Whether `project` (named `name`) permits deploying from `repo`; `scoped` are the URLs of the
/// repository Secrets scoped to the project (permitted unless denied); globs are kept in `memos`.
///
/// # Errors
/// The refusal naming the rule, or an unusable entry.
pub fn permit_source(
    name: &str,
    project: &AppProjectSpec,
    scoped: &[String],
    repo: &str,
    memos: &ProjectMemos,
) -> Result<(), Refusal> {
    let normalized = normalize(repo);
    let verdict = judge_list(&project.source_repos, &normalized, normalize, memos).map_err(
        |(index, error)| Refusal::Pattern {
            project: name.to_owned(),
            field: format!("sourceRepos[{index}]"),
            error,
        },
    )?;
    let refused = |rule: String| Refusal::Source {
        project: name.to_owned(),
        repo: repo.to_owned(),
        rule,
    };
    match verdict {
        ListVerdict::Permitted => Ok(()),
        ListVerdict::Denied(entry) => {
            Err(refused(format!("denied by sourceRepos entry {entry:?}")))
        }
        ListVerdict::Unmatched if scoped.iter().any(|url| normalize(url) == normalized) => Ok(()),
        ListVerdict::Unmatched => {
            let allow_entries: Vec<String> = project
                .source_repos
                .iter()
                .filter(|entry| !entry.starts_with('!'))
                .map(|entry| format!("{entry:?}"))
                .collect();
            Err(refused(no_entry("sourceRepos", &allow_entries)))
        }
    }
}

/// A repository URL as compared: lower case, without a trailing `/` or `.git`.
fn normalize(url: &str) -> String {
    let lower = url.trim().to_lowercase();
    let trimmed = lower.trim_end_matches('/');
    trimmed.strip_suffix(".git").unwrap_or(trimmed).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::permit_source`] with memos of its own.
    fn permit_source(
        name: &str,
        project: &AppProjectSpec,
        scoped: &[String],
        repo: &str,
    ) -> Result<(), Refusal> {
        super::permit_source(name, project, scoped, repo, &ProjectMemos::default())
    }

    fn project(entries: &[&str]) -> AppProjectSpec {
        AppProjectSpec {
            source_repos: entries.iter().map(|e| (*e).to_owned()).collect(),
            ..AppProjectSpec::default()
        }
    }

    const NONE: &[String] = &[];

    #[test]
    fn the_projects_own_repositories_are_permitted_unless_denied() {
        let team = project(&[
            "https://git.example.com/team-a/*",
            "!https://git.example.com/bad",
        ]);
        let scoped = [
            "https://git.example.com/shared/LIB.git".to_owned(),
            "https://git.example.com/bad".to_owned(),
        ];
        assert!(
            permit_source(
                "team-a",
                &team,
                &scoped,
                "https://git.example.com/shared/lib"
            )
            .is_ok()
        );
        assert!(
            permit_source("team-a", &team, NONE, "https://git.example.com/shared/lib").is_err()
        );
        assert!(matches!(
            permit_source("team-a", &team, &scoped, "https://git.example.com/bad"),
            Err(Refusal::Source { rule, .. }) if rule.contains("denied by")
        ));
    }

    #[test]
    fn an_allow_entry_must_match_and_no_deny_entry() {
        let docs = project(&[
            "!ssh://git@GITHUB.com:argoproj/test",
            "!https://gitlab.com/group/**",
            "*",
        ]);
        assert!(permit_source("p", &docs, NONE, "https://github.com/argoproj/argo-cd.git").is_ok());
        assert!(permit_source("p", &docs, NONE, "ssh://git@github.com:argoproj/test").is_err());
        let denied =
            permit_source("p", &docs, NONE, "https://gitlab.com/group/sub/app").unwrap_err();
        assert_eq!(
            denied.to_string(),
            "repository https://gitlab.com/group/sub/app is not permitted in project \"p\": \
             denied by sourceRepos entry \"!https://gitlab.com/group/**\""
        );
        let team = project(&["https://git.example.com/team-a/*"]);
        assert!(
            permit_source(
                "team-a",
                &team,
                NONE,
                "https://git.example.com/team-a/app.git/"
            )
            .is_ok()
        );
        assert_eq!(
            permit_source("team-a", &team, NONE, "https://git.example.com/team-b/app")
                .unwrap_err()
                .to_string(),
            "repository https://git.example.com/team-b/app is not permitted in project \
             \"team-a\": no sourceRepos entry permits it (\"https://git.example.com/team-a/*\")"
        );
        assert!(matches!(
            permit_source("x", &project(&[]), NONE, "https://a/b"),
            Err(Refusal::Source { rule, .. }) if rule.contains("permits nothing")
        ));
        assert!(matches!(
            permit_source("x", &project(&["a["]), NONE, "https://a/b"),
            Err(Refusal::Pattern { field, .. }) if field == "sourceRepos[0]"
        ));
    }
}

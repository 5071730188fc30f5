//! Which revisions a push moves (pure), as Argo CD decides which Applications a webhook
//! refreshes: a source (or git generator) whose `targetRevision` (`revision`) names a pushed
//! branch or tag — bare or as `refs/heads/…`/`refs/tags/…` — is touched; one following `HEAD`
//! (or nothing) is touched by a push to the repository's default branch; a commit, or a name
//! the push does not move, is not. When the payload does not say which refs were pushed, or
//! (for `HEAD`) which branch is the default, everything is touched, as before the filter: a
//! refresh too many costs one compare, a refresh missed leaves a commit unseen.

/// The refs of one push.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushedRefs {
    /// The names pushed, `refs/heads/` and `refs/tags/` removed.
    names: Vec<String>,
    /// The repository's default branch, when the payload tells it.
    default_branch: Option<String>,
}

impl PushedRefs {
    /// The refs `refs` (`refs/heads/main`, `refs/tags/v1`, or bare names) of a repository whose
    /// default branch is `default_branch`.
    #[must_use]
    pub fn new(refs: &[String], default_branch: Option<&str>) -> Self {
        Self {
            names: refs.iter().map(|r| short_name(r).to_owned()).collect(),
            default_branch: default_branch
                .filter(|branch| !branch.is_empty())
                .map(|branch| short_name(branch).to_owned()),
        }
    }

    /// Whether a source following `target_revision` may see a new commit after this push.
    #[must_use]
    pub fn touches(&self, target_revision: &str) -> bool {
        if self.names.is_empty() {
            return true;
        }
        let target = short_name(target_revision.trim());
        if target.is_empty() || target == "HEAD" {
            return self
                .default_branch
                .as_ref()
                .is_none_or(|branch| self.names.contains(branch));
        }
        self.names.iter().any(|name| name == target)
    }
}

/// `name` without `refs/heads/` or `refs/tags/`.
fn short_name(name: &str) -> &str {
    name.strip_prefix("refs/heads/")
        .or_else(|| name.strip_prefix("refs/tags/"))
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pushed(refs: &[&str], default_branch: Option<&str>) -> PushedRefs {
        let refs: Vec<String> = refs.iter().map(ToString::to_string).collect();
        PushedRefs::new(&refs, default_branch)
    }

    #[test]
    fn a_branch_push_touches_the_sources_that_follow_it() {
        let push = pushed(&["refs/heads/main"], Some("main"));
        for target in ["main", "refs/heads/main", "HEAD", ""] {
            assert!(push.touches(target), "{target}");
        }
        for target in [
            "feature",
            "v1.0.0",
            "8d6f0f3a9c1e2b4d5f6a7b8c9d0e1f2a3b4c5d6e",
        ] {
            assert!(!push.touches(target), "{target}");
        }
    }

    #[test]
    fn a_push_elsewhere_than_the_default_branch_leaves_head_alone() {
        let push = pushed(&["refs/heads/feature"], Some("main"));
        assert!(push.touches("feature"));
        assert!(!push.touches("HEAD"));
        assert!(!push.touches("main"));
        let tag = pushed(&["refs/tags/v1.2.0"], Some("main"));
        assert!(tag.touches("v1.2.0"));
        assert!(tag.touches("refs/tags/v1.2.0"));
        assert!(!tag.touches("HEAD"));
    }

    #[test]
    fn what_the_payload_does_not_tell_touches_everything_it_could() {
        // Bitbucket Cloud names bare branches and no default branch.
        let push = pushed(&["main"], None);
        assert!(push.touches("refs/heads/main"));
        assert!(push.touches("HEAD"));
        assert!(!push.touches("feature"));
        let unknown = pushed(&[], Some("main"));
        assert!(unknown.touches("feature"));
    }
}

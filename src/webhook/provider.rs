//! Which git host sent a webhook, told by the headers each documents, and what kind of event it
//! is: a push, a pull-request event of a host whose pull requests a `pullRequest` generator lists
//! (GitHub's and Gitea's `pull_request`, GitLab's `Merge Request Hook`, Bitbucket Server's
//! `pr:…` keys), a ping, or anything else. Gitea and Forgejo also send Gogs' and GitHub's headers
//! (for tools written for those), so their own headers are looked at first, then Gogs', then
//! GitHub's. Pure.

use hyper::HeaderMap;

/// A git host whose push webhooks are received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    GitHub,
    GitLab,
    /// Bitbucket Cloud (bitbucket.org).
    Bitbucket,
    /// Bitbucket Server and Data Center.
    BitbucketServer,
    /// Gitea and Forgejo (a fork of Gitea that sends the same payloads).
    Gitea,
    Gogs,
}

/// What a webhook announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Commits pushed (or a branch or tag created or moved).
    Push,
    /// Something happened to a pull (merge) request; which action is in the payload (Bitbucket
    /// Server's is the event key itself, repeated in the payload's `eventKey`).
    PullRequest,
    /// The host checking that the webhook works (sent when one is created or tested).
    Ping,
    /// Anything else, by the host's name for it.
    Other(String),
}

impl Provider {
    /// Its name in metrics and messages (the word of Argo CD's `webhook.<name>.secret` keys;
    /// `gitea` for Gitea and Forgejo).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::GitHub => "github",
            Self::GitLab => "gitlab",
            Self::Bitbucket => "bitbucket",
            Self::BitbucketServer => "bitbucketserver",
            Self::Gitea => "gitea",
            Self::Gogs => "gogs",
        }
    }

    /// The provider and event of a request with `headers`, or `None` when no provider's event
    /// header is there.
    #[must_use]
    pub fn identify(headers: &HeaderMap) -> Option<(Self, Event)> {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
        };
        let (provider, event) =
            if let Some(event) = header("x-forgejo-event").or_else(|| header("x-gitea-event")) {
                (Self::Gitea, event)
            } else if let Some(event) = header("x-gogs-event") {
                (Self::Gogs, event)
            } else if let Some(event) = header("x-github-event") {
                (Self::GitHub, event)
            } else if let Some(event) = header("x-gitlab-event") {
                (Self::GitLab, event)
            } else if let Some(event) = header("x-event-key") {
                // Bitbucket Cloud names each webhook with X-Hook-UUID; Server does not.
                if headers.contains_key("x-hook-uuid") {
                    (Self::Bitbucket, event)
                } else {
                    (Self::BitbucketServer, event)
                }
            } else {
                return None;
            };
        Some((provider, provider.event(event)))
    }

    /// What the provider's event name `name` announces.
    fn event(self, name: &str) -> Event {
        let push = match self {
            Self::GitHub | Self::Gitea | Self::Gogs => name == "push",
            Self::GitLab => matches!(name, "Push Hook" | "Tag Push Hook"),
            Self::Bitbucket => name == "repo:push",
            Self::BitbucketServer => name == "repo:refs_changed",
        };
        let pull_request = match self {
            Self::GitHub | Self::Gitea => name == "pull_request",
            Self::GitLab => name == "Merge Request Hook",
            Self::BitbucketServer => name.starts_with("pr:"),
            // No pullRequest generator reads Bitbucket Cloud or Gogs.
            Self::Bitbucket | Self::Gogs => false,
        };
        let ping = match self {
            Self::GitHub => name == "ping",
            Self::BitbucketServer => name == "diagnostics:ping",
            _ => false,
        };
        if push {
            Event::Push
        } else if pull_request {
            Event::PullRequest
        } else if ping {
            Event::Ping
        } else {
            Event::Other(name.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Case = (
        &'static [(&'static str, &'static str)],
        Option<(Provider, Event)>,
    );

    fn identify(headers: &[(&'static str, &'static str)]) -> Option<(Provider, Event)> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        Provider::identify(&map)
    }

    #[test]
    fn each_host_is_told_by_its_headers() {
        let cases: [Case; 15] = [
            (
                &[("x-github-event", "push")],
                Some((Provider::GitHub, Event::Push)),
            ),
            (
                &[("x-github-event", "ping")],
                Some((Provider::GitHub, Event::Ping)),
            ),
            (
                &[("x-github-event", "issues")],
                Some((Provider::GitHub, Event::Other("issues".into()))),
            ),
            (
                &[("x-gitlab-event", "Push Hook")],
                Some((Provider::GitLab, Event::Push)),
            ),
            (
                &[("x-event-key", "repo:push"), ("x-hook-uuid", "{u}")],
                Some((Provider::Bitbucket, Event::Push)),
            ),
            (
                &[("x-event-key", "repo:refs_changed"), ("x-request-id", "r")],
                Some((Provider::BitbucketServer, Event::Push)),
            ),
            // Gitea sends Gogs' and GitHub's headers too.
            (
                &[
                    ("x-gitea-event", "push"),
                    ("x-gogs-event", "push"),
                    ("x-github-event", "push"),
                ],
                Some((Provider::Gitea, Event::Push)),
            ),
            (
                &[("x-forgejo-event", "push"), ("x-gitea-event", "push")],
                Some((Provider::Gitea, Event::Push)),
            ),
            (
                &[("x-gogs-event", "push"), ("x-github-event", "push")],
                Some((Provider::Gogs, Event::Push)),
            ),
            (
                &[("x-github-event", "pull_request")],
                Some((Provider::GitHub, Event::PullRequest)),
            ),
            (
                &[("x-gitlab-event", "Merge Request Hook")],
                Some((Provider::GitLab, Event::PullRequest)),
            ),
            (
                &[("x-event-key", "pr:from_ref_updated")],
                Some((Provider::BitbucketServer, Event::PullRequest)),
            ),
            (
                &[
                    ("x-gitea-event", "pull_request"),
                    ("x-github-event", "pull_request"),
                ],
                Some((Provider::Gitea, Event::PullRequest)),
            ),
            // Bitbucket Cloud's pull requests are read by no generator.
            (
                &[
                    ("x-event-key", "pullrequest:created"),
                    ("x-hook-uuid", "{u}"),
                ],
                Some((
                    Provider::Bitbucket,
                    Event::Other("pullrequest:created".into()),
                )),
            ),
            (&[("content-type", "application/json")], None),
        ];
        for (headers, expected) in cases {
            assert_eq!(identify(headers), expected, "{headers:?}");
        }
    }
}

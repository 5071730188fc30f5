//! The one name of a repository that a webhook payload and an Application's `repoURL` both
//! reduce to, whatever form each writes it in: `https://Host/org/repo.git`,
//! `ssh://git@host:22/org/repo`, scp-like `git@host:org/repo.git` and `git://host/org/repo` all
//! name `host/org/repo`. Case is ignored (hosts are case-insensitive, and the git hosts this
//! receiver serves match paths without case too), as are ports (one repository is served over
//! https on one port and ssh on another), user names, the `.git` suffix and trailing slashes.
//! Local paths and `file://` URLs name no remote repository: no push can name them. Pure.

use std::fmt;

/// A repository as `host/path`, lower case, without port, user, `.git` or slashes at either end.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RepoKey(String);

impl RepoKey {
    /// The key of `url`, or `None` for a local path, a `file://` URL or something without a
    /// host and a path.
    #[must_use]
    pub fn of(url: &str) -> Option<Self> {
        let url = url.trim();
        let (authority, path) = match url.split_once("://") {
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("file") => return None,
            Some((_, rest)) => rest.split_once('/')?,
            // scp-like `user@host:path`: a colon before any slash.
            None => {
                let colon = url.find(':')?;
                if url[..colon].contains('/') {
                    return None;
                }
                (&url[..colon], &url[colon + 1..])
            }
        };
        let host = host_of(authority);
        let path = path.trim_matches('/');
        let path = path
            .strip_suffix(".git")
            .unwrap_or(path)
            .trim_end_matches('/');
        if host.is_empty() || path.is_empty() {
            return None;
        }
        Some(Self(format!("{host}/{path}").to_lowercase()))
    }
}

/// The host of `url` (`scheme://user@Host:port/…`), lower case, without user or port; `None`
/// for something without a scheme and a host. SCM API base URLs are compared by it.
#[must_use]
pub fn url_host(url: &str) -> Option<String> {
    let (_, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = host_of(authority);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The host of `user@host:port` (an IPv6 address keeps its brackets).
fn host_of(authority: &str) -> &str {
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if let Some(end) = host.find(']') {
        return &host[..=end];
    }
    host.split_once(':').map_or(host, |(host, _)| host)
}

impl fmt::Display for RepoKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_one_repository_has_one_key() {
        let forms = [
            "https://github.com/acme/platform",
            "https://github.com/acme/platform.git",
            "https://GitHub.COM/acme/platform/",
            "http://user:token@github.com:443/acme/platform.git",
            "git@github.com:acme/platform.git",
            "git@GITHUB.com:acme/platform",
            "ssh://git@github.com/acme/platform.git",
            "ssh://git@github.com:22/acme/platform",
            "git://github.com/acme/platform.git",
            "https://github.com/Acme/Platform.git",
        ];
        for form in forms {
            assert_eq!(
                RepoKey::of(form).map(|k| k.to_string()).as_deref(),
                Some("github.com/acme/platform"),
                "{form}"
            );
        }
    }

    #[test]
    fn other_repositories_and_local_paths_differ() {
        let key = RepoKey::of("https://github.com/acme/platform").unwrap();
        for other in [
            "https://github.com/acme/platform-docs",
            "https://gitlab.com/acme/platform",
            "https://github.com/acme/platform/sub",
        ] {
            assert_ne!(RepoKey::of(other).as_ref(), Some(&key), "{other}");
        }
        for local in [
            "file:///srv/git/platform.git",
            "/srv/git/platform",
            "./repo",
            "",
        ] {
            assert_eq!(RepoKey::of(local), None, "{local}");
        }
        assert_eq!(
            RepoKey::of("ssh://git@[::1]:7999/scm/acme/platform.git").map(|k| k.to_string()),
            Some("[::1]/scm/acme/platform".to_owned())
        );
    }

    #[test]
    fn a_urls_host_drops_user_port_and_case() {
        for (url, host) in [
            ("https://API.github.com/repos/a/b", Some("api.github.com")),
            ("http://ci:pw@127.0.0.1:8080/api/v3", Some("127.0.0.1")),
            ("https://gitlab.example", Some("gitlab.example")),
            ("https://[::1]:3000/", Some("[::1]")),
            ("gitea.example/api", None),
            ("", None),
        ] {
            assert_eq!(url_host(url).as_deref(), host, "{url}");
        }
    }
}

//! Which clusters and namespaces a project lets its Applications deploy to (`destinations`):
//! some allow entry matches — its `server` or its `name`, and its `namespace` — and no entry
//! with a `!` on either matches.

use std::fmt;

use crate::api::app_project::{AppProjectSpec, ProjectDestination};

use super::memos::ProjectMemos;
use super::refusal::{Refusal, no_entry};

/// A cluster by both of its names (the server URL and the registered name); either may be
/// empty when unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterIdentity {
    pub server: String,
    pub name: String,
}

/// A place objects are deployed to: a cluster and a namespace (empty for cluster-scoped).
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub cluster: &'a ClusterIdentity,
    pub namespace: &'a str,
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cluster = match (self.cluster.server.as_str(), self.cluster.name.as_str()) {
            ("", "") => "an unknown cluster".to_owned(),
            (server, "") => server.to_owned(),
            ("", name) => format!("cluster {name}"),
            (server, name) => format!("{server} ({name})"),
        };
        write!(f, "{cluster}, namespace {:?}", self.namespace)
    }
}

/// Whether `project` (named `name`) permits deploying to `place`; globs are kept in `memos`.
///
/// # Errors
/// The refusal naming the rule, or an unusable entry.
pub fn permit_destination(
    name: &str,
    project: &AppProjectSpec,
    place: Place<'_>,
    memos: &ProjectMemos,
) -> Result<(), Refusal> {
    let mut allowed = false;
    for (index, entry) in project.destinations.iter().enumerate() {
        let entry_match = EntryMatch::of(name, index, entry, place, memos)?;
        if entry_match.denies && entry_match.matched {
            return Err(Refusal::Destination {
                project: name.to_owned(),
                destination: place.to_string(),
                rule: format!("denied by destinations entry {}", describe(entry)),
            });
        }
        allowed |= !entry_match.denies && entry_match.matched;
    }
    if allowed {
        Ok(())
    } else {
        let entries: Vec<String> = project
            .destinations
            .iter()
            .filter(|e| {
                ![&e.server, &e.name, &e.namespace]
                    .iter()
                    .any(|c| c.starts_with('!'))
            })
            .map(describe)
            .collect();
        Err(Refusal::Destination {
            project: name.to_owned(),
            destination: place.to_string(),
            rule: no_entry("destinations", &entries),
        })
    }
}

/// How one entry judges a place.
struct EntryMatch {
    denies: bool,
    matched: bool,
}

impl EntryMatch {
    fn of(
        project: &str,
        index: usize,
        entry: &ProjectDestination,
        place: Place<'_>,
        memos: &ProjectMemos,
    ) -> Result<Self, Refusal> {
        let parse = |field: &str, text: &str| {
            memos.pattern(text).map_err(|error| Refusal::Pattern {
                project: project.to_owned(),
                field: format!("destinations[{index}].{field}"),
                error,
            })
        };
        let mut denies = false;
        let mut component = |field: &str, text: &str, value: &str| -> Result<bool, Refusal> {
            let pattern = parse(field, text)?;
            denies |= pattern.denies();
            Ok(pattern.matches(value))
        };
        let server =
            !entry.server.is_empty() && component("server", &entry.server, &place.cluster.server)?;
        let cluster_name =
            !entry.name.is_empty() && component("name", &entry.name, &place.cluster.name)?;
        let namespace = if entry.namespace.is_empty() {
            place.namespace.is_empty()
        } else {
            component("namespace", &entry.namespace, place.namespace)?
        };
        Ok(Self {
            denies,
            matched: (server || cluster_name) && namespace,
        })
    }
}

/// An entry as the user wrote it.
fn describe(entry: &ProjectDestination) -> String {
    let mut parts = Vec::new();
    for (field, value) in [
        ("server", &entry.server),
        ("name", &entry.name),
        ("namespace", &entry.namespace),
    ] {
        if !value.is_empty() {
            parts.push(format!("{field}: {value:?}"));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, name: &str, namespace: &str) -> ProjectDestination {
        ProjectDestination {
            server: server.to_owned(),
            name: name.to_owned(),
            namespace: namespace.to_owned(),
        }
    }

    fn judge(entries: Vec<ProjectDestination>, server: &str, name: &str, ns: &str) -> String {
        let project = AppProjectSpec {
            destinations: entries,
            ..AppProjectSpec::default()
        };
        let cluster = ClusterIdentity {
            server: server.to_owned(),
            name: name.to_owned(),
        };
        let place = Place {
            cluster: &cluster,
            namespace: ns,
        };
        permit_destination("p", &project, place, &ProjectMemos::default())
            .map_or_else(|e| e.to_string(), |()| "ok".into())
    }

    #[test]
    fn allow_entries_by_server_or_name_and_denials_win() {
        let docs = || {
            vec![
                entry("*", "", "!kube-system"),
                entry("!https://team1-*", "", "*"),
                entry("*", "", "*"),
            ]
        };
        assert_eq!(judge(docs(), "https://prod", "prod", "shop"), "ok");
        assert_eq!(
            judge(docs(), "https://prod", "prod", "kube-system"),
            "destination https://prod (prod), namespace \"kube-system\" is not permitted in \
             project \"p\": denied by destinations entry {server: \"*\", namespace: \"!kube-system\"}"
        );
        assert!(judge(docs(), "https://team1-eu", "", "shop").contains("denied by"));
        let by_name = || vec![entry("", "staging-*", "shop-*")];
        assert_eq!(
            judge(by_name(), "https://10.0.0.1", "staging-eu", "shop-web"),
            "ok"
        );
        assert_eq!(
            judge(by_name(), "https://10.0.0.1", "prod-eu", "shop-web"),
            "destination https://10.0.0.1 (prod-eu), namespace \"shop-web\" is not permitted in \
             project \"p\": no destinations entry permits it ({name: \"staging-*\", namespace: \"shop-*\"})"
        );
        assert!(
            judge(vec![entry("*", "", "shop")], "https://a", "", "").contains("no destinations")
        );
        assert_eq!(judge(vec![entry("*", "", "")], "https://a", "", ""), "ok");
    }
}

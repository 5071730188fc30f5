//! Which objects a project lets its Applications deploy: cluster-scoped kinds only when
//! `clusterResourceWhitelist` names them, namespaced kinds unless a namespaced whitelist leaves
//! them out, never a blacklisted one — and a namespaced object only into a namespace the
//! project's destinations permit.

use crate::api::app_project::{AppProjectSpec, GroupKind};

use super::destinations::{ClusterIdentity, Place, permit_destination};
use super::memos::ProjectMemos;
use super::refusal::Refusal;

/// An object to deploy, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Deployed<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    /// `None` for a cluster-scoped object.
    pub namespace: Option<&'a str>,
}

/// Whether `project` (named `name`) permits deploying `object` into `cluster`; globs are kept
/// in `memos`.
///
/// # Errors
/// The refusal naming the object and rule, or an unusable entry.
pub fn permit_object(
    name: &str,
    project: &AppProjectSpec,
    cluster: &ClusterIdentity,
    object: Deployed<'_>,
    memos: &ProjectMemos,
) -> Result<(), Refusal> {
    let (white, white_field, black, black_field) = if object.namespace.is_some() {
        (
            &project.namespace_resource_whitelist,
            "namespaceResourceWhitelist",
            &project.namespace_resource_blacklist,
            "namespaceResourceBlacklist",
        )
    } else {
        (
            &project.cluster_resource_whitelist,
            "clusterResourceWhitelist",
            &project.cluster_resource_blacklist,
            "clusterResourceBlacklist",
        )
    };
    let refuse = |rule: String| Refusal::Kind {
        project: name.to_owned(),
        object: describe(object),
        rule,
    };
    let whitelisted = if white.is_empty() {
        object.namespace.is_some()
    } else {
        find(name, white_field, white, object, memos)?.is_some()
    };
    if !whitelisted {
        return Err(refuse(if white.is_empty() {
            format!("{white_field} is empty: no cluster-scoped kind is permitted")
        } else {
            format!("no {white_field} entry names it")
        }));
    }
    if let Some(entry) = find(name, black_field, black, object, memos)? {
        return Err(refuse(format!(
            "denied by {black_field} entry {}",
            entry_text(entry)
        )));
    }
    if let Some(namespace) = object.namespace {
        permit_destination(name, project, Place { cluster, namespace }, memos).map_err(
            |refusal| match refusal {
                Refusal::Destination { rule, .. } => refuse(format!(
                    "its namespace {namespace:?} is not a permitted destination: {rule}"
                )),
                other => other,
            },
        )?;
    }
    Ok(())
}

/// The first entry of `list` that matches `object`.
fn find<'l>(
    project: &str,
    field: &str,
    list: &'l [GroupKind],
    object: Deployed<'_>,
    memos: &ProjectMemos,
) -> Result<Option<&'l GroupKind>, Refusal> {
    for (index, entry) in list.iter().enumerate() {
        let parse = |part: &str, text: &str| {
            memos.pattern(text).map_err(|error| Refusal::Pattern {
                project: project.to_owned(),
                field: format!("{field}[{index}].{part}"),
                error,
            })
        };
        let group = entry.group.is_empty() && object.group.is_empty()
            || parse("group", &entry.group)?.matches(object.group);
        let kind = parse("kind", &entry.kind)?.matches(object.kind);
        let named = entry.name.is_empty() || parse("name", &entry.name)?.matches(object.name);
        if group && kind && named {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

fn describe(object: Deployed<'_>) -> String {
    let group = if object.group.is_empty() {
        String::new()
    } else {
        format!(".{}", object.group)
    };
    match object.namespace {
        Some(namespace) => format!("{}{group} {namespace}/{}", object.kind, object.name),
        None => format!("{}{group} {}", object.kind, object.name),
    }
}

fn entry_text(entry: &GroupKind) -> String {
    let name = if entry.name.is_empty() {
        String::new()
    } else {
        format!(", name: {:?}", entry.name)
    };
    format!("{{group: {:?}, kind: {:?}{name}}}", entry.group, entry.kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::app_project::ProjectDestination;

    fn gk(group: &str, kind: &str, name: &str) -> GroupKind {
        GroupKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
        }
    }

    fn judge(
        project: &AppProjectSpec,
        group: &str,
        kind: &str,
        name: &str,
        ns: Option<&str>,
    ) -> String {
        let object = Deployed {
            group,
            kind,
            name,
            namespace: ns,
        };
        let memos = ProjectMemos::default();
        permit_object("p", project, &ClusterIdentity::default(), object, &memos)
            .map_or_else(|e| e.to_string(), |()| "ok".into())
    }

    #[test]
    fn cluster_kinds_need_the_whitelist_namespaced_kinds_only_avoid_the_blacklist() {
        let project = AppProjectSpec {
            destinations: vec![ProjectDestination {
                server: "*".into(),
                name: String::new(),
                namespace: "shop-*".into(),
            }],
            cluster_resource_whitelist: vec![gk("", "Namespace", "shop-*")],
            namespace_resource_blacklist: vec![
                gk("", "ResourceQuota", ""),
                gk("*.k8s.io", "*Policy", ""),
            ],
            ..AppProjectSpec::default()
        };
        assert_eq!(judge(&project, "", "Namespace", "shop-web", None), "ok");
        assert_eq!(
            judge(
                &project,
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "admin",
                None
            ),
            "ClusterRole.rbac.authorization.k8s.io admin is not permitted in project \"p\": no \
             clusterResourceWhitelist entry names it"
        );
        assert!(
            judge(&project, "", "Namespace", "kube-system", None)
                .contains("no clusterResourceWhitelist")
        );
        assert_eq!(
            judge(&project, "apps", "Deployment", "web", Some("shop-web")),
            "ok"
        );
        assert_eq!(
            judge(&project, "", "ResourceQuota", "q", Some("shop-web")),
            "ResourceQuota shop-web/q is not permitted in project \"p\": denied by \
             namespaceResourceBlacklist entry {group: \"\", kind: \"ResourceQuota\"}"
        );
        assert!(
            judge(
                &project,
                "networking.k8s.io",
                "NetworkPolicy",
                "n",
                Some("shop-web")
            )
            .contains("denied by")
        );
        assert!(
            judge(&project, "apps", "Deployment", "web", Some("kube-system"))
                .contains("its namespace \"kube-system\" is not a permitted destination")
        );
        let none = AppProjectSpec::default();
        assert!(judge(&none, "", "Namespace", "x", None).contains("is empty"));
        let only_deployments = AppProjectSpec {
            namespace_resource_whitelist: vec![gk("apps", "Deployment", "")],
            destinations: project.destinations.clone(),
            ..AppProjectSpec::default()
        };
        assert!(
            judge(&only_deployments, "", "ConfigMap", "c", Some("shop-a"))
                .contains("no namespaceResourceWhitelist")
        );
    }
}

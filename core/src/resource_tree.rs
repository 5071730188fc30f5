//! An Application's resource tree: the objects it manages (from its status) and, under each, the
//! live objects that name it as their owner, and theirs (Deployment → ReplicaSet → Pod, Job →
//! Pod, CronJob → Job, Service → EndpointSlice, a custom resource → what it owns). Hooks form a
//! list of their own. Pure: the shell reads the objects and passes them as JSON; each owned
//! object's health is assessed by the controller's own rules ([`crate::health::assess`]).

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::Value;

use crate::api::Application;
use crate::health::{HealthStatus, assess};
use crate::manifest::{ObjectKey, group_of};

/// One node of the tree: an object, its sync status (managed objects only), health, creation
/// time when it was read, and what it owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    pub key: ObjectKey,
    /// The sync status the controller recorded (`Synced`, `OutOfSync`); `None` for owned objects.
    pub sync: Option<String>,
    /// The health: the controller's record for managed objects, assessed for owned ones.
    pub health: Option<HealthStatus>,
    /// When the object was created; `None` when it was not read (or does not exist).
    pub created: Option<Timestamp>,
    /// The objects naming this one as their owner, by kind then name.
    pub children: Vec<TreeNode>,
}

/// An object the Application manages, as its status records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Managed {
    pub key: ObjectKey,
    pub sync: String,
    pub health: Option<HealthStatus>,
    pub hook: bool,
}

impl Managed {
    /// The objects `application` manages, as its `status.resources` records them.
    #[must_use]
    pub fn of(application: &Application) -> Vec<Self> {
        let resources = application
            .status
            .as_ref()
            .map(|status| status.resources.as_slice())
            .unwrap_or_default();
        resources
            .iter()
            .map(|resource| Self {
                key: ObjectKey {
                    group: resource.group.clone(),
                    kind: resource.kind.clone(),
                    namespace: Some(resource.namespace.clone()).filter(|ns| !ns.is_empty()),
                    name: resource.name.clone(),
                },
                sync: resource.status.as_str().to_owned(),
                health: resource.health.as_ref().map(|health| health.status),
                hook: resource.hook,
            })
            .collect()
    }
}

/// The tree: the managed objects (by kind then name) with what they own, and the hooks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceTree {
    pub roots: Vec<TreeNode>,
    pub hooks: Vec<TreeNode>,
}

impl ResourceTree {
    /// How many nodes the tree has, hooks included.
    #[must_use]
    pub fn len(&self) -> usize {
        fn count(nodes: &[TreeNode]) -> usize {
            nodes.iter().map(|node| 1 + count(&node.children)).sum()
        }
        count(&self.roots) + count(&self.hooks)
    }

    /// Whether the tree has no node.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty() && self.hooks.is_empty()
    }
}

/// A live object as the tree uses it: its key, owners' keys, creation time and health.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Live {
    owners: Vec<ObjectKey>,
    created: Option<Timestamp>,
    health: HealthStatus,
}

/// The owners an object's `metadata.ownerReferences` name (in the object's own namespace, or
/// cluster-scoped when the object is).
fn owners(object: &Value, namespace: Option<&String>) -> Vec<ObjectKey> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|owner| {
            Some(ObjectKey {
                group: group_of(owner.get("apiVersion")?.as_str()?).to_owned(),
                kind: owner.get("kind")?.as_str()?.to_owned(),
                namespace: namespace.cloned(),
                name: owner.get("name")?.as_str()?.to_owned(),
            })
        })
        .collect()
}

/// The tree of `managed` objects over the `live` objects read (the managed ones and the
/// candidates to be owned, as JSON with `apiVersion`, `kind` and `metadata`). An owner is
/// matched by its group, kind, namespace and name; an object is placed once, under the first
/// owner found, and a cycle of owners ends where it would repeat.
#[must_use]
pub fn build(managed: &[Managed], live: &[Value]) -> ResourceTree {
    let mut objects: BTreeMap<ObjectKey, Live> = BTreeMap::new();
    for object in live {
        let Some(key) = ObjectKey::of_object(object) else {
            continue;
        };
        let created = object
            .pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .and_then(|time| time.parse().ok());
        let live = Live {
            owners: owners(object, key.namespace.as_ref()),
            created,
            health: assess(object).status,
        };
        objects.insert(key, live);
    }
    let mut owned: BTreeMap<&ObjectKey, Vec<&ObjectKey>> = BTreeMap::new();
    for (key, object) in &objects {
        if let Some(owner) = object.owners.first() {
            owned.entry(owner).or_default().push(key);
        }
    }
    let mut placed = BTreeSet::new();
    let mut node = |object: &Managed| {
        placed.insert(object.key.clone());
        TreeNode {
            key: object.key.clone(),
            sync: Some(object.sync.clone()),
            health: object.health,
            created: objects.get(&object.key).and_then(|live| live.created),
            children: children(&object.key, &objects, &owned, &mut placed),
        }
    };
    let mut tree = ResourceTree::default();
    let mut sorted: Vec<&Managed> = managed.iter().collect();
    sorted.sort_by(|a, b| (&a.key.kind, &a.key.name).cmp(&(&b.key.kind, &b.key.name)));
    for object in sorted {
        let built = node(object);
        if object.hook {
            tree.hooks.push(built);
        } else {
            tree.roots.push(built);
        }
    }
    tree
}

/// The nodes `owner` owns, each with its own, skipping objects already placed.
fn children(
    owner: &ObjectKey,
    objects: &BTreeMap<ObjectKey, Live>,
    owned: &BTreeMap<&ObjectKey, Vec<&ObjectKey>>,
    placed: &mut BTreeSet<ObjectKey>,
) -> Vec<TreeNode> {
    let mut keys: Vec<&ObjectKey> = owned.get(owner).cloned().unwrap_or_default();
    keys.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    let mut nodes = Vec::new();
    for key in keys {
        if !placed.insert(key.clone()) {
            continue;
        }
        let live = &objects[key];
        nodes.push(TreeNode {
            key: key.clone(),
            sync: None,
            health: Some(live.health),
            created: live.created,
            children: children(key, objects, owned, placed),
        });
    }
    nodes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(group: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.to_owned(),
            kind: kind.to_owned(),
            namespace: Some("shop".to_owned()),
            name: name.to_owned(),
        }
    }

    fn managed(group: &str, kind: &str, name: &str, hook: bool) -> Managed {
        Managed {
            key: key(group, kind, name),
            sync: "Synced".to_owned(),
            health: Some(HealthStatus::Healthy),
            hook,
        }
    }

    fn object(
        api_version: &str,
        kind: &str,
        name: &str,
        owner: Option<(&str, &str, &str)>,
    ) -> Value {
        let owners: Vec<Value> = owner
            .into_iter()
            .map(|(api_version, kind, name)| {
                json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": "u"})
            })
            .collect();
        json!({"apiVersion": api_version, "kind": kind,
               "metadata": {"name": name, "namespace": "shop",
                            "creationTimestamp": "2026-12-05T06:00:00Z", "ownerReferences": owners}})
    }

    fn running_pod(name: &str, owner: (&str, &str, &str)) -> Value {
        let mut pod = object("v1", "Pod", name, Some(owner));
        pod["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                               "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0,
                                                      "image": "i", "imageID": "", "state": {"running": {}}}]});
        pod
    }

    fn shape(nodes: &[TreeNode]) -> Vec<String> {
        let mut out = Vec::new();
        fn walk(nodes: &[TreeNode], depth: usize, out: &mut Vec<String>) {
            for node in nodes {
                out.push(format!(
                    "{}{} {} {:?}",
                    "  ".repeat(depth),
                    node.key.kind,
                    node.key.name,
                    node.health
                ));
                walk(&node.children, depth + 1, out);
            }
        }
        walk(nodes, 0, &mut out);
        out
    }

    #[test]
    fn workloads_own_their_replica_sets_pods_and_jobs_and_hooks_stand_apart() {
        let managed = [
            managed("apps", "Deployment", "web", false),
            managed("batch", "CronJob", "backup", false),
            managed("", "Service", "web", false),
            managed("batch", "Job", "migrate", true),
        ];
        let live = [
            object("apps/v1", "Deployment", "web", None),
            object(
                "apps/v1",
                "ReplicaSet",
                "web-7c9",
                Some(("apps/v1", "Deployment", "web")),
            ),
            running_pod("web-7c9-b", ("apps/v1", "ReplicaSet", "web-7c9")),
            running_pod("web-7c9-a", ("apps/v1", "ReplicaSet", "web-7c9")),
            object(
                "batch/v1",
                "Job",
                "backup-1",
                Some(("batch/v1", "CronJob", "backup")),
            ),
            object(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                "web-x",
                Some(("v1", "Service", "web")),
            ),
            // Same name, another group: not the Deployment's.
            object(
                "example.com/v1",
                "ReplicaSet",
                "other",
                Some(("example.com/v1", "Deployment", "web")),
            ),
            running_pod("migrate-p", ("batch/v1", "Job", "migrate")),
            // Nobody's: not shown.
            object("v1", "Pod", "stray", None),
        ];
        let tree = build(&managed, &live);
        assert_eq!(
            shape(&tree.roots),
            [
                "CronJob backup Some(Healthy)",
                "  Job backup-1 Some(Progressing)",
                "Deployment web Some(Healthy)",
                // No status yet: its own rule says Progressing.
                "  ReplicaSet web-7c9 Some(Progressing)",
                "    Pod web-7c9-a Some(Healthy)",
                "    Pod web-7c9-b Some(Healthy)",
                "Service web Some(Healthy)",
                "  EndpointSlice web-x Some(Healthy)",
            ]
        );
        assert_eq!(
            shape(&tree.hooks),
            ["Job migrate Some(Healthy)", "  Pod migrate-p Some(Healthy)"]
        );
        assert_eq!(tree.len(), 10);
        assert_eq!(tree.roots[1].sync.as_deref(), Some("Synced"));
        assert_eq!(tree.roots[1].children[0].sync, None);
        assert_eq!(
            tree.roots[1].created,
            Some("2026-12-05T06:00:00Z".parse().unwrap())
        );
    }

    #[test]
    fn a_cycle_of_owners_ends_and_a_managed_object_never_read_has_no_age() {
        let live = [
            object(
                "example.com/v1",
                "Widget",
                "a",
                Some(("example.com/v1", "Widget", "b")),
            ),
            object(
                "example.com/v1",
                "Widget",
                "b",
                Some(("example.com/v1", "Widget", "a")),
            ),
        ];
        let tree = build(&[managed("example.com", "Widget", "a", false)], &live);
        assert_eq!(tree.len(), 2);
        let tree = build(&[managed("apps", "Deployment", "gone", false)], &[]);
        assert_eq!((tree.len(), tree.roots[0].created), (1, None));
    }
}

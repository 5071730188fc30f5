//! The simulated kubelet's bookkeeping: applies [`plan`](super::plan::plan) to every pod it sees,
//! remembers when each pod started and which step it already took, and performs the API calls.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client, ResourceExt};

use super::node::{HOST_IP, node_labels};
use super::placement::NodeView;
use super::plan::{Action, Context, plan};
use flotilla::cluster::api_server::api_error::ApiError;

/// Plays the kubelet of one node for every pod in the cluster.
pub struct Kubelet {
    client: Client,
    node_name: String,
    labels: BTreeMap<String, String>,
    default_ready_after: Duration,
    dedicated: bool,
    /// Per pod uid: when the pod started (monotonic, and as reported in `status.startTime`).
    started: HashMap<String, (Instant, Timestamp)>,
    /// Per pod uid: the resource version and step last taken, so a step is not repeated before
    /// the watch shows its effect.
    taken: HashMap<String, (String, String)>,
}

impl Kubelet {
    /// A kubelet for `node_name` whose pods start after `default_ready_after` unless annotated;
    /// `dedicated`: it binds no pod (see [`Context::dedicated`]).
    #[must_use]
    pub fn new(
        client: Client,
        node_name: &str,
        default_ready_after: Duration,
        dedicated: bool,
    ) -> Self {
        Self {
            client,
            node_name: node_name.to_owned(),
            labels: node_labels(node_name),
            default_ready_after,
            dedicated,
            started: HashMap::new(),
            taken: HashMap::new(),
        }
    }

    /// Takes the next step for every pod in `pods` (the current watch cache).
    pub async fn sync(&mut self, pods: &[Arc<Pod>]) {
        let live: HashSet<String> = pods.iter().filter_map(|p| p.uid()).collect();
        self.started.retain(|uid, _| live.contains(uid));
        self.taken.retain(|uid, _| live.contains(uid));
        for pod in pods {
            self.sync_pod(pod).await;
        }
    }

    async fn sync_pod(&mut self, pod: &Pod) {
        let (Some(uid), Some(namespace)) = (pod.uid(), pod.namespace()) else {
            return;
        };
        let name = pod.name_any();
        let (elapsed, start_time) = self.start_of(&uid, pod);
        let context = Context {
            node: NodeView {
                name: &self.node_name,
                labels: &self.labels,
            },
            elapsed,
            placement: super::pod_status::Placement {
                host_ip: HOST_IP.to_owned(),
                pod_ip: pod_ip(&uid),
                start_time,
                now: Timestamp::now(),
            },
            default_ready_after: self.default_ready_after,
            dedicated: self.dedicated,
        };
        let action = match plan(pod, &context) {
            Ok(action) => action,
            Err(error) => {
                tracing::warn!(pod = %format!("{namespace}/{name}"), %error, "cannot simulate pod");
                return;
            }
        };
        let step = match &action {
            Action::Nothing => return,
            Action::Report(stage, _) => format!("{stage:?}"),
            other => format!("{other:?}"),
        };
        let version = pod.resource_version().unwrap_or_default();
        if self.taken.get(&uid) == Some(&(version.clone(), step.clone())) {
            return;
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let result = match action {
            Action::Nothing => return,
            Action::Bind => self.bind(&api, &namespace, &name).await,
            Action::Delete => {
                let params = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &params).await.map(drop)
            }
            Action::Report(_, status) => {
                let patch = serde_json::json!({ "status": status });
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(drop)
            }
        };
        match result {
            Ok(()) => {
                tracing::info!(pod = %format!("{namespace}/{name}"), %step, "simulated");
                self.taken.insert(uid, (version, step));
            }
            Err(kube::Error::Api(status)) if status.is_not_found() || status.is_conflict() => {}
            Err(error) => {
                let error = ApiError::from(error);
                tracing::warn!(pod = %format!("{namespace}/{name}"), %step, %error, "step failed");
            }
        }
    }

    async fn bind(&self, api: &Api<Pod>, namespace: &str, name: &str) -> Result<(), kube::Error> {
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Node".to_owned()),
                name: Some(self.node_name.clone()),
                ..ObjectReference::default()
            },
        };
        api.create_subresource::<_, serde_json::Value>(
            "binding",
            name,
            &PostParams::default(),
            &binding,
        )
        .await
        .map(drop)
    }

    /// Time since the pod started on this node, and its start timestamp. A pod first seen already
    /// started (the simulator restarted) keeps its recorded `status.startTime`.
    fn start_of(&mut self, uid: &str, pod: &Pod) -> (Duration, Timestamp) {
        let ours =
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(self.node_name.as_str());
        if !ours {
            return (Duration::ZERO, Timestamp::now());
        }
        let (instant, timestamp) = *self.started.entry(uid.to_owned()).or_insert_with(|| {
            let now = Timestamp::now();
            match pod.status.as_ref().and_then(|s| s.start_time.as_ref()) {
                Some(start) => {
                    let age = Duration::try_from(now.duration_since(start.0)).unwrap_or_default();
                    (
                        Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
                        start.0,
                    )
                }
                None => (Instant::now(), now),
            }
        });
        (instant.elapsed(), timestamp)
    }
}

/// A stable fake address in 10.244.0.0/16 derived from the pod uid (FNV-1a).
fn pod_ip(uid: &str) -> String {
    let hash = uid.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let [.., third, fourth] = hash.to_be_bytes();
    format!("10.244.{third}.{}", fourth.clamp(1, 254))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ips_are_stable_and_in_range() {
        assert_eq!(pod_ip("abc"), pod_ip("abc"));
        assert_ne!(pod_ip("abc"), pod_ip("abd"));
        let last: u8 = pod_ip("x").rsplit('.').next().unwrap().parse().unwrap();
        assert!((1..=254).contains(&last));
    }
}

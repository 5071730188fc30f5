//! The logs of the containers running on the simulated node: the simulator's loop records the
//! lines of each pod's log annotations ([`super::container_log`]) as its watch shows them, the
//! log server ([`super::log_server`]) reads them and follows them through [`LogBook::subscribe`].
//! Held in memory only; a pod's logs go when it leaves the node.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tokio::sync::watch;

use super::container_log::{LOG_ANNOTATION, LogLine, PREVIOUS_LOG_ANNOTATION, append, written};

/// One container of one pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContainerId {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container's name.
    pub container: String,
}

/// What a container printed: its running instance, and its previous one if it had one.
#[derive(Clone, Debug, Default)]
struct Printed {
    current: Vec<LogLine>,
    previous: Option<Vec<LogLine>>,
}

/// Why a log cannot be read (the kubelet's answers).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogLookupError {
    /// No such pod on this node.
    #[error("pod {namespace}/{pod} not found on this node")]
    PodNotFound {
        /// The namespace asked for.
        namespace: String,
        /// The pod asked for.
        pod: String,
    },
    /// The pod has no such container.
    #[error("container {container:?} in pod {pod:?} is not available")]
    ContainerNotFound {
        /// The pod.
        pod: String,
        /// The container asked for.
        container: String,
    },
    /// `previous` was asked for a container that did not restart.
    #[error("previous terminated container {container:?} in pod {pod:?} not found")]
    NoPrevious {
        /// The pod.
        pod: String,
        /// The container asked for.
        container: String,
    },
}

/// The logs of every container on the node, and a signal sent whenever a line is added or a pod
/// leaves.
pub struct LogBook {
    printed: Mutex<HashMap<ContainerId, Printed>>,
    changed: watch::Sender<()>,
}

impl Default for LogBook {
    fn default() -> Self {
        Self {
            printed: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(()),
        }
    }
}

impl LogBook {
    /// Records the new log lines of the pods of `pods` bound to `node`, stamped `now`, and
    /// forgets the containers of pods that are gone.
    pub fn record(&self, pods: &[Arc<Pod>], node: &str, now: Timestamp) {
        let mut printed = self.printed.lock().unwrap_or_else(PoisonError::into_inner);
        let before: usize = printed.values().map(|p| p.current.len()).sum();
        let known = printed.len();
        let mut seen = Vec::new();
        for pod in pods {
            let ours = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node);
            let (Some(spec), Some(namespace), true) = (pod.spec.as_ref(), pod.namespace(), ours)
            else {
                continue;
            };
            let annotations = pod.annotations();
            for container in &spec.containers {
                let id = ContainerId {
                    namespace: namespace.clone(),
                    pod: pod.name_any(),
                    container: container.name.clone(),
                };
                let entry = printed.entry(id.clone()).or_default();
                let current = written(annotations, LOG_ANNOTATION, &container.name);
                append(&mut entry.current, &current.unwrap_or_default(), now);
                if entry.previous.is_none() {
                    entry.previous = written(annotations, PREVIOUS_LOG_ANNOTATION, &container.name)
                        .map(|lines| {
                            let mut log = Vec::new();
                            append(&mut log, &lines, now);
                            log
                        });
                }
                seen.push(id);
            }
        }
        printed.retain(|id, _| seen.contains(id));
        let after: usize = printed.values().map(|p| p.current.len()).sum();
        if after != before || printed.len() != known {
            self.changed.send_replace(());
        }
    }

    /// The lines container `id` printed so far (its previous instance's if `previous`).
    ///
    /// # Errors
    /// [`LogLookupError`] when the pod is not on the node, has no such container, or the
    /// container has no previous instance.
    pub fn lines(&self, id: &ContainerId, previous: bool) -> Result<Vec<LogLine>, LogLookupError> {
        let printed = self.printed.lock().unwrap_or_else(PoisonError::into_inner);
        let found = printed.get(id).ok_or_else(|| {
            if printed
                .keys()
                .any(|known| known.namespace == id.namespace && known.pod == id.pod)
            {
                LogLookupError::ContainerNotFound {
                    pod: id.pod.clone(),
                    container: id.container.clone(),
                }
            } else {
                LogLookupError::PodNotFound {
                    namespace: id.namespace.clone(),
                    pod: id.pod.clone(),
                }
            }
        })?;
        if previous {
            found
                .previous
                .clone()
                .ok_or_else(|| LogLookupError::NoPrevious {
                    pod: id.pod.clone(),
                    container: id.container.clone(),
                })
        } else {
            Ok(found.current.clone())
        }
    }

    /// Changes after now: a line added or a pod gone.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<()> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(node: &str, log: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "ns",
                             "annotations": {LOG_ANNOTATION: log, PREVIOUS_LOG_ANNOTATION: "crashed"}},
                "spec": {"nodeName": node, "containers": [{"name": "app"}]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn records_the_lines_of_its_nodes_pods_and_forgets_pods_that_leave() {
        let book = LogBook::default();
        let mut changes = book.subscribe();
        let id = |container: &str| ContainerId {
            namespace: "ns".to_owned(),
            pod: "p".to_owned(),
            container: container.to_owned(),
        };
        let now = Timestamp::UNIX_EPOCH;
        book.record(&[pod("other", "a")], "sim", now);
        assert!(matches!(
            book.lines(&id("app"), false),
            Err(LogLookupError::PodNotFound { .. })
        ));
        book.record(&[pod("sim", "a")], "sim", now);
        book.record(&[pod("sim", "a\nb")], "sim", now);
        assert!(changes.has_changed().unwrap());
        let texts = |lines: Vec<LogLine>| lines.into_iter().map(|l| l.text).collect::<Vec<_>>();
        assert_eq!(texts(book.lines(&id("app"), false).unwrap()), ["a", "b"]);
        assert_eq!(texts(book.lines(&id("app"), true).unwrap()), ["crashed"]);
        assert!(matches!(
            book.lines(&id("side"), false),
            Err(LogLookupError::ContainerNotFound { .. })
        ));
        changes.mark_unchanged();
        book.record(&[], "sim", now);
        assert!(changes.has_changed().unwrap());
        assert!(book.lines(&id("app"), false).is_err());
    }
}

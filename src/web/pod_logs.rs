//! A pod's log in the object panel (`/applications/NAME/logs?namespace=&pod=&container=
//! &tailLines=&previous=&follow=`): the request read from the address ([`LogQuery::parse`]),
//! the access it needs — `get` on `pods/log`, as `kubectl logs` needs it — and the lines, read
//! through the API server's `pods/log` subresource with the controller's client and sent as
//! server-sent events (one [`LINE_EVENT`] per line, then [`END_EVENT`]). Nothing read is kept
//! or logged. Which pods a panel offers: the Pod itself, or a workload's pods by its selector
//! ([`pod_selector`], [`LogTarget`]).

use futures::io::AsyncBufReadExt as _;
use futures::{Stream, StreamExt};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::api::LogParams;
use kube::{Api, Client};
use serde_json::Value;

use super::events::event;
use super::routes::parameter;
use crate::actions::action::Access;

/// Lines shown when the viewer does not say.
pub const DEFAULT_TAIL: i64 = 100;
/// The most lines one request may ask for.
pub const MAX_TAIL: i64 = 10_000;
/// The event carrying one line of the log.
pub const LINE_EVENT: &str = "line";
/// The event sent when the log ends (not following, the container stopped, or the read failed).
pub const END_EVENT: &str = "end";

/// Which log a viewer asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogQuery {
    pub namespace: String,
    pub pod: String,
    /// `None`: the pod's only container (the API server refuses when it has several).
    pub container: Option<String>,
    /// Only the last this many lines.
    pub tail_lines: i64,
    /// The previous (terminated) instance of the container.
    pub previous: bool,
    /// Keep sending lines as the container prints them.
    pub follow: bool,
}

/// An address that does not say which log, or says it wrongly.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogQueryError {
    /// A required parameter is missing or empty.
    #[error("the address names no {0}")]
    Missing(&'static str),
    /// `tailLines` is not a count from 0 to [`MAX_TAIL`].
    #[error("tailLines {0:?} is not a count from 0 to {MAX_TAIL}")]
    Tail(String),
}

impl LogQuery {
    /// The request of a form-encoded `query`: `namespace` and `pod` required, `container`,
    /// `tailLines` ([`DEFAULT_TAIL`] when absent or empty), and `previous` and `follow`
    /// (`true`, `1` or `on` mean yes).
    ///
    /// # Errors
    /// [`LogQueryError`] naming what is missing or wrong.
    pub fn parse(query: &str) -> Result<Self, LogQueryError> {
        let get = |name: &str| parameter(query, name).filter(|value| !value.is_empty());
        let flag =
            |name: &str| get(name).is_some_and(|v| matches!(v.as_str(), "true" | "1" | "on"));
        let tail_lines = match get("tailLines") {
            None => DEFAULT_TAIL,
            Some(text) => text
                .parse::<i64>()
                .ok()
                .filter(|tail| (0..=MAX_TAIL).contains(tail))
                .ok_or(LogQueryError::Tail(text))?,
        };
        Ok(Self {
            namespace: get("namespace").ok_or(LogQueryError::Missing("namespace"))?,
            pod: get("pod").ok_or(LogQueryError::Missing("pod"))?,
            container: get("container"),
            tail_lines,
            previous: flag("previous"),
            follow: flag("follow"),
        })
    }

    /// `get` on `pods/log` of the pod.
    #[must_use]
    pub fn access(&self) -> Access {
        Access {
            verb: "get",
            group: String::new(),
            resource: "pods".to_owned(),
            subresource: "log".to_owned(),
            namespace: self.namespace.clone(),
            name: self.pod.clone(),
        }
    }

    /// The `pods/log` request's parameters (a previous instance is never followed).
    #[must_use]
    pub fn params(&self) -> LogParams {
        LogParams {
            container: self.container.clone(),
            follow: self.follow && !self.previous,
            previous: self.previous,
            tail_lines: Some(self.tail_lines),
            ..LogParams::default()
        }
    }
}

/// The log `query` asks for, read through `client`, as server-sent events: a [`LINE_EVENT`]
/// per line (without its end of line) and an [`END_EVENT`] when the API server's answer ends or
/// breaks.
///
/// # Errors
/// The API server refused the read (the pod or container does not exist, no previous instance).
pub async fn log_events(
    client: Client,
    query: &LogQuery,
) -> Result<impl Stream<Item = Bytes> + Send + 'static, kube::Error> {
    let reader = Api::<Pod>::namespaced(client, &query.namespace)
        .log_stream(&query.pod, &query.params())
        .await?;
    let lines = reader
        .lines()
        .take_while(|line| futures::future::ready(line.is_ok()))
        .filter_map(|line| futures::future::ready(line.ok()))
        .map(|line| Bytes::from(event(LINE_EVENT, line.trim_end_matches('\r'))));
    Ok(
        lines.chain(futures::stream::once(futures::future::ready(Bytes::from(
            event(END_EVENT, ""),
        )))),
    )
}

/// The kinds whose pods a panel offers logs of: they select their pods by labels.
const WORKLOADS: [(&str, &str); 5] = [
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
];

/// The label selector of a workload's pods (`spec.selector.matchLabels` of `live`, of group
/// `group` and kind `kind`), as `key=value,…`; `None` for another kind or no labels.
#[must_use]
pub fn pod_selector(group: &str, kind: &str, live: &Value) -> Option<String> {
    if !WORKLOADS.contains(&(group, kind)) {
        return None;
    }
    let labels = live.pointer("/spec/selector/matchLabels")?.as_object()?;
    let selector: Vec<String> = labels
        .iter()
        .filter_map(|(key, value)| Some(format!("{key}={}", value.as_str()?)))
        .collect();
    (!selector.is_empty()).then(|| selector.join(","))
}

/// One pod a panel offers the logs of, with its containers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogTarget {
    pub pod: String,
    pub containers: Vec<String>,
}

impl LogTarget {
    /// The pod `pod` (as JSON) and its containers; `None` when it is not a Pod.
    #[must_use]
    pub fn of(pod: &Value) -> Option<Self> {
        let name = pod.pointer("/metadata/name")?.as_str()?;
        let containers = pod
            .pointer("/spec/containers")?
            .as_array()?
            .iter()
            .filter_map(|container| container.get("name")?.as_str().map(str::to_owned))
            .collect();
        Some(Self {
            pod: name.to_owned(),
            containers,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_request_and_asks_for_get_on_pods_log() {
        let query = LogQuery::parse(
            "namespace=shop&pod=web-1&container=app&tailLines=20&previous=on&follow=true",
        )
        .unwrap();
        assert_eq!(
            query,
            LogQuery {
                namespace: "shop".to_owned(),
                pod: "web-1".to_owned(),
                container: Some("app".to_owned()),
                tail_lines: 20,
                previous: true,
                follow: true,
            }
        );
        let access = query.access();
        assert_eq!(
            (
                access.verb,
                access.resource.as_str(),
                access.subresource.as_str()
            ),
            ("get", "pods", "log")
        );
        let params = query.params();
        assert!(
            params.previous && !params.follow,
            "a previous instance is not followed"
        );
        let defaults = LogQuery::parse("namespace=shop&pod=web-1&container=").unwrap();
        assert_eq!(
            (defaults.container, defaults.tail_lines),
            (None, DEFAULT_TAIL)
        );
        assert_eq!(
            LogQuery::parse("namespace=shop"),
            Err(LogQueryError::Missing("pod"))
        );
        assert_eq!(
            LogQuery::parse("namespace=shop&pod=p&tailLines=-1"),
            Err(LogQueryError::Tail("-1".to_owned()))
        );
    }

    #[test]
    fn a_workloads_pods_are_found_by_its_selector() {
        let deployment =
            json!({"spec": {"selector": {"matchLabels": {"app": "web", "tier": "1"}}}});
        assert_eq!(
            pod_selector("apps", "Deployment", &deployment).as_deref(),
            Some("app=web,tier=1")
        );
        assert_eq!(pod_selector("", "Service", &deployment), None);
        let pod = json!({"metadata": {"name": "web-1"},
                         "spec": {"containers": [{"name": "app"}, {"name": "proxy"}]}});
        assert_eq!(
            LogTarget::of(&pod),
            Some(LogTarget {
                pod: "web-1".to_owned(),
                containers: vec!["app".to_owned(), "proxy".to_owned()],
            })
        );
    }
}

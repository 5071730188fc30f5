//! The namespaces of a cluster as they come and go, followed by one metadata watch of Namespaces
//! (which needs `list` and `watch` of namespaces across the cluster, and nothing else): after the
//! first list and after every change, the names are handed to a selection and its result is
//! published on a [`watch`] channel when it changed. What is selected is the caller's.

use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Client};
use tokio::sync::watch;

use crate::cluster::api_server::api_error::watch_message;

/// Follows the namespaces of `client`'s cluster until the receivers of `selected` are gone:
/// after the first list and every change, `select` (given the names of every namespace) is
/// published when it differs from what `selected` holds. A failing watch is retried with
/// backoff, logged, and changes nothing.
pub async fn follow<T: PartialEq>(
    client: Client,
    selected: watch::Sender<T>,
    select: impl Fn(&[String]) -> T,
) {
    let api: Api<PartialObjectMeta<Namespace>> = Api::all(client);
    let events = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(events);
    let (mut names, mut listing) = (BTreeSet::new(), BTreeSet::new());
    while let Some(event) = events.next().await {
        if selected.is_closed() {
            return;
        }
        match event {
            Ok(Event::Init) => {
                listing.clear();
                continue;
            }
            Ok(Event::InitApply(namespace)) => {
                listing.extend(namespace.metadata.name);
                continue;
            }
            Ok(Event::InitDone) => names = std::mem::take(&mut listing),
            Ok(Event::Apply(namespace)) => names.extend(namespace.metadata.name),
            Ok(Event::Delete(namespace)) => {
                if let Some(name) = namespace.metadata.name {
                    names.remove(&name);
                }
            }
            Err(error) => {
                tracing::warn!("watching namespaces: {}", watch_message(error));
                continue;
            }
        }
        let all: Vec<String> = names.iter().cloned().collect();
        let chosen = select(&all);
        selected.send_if_modified(|current| {
            let changed = *current != chosen;
            if changed {
                *current = chosen;
            }
            changed
        });
    }
}

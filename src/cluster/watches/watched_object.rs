//! One named object of a namespace (a settings ConfigMap, a Secret of shared secrets), kept by a
//! watch of that object alone started on first use: reading it costs no request, and a change
//! applies once the watch delivers it. A missing object reads as `None`.

use std::fmt::Debug;
use std::sync::Arc;

use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use super::listed_watch::{ListedWatch, NotListed};

/// The watched object `name` of `namespace`.
pub struct WatchedObject<K: Resource + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    client: Client,
    namespace: String,
    name: String,
    /// What it is, in messages ("the settings ConfigMap").
    what: &'static str,
    watch: OnceCell<ListedWatch<K>>,
}

/// The watch has not listed in time (say, reading the kind is forbidden: its refusal is named).
#[derive(Debug, thiserror::Error)]
#[error("{what} {namespace}/{name}: {source}")]
pub struct WatchError {
    pub what: &'static str,
    pub namespace: String,
    pub name: String,
    #[source]
    pub source: NotListed,
}

impl<K> WatchedObject<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone + Default,
{
    /// The object `name` of `namespace`, `what` naming it in messages.
    #[must_use]
    pub fn new(client: Client, namespace: &str, name: &str, what: &'static str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            what,
            watch: OnceCell::new(),
        }
    }

    /// Its namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The object now, `None` when it does not exist.
    ///
    /// # Errors
    /// The watch has not listed in time.
    pub async fn current(&self) -> Result<Option<Arc<K>>, WatchError> {
        let watch = self
            .watch
            .get_or_try_init(|| async {
                let api: Api<K> = Api::namespaced(self.client.clone(), &self.namespace);
                let config =
                    watcher::Config::default().fields(&format!("metadata.name={}", self.name));
                ListedWatch::start(api, config, self.what)
                    .await
                    .map_err(|source| WatchError {
                        what: self.what,
                        namespace: self.namespace.clone(),
                        name: self.name.clone(),
                        source,
                    })
            })
            .await?;
        Ok(watch.store().state().into_iter().next())
    }
}

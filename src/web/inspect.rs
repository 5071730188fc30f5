//! The reads the web view makes when a viewer opens an Application's resource tree
//! (`/applications/NAME/tree`) or an object's panel (`/applications/NAME/object?group=&kind=
//! &namespace=&name=`), with the controller's client, for an Application whose destination is
//! the cluster the controller runs in. The tree: a get of each managed object but Secrets, and
//! a list of the Pods, ReplicaSets, Jobs and EndpointSlices of each of the Application's
//! namespaces (their owners place them). The panel, only for a viewer whose bearer token the
//! cluster accepts (TokenReview) and allows `get` on the object (SubjectAccessReview), as
//! actions are allowed: the live object, the Application's source read at its target revision
//! into a temporary checkout (as `flotilla app diff` reads it) and the object's Events. Nothing
//! read is kept after the answer, and nothing of it is logged.

use hyper::StatusCode;
use hyper::header::{self, HeaderMap};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::access_review::{Refusal, bearer_token};
use super::act::{authorise, refused};
use super::layout::Page;
use super::object_panel::{self, ObjectView, redacted};
use super::routes::parameter;
use super::snapshot::Snapshot;
use super::tree_view;
use crate::actions::action::Access;
use crate::actions::application_plan::application_plan;
use crate::actions::compare::compare_live;
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::cluster::destinations::destination::{Target, resolve};
use crate::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP;
use crate::sync::execute::cluster_api::{ClusterApi, ClusterError};
use flotilla_core::api::Application;
use flotilla_core::controller::application::instance::instance_name;
use flotilla_core::html::{escape, link};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::resource_tree::{Managed, ResourceTree, build};
use flotilla_core::sync::tracked;

/// What an address under `/applications/NAME/` inspects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inspection {
    /// `…/tree`: the resource tree.
    Tree,
    /// `…/object`: one object's panel.
    Object,
}

/// The Application and the inspection `path` asks for, if it asks for one.
#[must_use]
pub fn inspection(path: &str) -> Option<(String, Inspection)> {
    let rest = path.strip_prefix("/applications/")?;
    let (name, what) = rest.rsplit_once('/')?;
    let what = match what {
        "tree" => Inspection::Tree,
        "object" => Inspection::Object,
        _ => return None,
    };
    Some((super::routes::percent_decode(name), what))
}

/// Why the tree or a panel could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The destination is another cluster: the web view reads only its own.
    #[error(
        "the objects of Application {0} are on another cluster, which the web view does not read"
    )]
    OtherCluster(String),
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        /// Boxed: a cluster error is large.
        #[source]
        source: Box<ClusterError>,
    },
    #[error("listing {what}: {source}")]
    List {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// Reads for one namespace's view.
pub struct Inspector {
    client: Client,
    namespace: String,
}

impl Inspector {
    /// Reads through `client` (the controller's own) for the Applications of `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
        }
    }

    /// The page of `what` for Application `app` of `snapshot`, `query` and the request's
    /// `headers`, and its status.
    pub async fn page(
        &self,
        snapshot: &Snapshot,
        app: &str,
        what: Inspection,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> (StatusCode, Page) {
        let Some(application) = snapshot.application(app) else {
            return (StatusCode::NOT_FOUND, super::routes::not_found());
        };
        match what {
            Inspection::Tree => (
                StatusCode::OK,
                self.tree_page(application, snapshot.now).await,
            ),
            Inspection::Object => {
                self.object_page(application, query, headers, snapshot.now)
                    .await
            }
        }
    }

    async fn tree_page(&self, application: &Application, now: Timestamp) -> Page {
        let app = application.metadata.name.clone().unwrap_or_default();
        let mut main = format!(
            r#"<div data-static></div><p>{}</p><h1>Resource tree of {}</h1>"#,
            link(&format!("/applications/{app}"), &app),
            escape(&app),
        );
        main.push_str(
            r#"<p class="none">Read when the page was opened: reload to read again.</p>"#,
        );
        match self.tree(application).await {
            Ok(tree) => main.push_str(&tree_view::section(&app, &tree, now)),
            Err(error) => {
                main.push_str(&format!(
                    r#"<p class="error">{}</p>"#,
                    escape(&error.to_string())
                ));
            }
        }
        Page {
            title: format!("Resource tree of {app}"),
            main,
        }
    }

    /// The cluster of `application`'s objects: the controller's own, or an error.
    fn cluster(&self, application: &Application) -> Result<KubeCluster, InspectError> {
        match resolve(&application.spec.destination, &[]) {
            Ok(Target::InCluster) => Ok(KubeCluster::new(self.client.clone())),
            _ => Err(InspectError::OtherCluster(
                application.metadata.name.clone().unwrap_or_default(),
            )),
        }
    }

    /// The tree of `application`'s managed objects and what they own.
    ///
    /// # Errors
    /// Another cluster, or a read the API server refuses.
    pub async fn tree(&self, application: &Application) -> Result<ResourceTree, InspectError> {
        let cluster = self.cluster(application)?;
        let managed = Managed::of(application);
        let mut live = Vec::new();
        // Secrets own nothing: never read for the tree.
        for object in managed
            .iter()
            .filter(|m| !(m.key.group.is_empty() && m.key.kind == "Secret"))
        {
            let read = cluster
                .get(&object.key)
                .await
                .map_err(|source| InspectError::Read {
                    what: object.key.to_string(),
                    source: Box::new(source),
                })?;
            live.extend(read);
        }
        let mut namespaces: Vec<String> = managed
            .iter()
            .filter_map(|m| m.key.namespace.clone())
            .chain(application.spec.destination.namespace.clone())
            .collect();
        namespaces.sort();
        namespaces.dedup();
        for namespace in &namespaces {
            live.extend(self.list::<Pod>(namespace).await?);
            live.extend(self.list::<ReplicaSet>(namespace).await?);
            live.extend(self.list::<Job>(namespace).await?);
            live.extend(self.list::<EndpointSlice>(namespace).await?);
        }
        Ok(build(&managed, &live))
    }

    /// Every `K` of `namespace`, as JSON.
    async fn list<K>(&self, namespace: &str) -> Result<Vec<Value>, InspectError>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + std::fmt::Debug
            + DeserializeOwned
            + Serialize,
    {
        let listed = Api::<K>::namespaced(self.client.clone(), namespace)
            .list(&ListParams::default())
            .await
            .map_err(|source| InspectError::List {
                what: format!("{} in {namespace}", K::kind(&())),
                source,
            })?;
        Ok(listed
            .items
            .iter()
            .filter_map(|item| serde_json::to_value(item).ok())
            .collect())
    }

    async fn object_page(
        &self,
        application: &Application,
        query: Option<&str>,
        headers: &HeaderMap,
        now: Timestamp,
    ) -> (StatusCode, Page) {
        let app = application.metadata.name.clone().unwrap_or_default();
        let query = query.unwrap_or_default();
        let get = |field: &str| parameter(query, field).unwrap_or_default();
        let key = ObjectKey {
            group: get("group"),
            kind: get("kind"),
            namespace: Some(get("namespace")).filter(|ns| !ns.is_empty()),
            name: get("name"),
        };
        let refusal = |status: StatusCode, why: &str| {
            let main = format!(
                r#"<div data-static></div><p>{}</p><h1>{}</h1><p class="error" data-refused="{}">{}</p>"#,
                link(&format!("/applications/{app}/tree"), "resource tree"),
                escape(&key.to_string()),
                status.as_u16(),
                escape(why),
            );
            (
                status,
                Page {
                    title: format!("{} {}", key.kind, key.name),
                    main,
                },
            )
        };
        if key.kind.is_empty() || key.name.is_empty() {
            return refusal(
                StatusCode::BAD_REQUEST,
                "the address names no object (kind and name)",
            );
        }
        let cluster = match self.cluster(application) {
            Ok(cluster) => cluster,
            Err(error) => return refusal(StatusCode::CONFLICT, &error.to_string()),
        };
        let Some(token) = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token)
        else {
            let (status, why) = refused(&Refusal::Unauthenticated(
                "a Kubernetes bearer token is needed to see an object's manifests and Events"
                    .to_owned(),
            ));
            return refusal(status, &why);
        };
        let resource = match cluster.plural(&key).await {
            Ok(plural) => plural,
            Err(error) => return refusal(StatusCode::BAD_GATEWAY, &error.to_string()),
        };
        let access = Access {
            verb: "get",
            group: key.group.clone(),
            resource,
            namespace: key.namespace.clone().unwrap_or_default(),
            name: key.name.clone(),
        };
        let user = match authorise(&self.client, token, &access).await {
            Ok(user) => user,
            Err((status, why)) => return refusal(status, &why),
        };
        match self.object_view(&cluster, application, &key).await {
            Ok(view) => {
                tracing::info!(object = %key, user = ?user.username, "web view object read");
                (StatusCode::OK, object_panel::render(&app, &key, &view, now))
            }
            Err(error) => refusal(StatusCode::BAD_GATEWAY, &error.to_string()),
        }
    }

    /// The live and desired object `key` of `application`, their difference and its Events.
    async fn object_view(
        &self,
        cluster: &KubeCluster,
        application: &Application,
        key: &ObjectKey,
    ) -> Result<ObjectView, InspectError> {
        let live = cluster
            .get(key)
            .await
            .map_err(|source| InspectError::Read {
                what: key.to_string(),
                source: Box::new(source),
            })?;
        let mut view = ObjectView {
            live,
            ..ObjectView::default()
        };
        match application_plan(
            self.client.clone(),
            &self.namespace,
            application,
            DEFAULT_CONFIG_MAP,
        )
        .await
        {
            Ok((plan, ignore)) => {
                let desired = plan
                    .tasks
                    .iter()
                    .find(|task| &task.key == key)
                    .map(|task| tracked(task, &instance_name(application)));
                match (&view.live, desired) {
                    (Some(live), Some(desired)) => {
                        match compare_live(key, &desired, live, &ignore, redacted) {
                            Ok((desired, changed, diff)) => {
                                view.desired = Some(desired);
                                view.changed = changed;
                                view.diff = diff;
                            }
                            Err(error) => view.source_error = Some(error.to_string()),
                        }
                    }
                    (_, desired) => view.desired = desired,
                }
            }
            // The whole chain, each cause after a colon, as the command line prints it.
            Err(error) => view.source_error = Some(format!("{:#}", anyhow::Error::new(error))),
        }
        let events = Api::<Event>::namespaced(
            self.client.clone(),
            key.namespace.as_deref().unwrap_or("default"),
        )
        .list(&ListParams::default().fields(&format!(
            "involvedObject.kind={},involvedObject.name={}",
            key.kind, key.name
        )))
        .await
        .map_err(|source| InspectError::List {
            what: format!("the Events of {key}"),
            source,
        })?;
        view.events = events
            .items
            .iter()
            .filter_map(|event| serde_json::to_value(event).ok())
            .collect();
        Ok(view)
    }
}

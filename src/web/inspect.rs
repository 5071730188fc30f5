//! The reads the web view makes when a viewer opens an Application's resource tree
//! (`/applications/NAME/tree`) or an object's panel (`/applications/NAME/object?group=&kind=
//! &namespace=&name=`), with the controller's client, for an Application whose destination is
//! the cluster the controller runs in. The tree: a get of each managed object but Secrets, and
//! a list of the Pods, ReplicaSets, Jobs and EndpointSlices of each of the Application's
//! namespaces (their owners place them). The panel, only for a viewer whose bearer token the
//! cluster accepts (TokenReview) and allows `get` on the object (SubjectAccessReview), as
//! actions are allowed: the live object, the Application's source read at its target revision
//! into a temporary checkout (as `flotilla app diff` reads it), the object's Events and, for a
//! Pod or a workload, the pods whose logs it offers. Streamed to one viewer, at most
//! [`MAX_FOLLOWS`] at once: the panel's Events while it is open (`…/events`, the same `get`)
//! and a pod's log (`…/logs`, once the viewer may `get` `pods/log`). Nothing read is kept after
//! the answer, and nothing of it is logged.

use std::sync::Arc;

use hyper::header::{self, HeaderMap};
use hyper::{Response, StatusCode};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use super::access_review::{Refusal, bearer_token};
use super::act::{authorise, refused};
use super::layout::Page;
use super::live_stream::{self, Follows};
use super::object_events::object_events;
use super::object_panel::{self, ObjectView, redacted};
use super::pod_logs::{LogQuery, LogTarget, log_events, pod_selector};
use super::routes::parameter;
use super::snapshot::Snapshot;
use super::tree_view;
use crate::actions::action::Access;
use crate::actions::application_plan::application_plan;
use crate::actions::compare::compare_live;
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::cluster::destinations::destination::{Target, resolve};
use crate::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP;
use crate::httpd::response::{Body, text};
use crate::source::Toolchain;
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
    /// `…/events`: the live Events of the panel's object ([`super::object_events`]).
    Events,
    /// `…/logs`: a pod's log ([`super::pod_logs`]).
    Logs,
}

impl Inspection {
    /// Whether it is answered as a stream of events rather than a page.
    #[must_use]
    pub fn streams(self) -> bool {
        matches!(self, Self::Events | Self::Logs)
    }
}

/// The Application and the inspection `path` asks for, if it asks for one.
#[must_use]
pub fn inspection(path: &str) -> Option<(String, Inspection)> {
    let rest = path.strip_prefix("/applications/")?;
    let (name, what) = rest.rsplit_once('/')?;
    let what = match what {
        "tree" => Inspection::Tree,
        "object" => Inspection::Object,
        "events" => Inspection::Events,
        "logs" => Inspection::Logs,
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

/// How many logs and Events streams viewers may follow at once.
pub const MAX_FOLLOWS: usize = 16;

/// Reads for one namespace's view.
pub struct Inspector {
    client: Client,
    /// What generates an Application's manifests for its diff.
    toolchain: Arc<Toolchain>,
    namespace: String,
    follows: Follows,
}

/// The key of the object a panel's address (`group`, `kind`, `namespace`, `name`) names.
fn object_key(query: &str) -> ObjectKey {
    let get = |field: &str| parameter(query, field).unwrap_or_default();
    ObjectKey {
        group: get("group"),
        kind: get("kind"),
        namespace: Some(get("namespace")).filter(|ns| !ns.is_empty()),
        name: get("name"),
    }
}

impl Inspector {
    /// Reads through `client` (the controller's own) for the Applications of `namespace`,
    /// generating their manifests with `toolchain`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, toolchain: Arc<Toolchain>) -> Self {
        Self {
            client,
            toolchain,
            namespace: namespace.to_owned(),
            follows: Follows::new(MAX_FOLLOWS),
        }
    }

    /// The user of the bearer token of `headers`, once the cluster allowed them `access`.
    ///
    /// # Errors
    /// The status and message to answer: 401 without a token or with one the cluster does not
    /// accept, 403 when its RBAC does not allow the access, 503 when it cannot be asked.
    async fn allowed(
        &self,
        headers: &HeaderMap,
        access: &Access,
        what: &str,
    ) -> Result<UserInfo, (StatusCode, String)> {
        let Some(token) = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token)
        else {
            return Err(refused(&Refusal::Unauthenticated(format!(
                "a Kubernetes bearer token is needed to see {what}"
            ))));
        };
        authorise(&self.client, token, access).await
    }

    /// `get` on the object `key` (its resource found by discovery).
    async fn object_access(
        cluster: &KubeCluster,
        key: &ObjectKey,
    ) -> Result<Access, (StatusCode, String)> {
        let resource = cluster
            .plural(key)
            .await
            .map_err(|error| (StatusCode::BAD_GATEWAY, error.to_string()))?;
        Ok(Access {
            verb: "get",
            group: key.group.clone(),
            resource,
            subresource: String::new(),
            namespace: key.namespace.clone().unwrap_or_default(),
            name: key.name.clone(),
        })
    }

    /// A permit to follow one more stream, or the answer when all are taken.
    fn follow(&self) -> Result<OwnedSemaphorePermit, (StatusCode, String)> {
        self.follows.start().ok_or_else(|| {
            (
                StatusCode::TOO_MANY_REQUESTS,
                "refused: too many logs and Events followed at once; close one and retry"
                    .to_owned(),
            )
        })
    }

    /// The live answer of `what` (a stream: [`Inspection::streams`]) for Application `app` of
    /// `snapshot`, `query` and the request's `headers`: a plain-text refusal (no line of it)
    /// unless the viewer's token is allowed the read.
    pub async fn stream(
        &self,
        snapshot: &Snapshot,
        app: &str,
        what: Inspection,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Response<Body> {
        let query = query.unwrap_or_default();
        match self.streamed(snapshot, app, what, query, headers).await {
            Ok(response) => response,
            Err((status, why)) => text(status, format!("{why}\n")),
        }
    }

    async fn streamed(
        &self,
        snapshot: &Snapshot,
        app: &str,
        what: Inspection,
        query: &str,
        headers: &HeaderMap,
    ) -> Result<Response<Body>, (StatusCode, String)> {
        let application = snapshot
            .application(app)
            .ok_or((StatusCode::NOT_FOUND, format!("no Application {app}")))?;
        let cluster = self
            .cluster(application)
            .map_err(|error| (StatusCode::CONFLICT, error.to_string()))?;
        if what == Inspection::Logs {
            let request = LogQuery::parse(query)
                .map_err(|error| (StatusCode::BAD_REQUEST, error.to_string()))?;
            let user = self
                .allowed(headers, &request.access(), "a pod's logs")
                .await?;
            // Who read which log, never a line of it.
            tracing::info!(
                pod = %format!("{}/{}", request.namespace, request.pod),
                container = ?request.container,
                user = ?user.username,
                "web view log read"
            );
            let permit = self.follow()?;
            let lines =
                log_events(self.client.clone(), &request)
                    .await
                    .map_err(|error| match error {
                        kube::Error::Api(status) => (
                            StatusCode::from_u16(status.code).unwrap_or(StatusCode::BAD_GATEWAY),
                            status.message,
                        ),
                        other => (StatusCode::BAD_GATEWAY, other.to_string()),
                    })?;
            return Ok(live_stream::response(lines, permit));
        }
        let key = object_key(query);
        if key.kind.is_empty() || key.name.is_empty() {
            return Err((
                StatusCode::BAD_REQUEST,
                "the address names no object (kind and name)".to_owned(),
            ));
        }
        let access = Self::object_access(&cluster, &key).await?;
        self.allowed(headers, &access, "an object's Events").await?;
        let permit = self.follow()?;
        Ok(live_stream::response(
            object_events(self.client.clone(), &key),
            permit,
        ))
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
            // Answered by `stream`, not as a page.
            Inspection::Events | Inspection::Logs => {
                (StatusCode::NOT_FOUND, super::routes::not_found())
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
        let key = object_key(query.unwrap_or_default());
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
        let access = match Self::object_access(&cluster, &key).await {
            Ok(access) => access,
            Err((status, why)) => return refusal(status, &why),
        };
        let user = match self
            .allowed(headers, &access, "an object's manifests and Events")
            .await
        {
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
            &self.toolchain,
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
        view.logs = self.log_targets(key, view.live.as_ref()).await?;
        Ok(view)
    }

    /// The pods whose logs `key`'s panel offers: a Pod itself, a workload's pods (listed by its
    /// selector); `None` for other objects.
    async fn log_targets(
        &self,
        key: &ObjectKey,
        live: Option<&Value>,
    ) -> Result<Option<Vec<LogTarget>>, InspectError> {
        let Some(live) = live else {
            return Ok(None);
        };
        if key.group.is_empty() && key.kind == "Pod" {
            return Ok(Some(LogTarget::of(live).into_iter().collect()));
        }
        let Some(selector) = pod_selector(&key.group, &key.kind, live) else {
            return Ok(None);
        };
        let namespace = key.namespace.as_deref().unwrap_or("default");
        let pods = Api::<Pod>::namespaced(self.client.clone(), namespace)
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| InspectError::List {
                what: format!("the pods of {key}"),
                source,
            })?;
        Ok(Some(
            pods.items
                .iter()
                .filter_map(|pod| LogTarget::of(&serde_json::to_value(pod).ok()?))
                .collect(),
        ))
    }
}

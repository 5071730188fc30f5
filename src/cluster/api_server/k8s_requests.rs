//! Every request the controller's Kubernetes clients send (its own cluster's and each
//! destination's), counted by a layer of the client as Argo CD's `argocd_app_k8s_request_total`
//! counts them: by server, verb (`Get`, `List`, `Watch`, `Create`, `Patch`, `Update`, `Delete`),
//! resource, namespace, response code and dry run. A client's requests serve many Applications
//! (watches are shared), so they are counted per cluster, not per Application.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// The labels of one request.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    server: String,
    verb: String,
    resource_kind: String,
    resource_namespace: String,
    response_code: String,
    dry_run: String,
}

/// The requests of this process (registered as `argocd_app_k8s_request`).
#[must_use]
pub fn requests() -> Family<RequestLabels, Counter> {
    static REQUESTS: OnceLock<Family<RequestLabels, Counter>> = OnceLock::new();
    REQUESTS.get_or_init(Family::default).clone()
}

/// What a request addresses: the verb, resource and namespace Argo CD labels it with.
#[derive(Debug, PartialEq, Eq)]
struct Addressed {
    verb: &'static str,
    resource: String,
    namespace: String,
    dry_run: bool,
}

/// Reads `method`, `path` and `query` of a request to the Kubernetes API
/// (`/api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]]` or the same under `/apis/GROUP/VERSION`);
/// discovery requests (`/api`, `/apis/GROUP/VERSION`, `/version`) are `Get`s of no resource.
fn addressed(method: &http::Method, path: &str, query: &str) -> Addressed {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest: &[&str] = match segments.as_slice() {
        ["api", _version, rest @ ..] | ["apis", _, _version, rest @ ..] => rest,
        _ => &[],
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (*namespace, rest),
        _ => ("", rest),
    };
    let resource = rest.first().copied().unwrap_or_default();
    let named = rest.len() > 1;
    let query_has = |pair: &str| query.split('&').any(|p| p == pair);
    let verb = match *method {
        http::Method::GET if query_has("watch=true") || query_has("watch=1") => "Watch",
        http::Method::GET if !named && !resource.is_empty() => "List",
        http::Method::POST => "Create",
        http::Method::PUT => "Update",
        http::Method::PATCH => "Patch",
        http::Method::DELETE => "Delete",
        _ => "Get",
    };
    Addressed {
        verb,
        resource: resource.to_owned(),
        namespace: namespace.to_owned(),
        dry_run: query_has("dryRun=All"),
    }
}

/// Counts a request of `method` to `uri` on `server` answered with `response_code` (`error`
/// when no answer came).
pub fn count(server: &str, method: &http::Method, uri: &http::Uri, response_code: String) {
    let addressed = addressed(method, uri.path(), uri.query().unwrap_or_default());
    requests()
        .get_or_create(&RequestLabels {
            server: server.to_owned(),
            verb: addressed.verb.to_owned(),
            resource_kind: addressed.resource,
            resource_namespace: addressed.namespace,
            response_code,
            dry_run: addressed.dry_run.to_string(),
        })
        .inc();
}

/// Counts the requests of a client of `server`.
#[derive(Clone, Debug)]
pub struct CountRequestsLayer {
    server: String,
}

impl CountRequestsLayer {
    /// Counts requests to `server` (the API server's URL).
    #[must_use]
    pub fn new(server: &str) -> Self {
        Self {
            server: server.trim_end_matches('/').to_owned(),
        }
    }
}

impl<S> tower::Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> CountRequests<S> {
        CountRequests {
            inner,
            server: self.server.clone(),
        }
    }
}

/// A client's HTTP service, its requests counted in [`requests`].
#[derive(Clone, Debug)]
pub struct CountRequests<S> {
    inner: S,
    server: String,
}

/// The future of a counted call.
type Counted<R, E> = Pin<Box<dyn Future<Output = Result<R, E>> + Send>>;

impl<S, B, R> tower::Service<http::Request<B>> for CountRequests<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    R: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Counted<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let (method, uri) = (request.method().clone(), request.uri().clone());
        let server = self.server.clone();
        let call = self.inner.call(request);
        Box::pin(async move {
            let answered = call.await;
            let response_code = answered
                .as_ref()
                .map_or_else(|_| "error".to_owned(), |r| r.status().as_u16().to_string());
            count(&server, &method, &uri, response_code);
            answered
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(method: http::Method, path: &str, query: &str) -> (&'static str, String, String) {
        let a = addressed(&method, path, query);
        (a.verb, a.resource, a.namespace)
    }

    #[test]
    fn requests_are_read_as_argo_cd_labels_them() {
        let get = http::Method::GET;
        let owned = |v: &'static str, r: &str, n: &str| (v, r.to_owned(), n.to_owned());
        assert_eq!(
            read(get.clone(), "/api/v1/namespaces/a/pods", ""),
            owned("List", "pods", "a")
        );
        assert_eq!(
            read(
                get.clone(),
                "/apis/apps/v1/namespaces/a/deployments/web",
                ""
            ),
            owned("Get", "deployments", "a")
        );
        assert_eq!(
            read(
                get.clone(),
                "/apis/apps/v1/deployments",
                "watch=true&timeoutSeconds=290"
            ),
            owned("Watch", "deployments", "")
        );
        assert_eq!(
            read(get.clone(), "/api/v1/namespaces/team-a", ""),
            owned("Get", "namespaces", "")
        );
        assert_eq!(read(get, "/apis/apps/v1", ""), owned("Get", "", ""));
        assert_eq!(
            read(
                http::Method::PATCH,
                "/apis/flotilla.dev/v1alpha1/namespaces/f/applications/x/status",
                ""
            ),
            owned("Patch", "applications", "f")
        );
        assert!(
            addressed(
                &http::Method::PATCH,
                "/api/v1/namespaces/a/configmaps/c",
                "dryRun=All&fieldManager=flotilla"
            )
            .dry_run
        );
    }
}

//! An object a command names that does not exist (an Application, ApplicationSet or AppProject):
//! its own error, so the command exits with Argo CD's code for it (20, see [`super::exit_code`])
//! and says which object it looked for.

use anyhow::Context as _;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::cluster::api_server::api_error::ApiError;

/// The exit code of a command whose named object does not exist: the code `argocd` exits with
/// when its API answers NotFound (its generic error code, which it uses for every API error).
pub const DOES_NOT_EXIST: u8 = 20;

/// The object `kind` `name` is not in `namespace`.
#[derive(Debug, thiserror::Error)]
#[error("{kind} {name} does not exist in namespace {namespace}")]
pub struct Missing {
    /// `Application`, `ApplicationSet` or `AppProject`.
    pub kind: String,
    /// The namespace looked in.
    pub namespace: String,
    /// The name asked for.
    pub name: String,
}

/// The object `name` of `api` as stored now.
///
/// # Errors
/// [`Missing`] when there is no such object; the API error, naming the object, when it cannot
/// be read.
pub async fn get_named<K>(api: &Api<K>, name: &str) -> anyhow::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let kind = K::kind(&()).into_owned();
    let namespace = api.namespace().unwrap_or_default().to_owned();
    api.get_opt(name)
        .await
        .map_err(ApiError::from)
        .with_context(|| format!("reading {kind} {namespace}/{name}"))?
        .ok_or_else(|| {
            Missing {
                kind,
                namespace,
                name: name.to_owned(),
            }
            .into()
        })
}

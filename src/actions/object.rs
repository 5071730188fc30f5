//! The two requests every action makes: read the object as stored now, then one merge patch
//! of it; their failures as [`ActionError`]s naming the object.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ActionError;
use crate::cluster::api_server::api_error::ApiError;

/// The object `name` of `api` as stored now.
pub(super) async fn read<K>(api: &Api<K>, name: &str) -> Result<K, ActionError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.get(name).await.map_err(|error| ActionError::Read {
        object: described::<K>(api, name),
        source: ApiError::from(error),
    })
}

/// One merge patch of the object `name` of `api`.
pub(super) async fn patch<K>(api: &Api<K>, name: &str, body: &Value) -> Result<(), ActionError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map_err(|error| ActionError::Write {
            object: described::<K>(api, name),
            source: ApiError::from(error),
        })?;
    Ok(())
}

/// `Kind namespace/name`, as messages name the object.
fn described<K: Resource<DynamicType = ()>>(api: &Api<K>, name: &str) -> String {
    format!(
        "{} {}/{name}",
        K::kind(&()),
        api.namespace().unwrap_or_default()
    )
}

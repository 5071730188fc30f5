//! Writing one object as its [`WritePolicy`] decides: read the live object when the policy needs
//! it, then skip, server-side apply or replace; after a rejection that the policy answers with a
//! recreate (`Force=true` and an immutable field), delete the object, wait until it is gone and
//! write it again.

use serde_json::Value;

use crate::cluster::api::{Applied, ClusterApi, ClusterError, FIELD_MANAGER, Propagation};
use crate::manifest::ObjectKey;
use crate::sync::{ResourceAction, Write, WritePolicy};

use super::settings::ExecuteSettings;

/// The outcome of writing one object, with a note for its record when the write was not a
/// plain apply.
pub struct Written {
    /// What the server returned (the live object for a skipped write).
    pub result: Result<Applied, ClusterError>,
    /// E.g. `recreated (Force=true) after: … field is immutable`.
    pub note: Option<String>,
}

/// Writes `object` (identified by `key`) as `policy` says.
pub async fn write_object<C: ClusterApi>(
    cluster: &C,
    key: &ObjectKey,
    object: &Value,
    policy: WritePolicy,
    settings: &ExecuteSettings,
) -> Written {
    let live = if policy.needs_live() {
        cluster.get(key).await.ok().flatten()
    } else {
        None
    };
    let write = policy.write(object, live.as_ref(), FIELD_MANAGER);
    if let (Write::Skip, Some(live)) = (write, live) {
        return Written {
            result: Ok(Applied {
                object: live,
                action: ResourceAction::Unchanged,
            }),
            note: Some("already in sync (ApplyOutOfSyncOnly=true), not applied".to_owned()),
        };
    }
    let first = send(cluster, write, object).await;
    let rejection = match first {
        Err(error) if policy.recreate_after_rejection(error.is_immutable_field()) => error,
        result => return Written { result, note: None },
    };
    let note = Some(format!("recreated (Force=true) after: {rejection}"));
    if let Err(error) = cluster.delete(key, Propagation::Background).await {
        let message = format!("{rejection}; deleting it to recreate it failed: {error}");
        return Written {
            result: Err(ClusterError::Unavailable(message)),
            note,
        };
    }
    if let Err(error) = wait_until_gone(cluster, key, settings).await {
        return Written {
            result: Err(error),
            note,
        };
    }
    Written {
        result: send(cluster, write, object).await,
        note,
    }
}

async fn send<C: ClusterApi>(
    cluster: &C,
    write: Write,
    object: &Value,
) -> Result<Applied, ClusterError> {
    match write {
        Write::Replace => cluster.replace(object, false).await,
        Write::Apply | Write::Skip => cluster.apply(object, false).await,
    }
}

/// Polls until the object no longer exists, at most for the operation's timeout.
async fn wait_until_gone<C: ClusterApi>(
    cluster: &C,
    key: &ObjectKey,
    settings: &ExecuteSettings,
) -> Result<(), ClusterError> {
    let started = cluster.now();
    loop {
        if cluster.get(key).await?.is_none() {
            return Ok(());
        }
        let waited = std::time::Duration::try_from(cluster.now().duration_since(started))
            .unwrap_or_default();
        if waited >= settings.timeout {
            return Err(ClusterError::Unavailable(format!(
                "{key} was deleted to be recreated (Force=true) and is still there after {}s",
                waited.as_secs()
            )));
        }
        cluster.sleep(settings.poll_interval).await;
    }
}

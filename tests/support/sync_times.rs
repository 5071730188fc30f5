//! When an Application's last sync operation started and finished, as its status says: what
//! the rollout tests compare to show steps synced one after the other.

use flotilla_core::api::Application;
use k8s_openapi::jiff::Timestamp;
use kube::Api;

/// When `name`'s last sync operation started and finished; why not, while it has none or it
/// has not finished.
pub async fn sync_times(
    apps: &Api<Application>,
    name: &str,
) -> Result<(Timestamp, Timestamp), String> {
    let app = apps.get(name).await.map_err(|e| e.to_string())?;
    let operation = app
        .status
        .and_then(|status| status.operation_state)
        .ok_or(format!("{name}: no operation"))?;
    let started = operation
        .started_at
        .ok_or(format!("{name}: no start time"))?
        .0;
    let finished = operation
        .finished_at
        .ok_or(format!("{name}: not finished"))?
        .0;
    Ok((started, finished))
}

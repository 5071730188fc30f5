//! What `flotilla app delete` and `flotilla appset delete` share: argocd's `--wait` (with
//! `--timeout`) and `--yes` flags, and the wait until the deleted object is gone.

use std::time::Duration;

use anyhow::Context as _;
use kube::runtime::conditions::is_deleted;
use kube::runtime::wait::{Error as WaitError, await_condition};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::cluster::api_server::api_error::watch_message;
use flotilla_generators::duration::{format_duration, parse_duration};

/// `--wait`, `--timeout` and `--yes` of a delete.
#[derive(Debug, clap::Args)]
pub struct DeletionWaitArgs {
    /// Wait until the object (and what goes with it) is gone; exits 1 on timeout.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits, e.g. 5m.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Do not ask for confirmation (flotilla never asks; accepted for argocd's scripts).
    #[arg(short, long)]
    pub yes: bool,
}

impl DeletionWaitArgs {
    /// With `--wait`, waits until the object `name` of `api` whose uid was `uid` is gone:
    /// whether it is (always true without `--wait`). On timeout, says so on stderr.
    ///
    /// # Errors
    /// The watch fails.
    pub async fn gone<K>(&self, api: &Api<K>, name: &str, uid: &str) -> anyhow::Result<bool>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        if !self.wait {
            return Ok(true);
        }
        let kind = K::kind(&());
        let gone = await_condition(api.clone(), name, is_deleted(uid));
        match tokio::time::timeout(self.timeout, gone).await {
            Ok(result) => {
                result
                    .map_err(|WaitError::ProbeFailed(error)| anyhow::anyhow!(watch_message(error)))
                    .with_context(|| format!("watching {kind} {name}"))?;
                Ok(true)
            }
            Err(_) => {
                eprintln!(
                    "timed out after {} waiting for {kind} {name} to be deleted",
                    format_duration(self.timeout)
                );
                Ok(false)
            }
        }
    }
}

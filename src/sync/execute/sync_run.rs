//! A sync operation across its attempts, stepped one step per call: the current attempt's
//! [`Progress`] and what retries need (`syncPolicy.retry`), all owned, so the controller can keep
//! it between reconciles and wait without holding a reconcile slot, while `flotilla sync` and
//! `flotilla simulate` loop over the same steps ([`super::run_sync`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::sync::execute::cluster_api::ClusterApi;
use flotilla_core::sync::{OperationPhase, OperationState};

use super::attempt::{Advance, Attempt, AttemptEnd, Context, Progress};
use super::event::SyncEvent;
use super::store::OperationStore;
use super::{ExecuteError, PlanSource};
use flotilla_core::api::retry_policy::RetryPolicy;
use flotilla_core::sync::begin;

/// One sync operation in progress.
pub struct SyncRun {
    base_id: String,
    revision: Option<String>,
    retry_policy: Option<RetryPolicy>,
    /// Retries taken so far.
    retries: usize,
    progress: Progress,
    /// When the next attempt starts, while waiting to retry; with the attempt that failed.
    retry: Option<(Timestamp, AttemptEnd)>,
}

impl SyncRun {
    /// Resumes the stored, unfinished operation of `revision`, or starts a new one with id
    /// `base_id`, and prepares its attempt.
    ///
    /// # Errors
    /// The state cannot be loaded, the plan cannot be built, or the cluster cannot be read.
    pub async fn begin<C: ClusterApi, S: OperationStore>(
        context: Context<'_, C, S>,
        source: PlanSource<'_>,
        revision: Option<&str>,
        base_id: &str,
    ) -> Result<Self, ExecuteError> {
        let now = Time(context.cluster.now());
        let (state, resumed) = begin(context.store.load().await?, revision, base_id, now);
        if resumed {
            (context.events)(&SyncEvent::Resumed {
                operation_id: state.operation_id.clone(),
                recorded: state.resources.len(),
            });
        }
        let plan = source(&state.operation_id)?;
        let progress = Attempt::start(context, plan, state).await?;
        Ok(Self {
            base_id: base_id.to_owned(),
            revision: revision.map(str::to_owned),
            retry_policy: context.settings.retry.clone(),
            retries: 0,
            progress,
            retry: None,
        })
    }

    /// Takes one step of the current attempt, or of waiting to retry: a failed attempt (not a
    /// timed-out or cancelled one) is retried after its delay while retries are left. A
    /// `cancelled` operation ends Terminated (or, while waiting to retry, as the failed attempt
    /// ended).
    ///
    /// # Errors
    /// The state cannot be stored, the plan cannot be built, or the cluster cannot be read.
    pub async fn advance<C: ClusterApi, S: OperationStore>(
        &mut self,
        context: Context<'_, C, S>,
        source: PlanSource<'_>,
        cancelled: bool,
    ) -> Result<Advance, ExecuteError> {
        if let Some((at, _)) = &self.retry {
            let now = context.cluster.now();
            if cancelled {
                let (_, failed) = self.retry.take().expect("waiting to retry");
                return Ok(Advance::Done(failed));
            }
            if now < *at {
                let left =
                    std::time::Duration::try_from(now.duration_until(*at)).unwrap_or_default();
                return Ok(Advance::Pause(left));
            }
            self.retry = None;
            let id = format!("{}-retry{}", self.base_id, self.retries);
            let state = begin(None, self.revision.as_deref(), &id, Time(now)).0;
            let plan = source(&state.operation_id)?;
            self.progress = Attempt::start(context, plan, state).await?;
            return Ok(Advance::Continue);
        }
        let advance = Attempt::new(context, &mut self.progress)
            .advance(cancelled)
            .await?;
        let Advance::Done(ended) = advance else {
            return Ok(advance);
        };
        let delay = self
            .retry_policy
            .as_ref()
            .and_then(|policy| policy.delay(self.retries));
        let delay = delay.filter(|_| {
            ended.state.phase == OperationPhase::Failed && !ended.timed_out && !cancelled
        });
        let Some(delay) = delay else {
            return Ok(Advance::Done(ended));
        };
        self.retries += 1;
        (context.events)(&SyncEvent::Retrying {
            attempt: self.retries,
            after: delay,
            reason: ended.state.message.clone(),
        });
        let at = context.cluster.now() + delay;
        self.retry = Some((at, ended));
        Ok(Advance::Pause(delay))
    }

    /// The current attempt, stepped in `context` (to wait as a step asks).
    pub fn attempt<'p, 'c, C: ClusterApi, S: OperationStore>(
        &'p mut self,
        context: Context<'c, C, S>,
    ) -> Attempt<'p, 'c, C, S> {
        Attempt::new(context, &mut self.progress)
    }

    /// The plan the current attempt syncs.
    #[must_use]
    pub fn plan(&self) -> &flotilla_core::sync::SyncPlan {
        self.progress.plan()
    }

    /// The operation's state as it stands (stored).
    #[must_use]
    pub fn into_state(self) -> OperationState {
        self.progress.into_state()
    }
}

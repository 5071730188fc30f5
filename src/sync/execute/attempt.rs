//! One attempt of a sync operation: `plan_step → carry out → record → observe → plan_step` until
//! the plan says Done, the deadline passes or a terminate request arrives. Every decision is
//! [`plan_step`]'s; this loop only performs it, keeps the live objects it needs current by polling
//! the objects a wait names, and stores the state after every step that changed it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use tokio::sync::watch;

use crate::sync::execute::cluster_api::{ClusterApi, ClusterError, Deleted, Propagation};
use flotilla_core::health::{HealthStatus, with_pod_problems};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::sync::{
    Batch, FieldValidation, HookPhase, LiveObject, OperationPhase, OperationState, Outcome,
    PlannedTask, PrepareInput, Prepared, PruneOutcome, PruneTask, ResourceResult, SharedObject,
    SyncPhase, SyncPlan, SyncState, SyncStep, SyncTask, Waiting, WriteOutcome, WritePolicy,
    Written, adopted_record, applied_record, created_namespace_record, finish_hook_record,
    mark_hook, namespace_object, namespace_written, plan_step, planned_types, prepare,
    pruned_record, rejected_records, tracked, tracked_elsewhere,
};

use super::ExecuteError;
use super::confirmation::PruneConfirmation;
use super::dry_run::{Verdict, dry_run_tasks};
use super::edited::Edited;
use super::event::SyncEvent;
use super::settings::ExecuteSettings;
use super::store::OperationStore;
use super::write::write_object;

/// How an attempt ended.
#[derive(Debug)]
pub struct AttemptEnd {
    /// The final state (Succeeded, Failed or Terminated).
    pub state: OperationState,
    /// Whether it failed because its deadline passed (such attempts are not retried).
    pub timed_out: bool,
}

/// What `plan_step` decided, owned, so the state it borrowed from can be updated; the tasks to
/// apply are named by their index in the plan (which does not change during the attempt).
enum OwnedStep {
    Apply(Batch, Vec<usize>),
    AdoptHooks(Vec<usize>),
    DeleteHooks(Vec<ObjectKey>),
    FinishHooks(Vec<FinishedHook>),
    Prune(Vec<PruneTask>),
    /// Wait for the pruning confirmation; the step's text.
    AwaitPruneConfirmation(String),
    Wait(Waiting),
    /// The wave delay: pause this long.
    Delay(Duration),
    RunSyncFail(String),
    Done(Outcome),
}

struct FinishedHook {
    phase: SyncPhase,
    key: ObjectKey,
    succeeded: bool,
    message: String,
    delete: bool,
}

impl OwnedStep {
    fn of(step: SyncStep<'_>) -> Self {
        let indices = |tasks: Vec<PlannedTask<'_>>| tasks.iter().map(|t| t.index).collect();
        match step {
            SyncStep::Apply { batch, tasks } => Self::Apply(batch, indices(tasks)),
            SyncStep::AdoptHooks { tasks, .. } => Self::AdoptHooks(indices(tasks)),
            SyncStep::DeleteHooks { tasks, .. } => {
                Self::DeleteHooks(tasks.into_iter().map(|t| t.key.clone()).collect())
            }
            SyncStep::FinishHooks { hooks, .. } => Self::FinishHooks(
                hooks
                    .into_iter()
                    .map(|hook| FinishedHook {
                        phase: hook.task.phase,
                        key: hook.task.key.clone(),
                        succeeded: hook.succeeded,
                        message: hook.message,
                        delete: hook.delete,
                    })
                    .collect(),
            ),
            SyncStep::Prune { objects, .. } => Self::Prune(objects.into_iter().cloned().collect()),
            step @ SyncStep::AwaitPruneConfirmation { .. } => {
                Self::AwaitPruneConfirmation(step.to_string())
            }
            SyncStep::Wait(waiting) => Self::Wait(waiting),
            SyncStep::Delay { left, .. } => Self::Delay(left),
            SyncStep::RunSyncFail { reason } => Self::RunSyncFail(reason),
            SyncStep::Done(outcome) => Self::Done(outcome),
        }
    }
}

/// The context an attempt runs in: what it acts on and reports to, borrowed for a step.
pub struct Context<'c, C, S> {
    /// The cluster.
    pub cluster: &'c C,
    /// Where the state is kept.
    pub store: &'c S,
    /// The Application name (tracking ids).
    pub app: &'c str,
    /// Settings.
    pub settings: &'c ExecuteSettings,
    /// Where progress goes.
    pub events: &'c (dyn Fn(&SyncEvent) + Sync),
    /// Who confirms the pruning of `Prune=confirm` objects.
    pub confirmation: PruneConfirmation<'c>,
}

impl<C, S> Clone for Context<'_, C, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C, S> Copy for Context<'_, C, S> {}

/// What one attempt knows between its steps, owned: the plan, the state, the live objects read
/// so far. The controller keeps it from one reconcile to the next; a restart rebuilds it from the
/// stored state with [`Progress::start`].
pub struct Progress {
    plan: SyncPlan,
    prune: Vec<PruneTask>,
    state: Edited<OperationState>,
    live: HashMap<ObjectKey, LiveObject>,
    /// When each object was last read (or written, reading the server's answer).
    seen: HashMap<ObjectKey, Timestamp>,
    started: Timestamp,
    sync_fail_started: Option<Timestamp>,
    timed_out: bool,
    last_batch: Option<Batch>,
    /// Objects whose dry run waits until their wave, when this sync has created their Namespace
    /// or kind.
    deferred: HashSet<ObjectKey>,
    /// Whether the checks before the first write have run (or were not needed).
    prepared: bool,
    /// The wait the last step returned: its objects are read again before the next step.
    observe: Option<Waiting>,
}

/// The longest single wait of an operation without a timeout: a wait ends sooner on a change
/// or a poll, and the next step decides again.
const UNLIMITED_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// What one step of an attempt asks of its caller.
#[derive(Debug)]
pub enum Advance {
    /// Take the next step now.
    Continue,
    /// Wait for a change of these objects (or the poll interval) before the next step.
    Wait(Waiting),
    /// Wait for the pruning confirmation (the stored state says so) before the next step.
    AwaitConfirmation,
    /// Pause this long before the next step.
    Pause(Duration),
    /// The attempt ended.
    Done(AttemptEnd),
}

impl Progress {
    /// The operation's state as it stands.
    pub fn into_state(self) -> OperationState {
        self.state.into_inner()
    }

    /// The plan the attempt syncs.
    #[must_use]
    pub fn plan(&self) -> &SyncPlan {
        &self.plan
    }
}

/// One attempt's progress, stepped in a context.
pub struct Attempt<'p, 'c, C, S> {
    context: Context<'c, C, S>,
    progress: &'p mut Progress,
}

impl<'p, 'c, C: ClusterApi, S: OperationStore> Attempt<'p, 'c, C, S> {
    /// Prepares an attempt: reads the live objects the plan starts from (previous hook
    /// instances, everything already recorded) and, with pruning, the prune candidates.
    ///
    /// # Errors
    /// The cluster cannot be read.
    pub async fn start(
        context: Context<'c, C, S>,
        plan: SyncPlan,
        state: OperationState,
    ) -> Result<Progress, ExecuteError> {
        let started = context.cluster.now();
        let fresh = state.resources.is_empty() && state.failure.is_none();
        let mut progress = Progress {
            plan,
            prune: Vec::new(),
            state: Edited::unstored(state),
            live: HashMap::new(),
            seen: HashMap::new(),
            started,
            sync_fail_started: None,
            timed_out: false,
            last_batch: None,
            deferred: HashSet::new(),
            prepared: !fresh,
            observe: None,
        };
        let mut attempt = Attempt {
            context,
            progress: &mut progress,
        };
        let mut keys: Vec<ObjectKey> = attempt
            .progress
            .plan
            .tasks
            .iter()
            .filter(|task| task.hook.is_some())
            .map(|task| task.key.clone())
            .chain(
                attempt
                    .progress
                    .state
                    .get()
                    .resources
                    .iter()
                    .map(ResourceResult::key),
            )
            .collect();
        keys.sort();
        keys.dedup();
        let health = attempt
            .context
            .cluster
            .observing(&attempt.context.settings.health)
            .await;
        for (key, object) in attempt.read(&keys).await {
            let object = object.map_err(|error| ExecuteError::Observe {
                what: key.to_string(),
                error,
            })?;
            if let Some(live) = object
                .as_ref()
                .and_then(|object| LiveObject::from_object(object, &health))
            {
                attempt.progress.live.insert(key, live);
            }
        }
        if attempt.context.settings.prune {
            attempt.plan_prune().await?;
        }
        if attempt.progress.state.get().failure.is_some() {
            attempt.progress.sync_fail_started = Some(started);
        }
        Ok(progress)
    }

    /// `progress`, stepped in `context`.
    pub fn new(context: Context<'c, C, S>, progress: &'p mut Progress) -> Self {
        Self { context, progress }
    }

    async fn plan_prune(&mut self) -> Result<(), ExecuteError> {
        let listed_at = self.context.cluster.now();
        let tracked = self
            .context
            .cluster
            .list_tracked(self.context.app)
            .await
            .map_err(|error| ExecuteError::Observe {
                what: "objects carrying the tracking annotation".to_owned(),
                error,
            })?;
        let health = &self.context.settings.health;
        let tracked: Vec<LiveObject> = tracked
            .iter()
            .filter_map(|object| LiveObject::from_object(object, health))
            .collect();
        let prune = flotilla_core::sync::plan_prune(
            &self.progress.plan,
            &tracked,
            self.context.app,
            &self.context.settings.sync_options,
        );
        for kept in &prune.kept {
            tracing::info!(object = %kept.key, reason = %kept.reason, "not pruned");
        }
        let candidates: std::collections::HashSet<&ObjectKey> =
            prune.tasks.iter().map(|t| &t.key).collect();
        for object in tracked {
            if candidates.contains(&object.key) {
                self.progress.seen.insert(object.key.clone(), listed_at);
                self.progress.live.insert(object.key.clone(), object);
            }
        }
        self.progress.prune = prune.tasks;
        Ok(())
    }

    /// Takes one step: reads again what the last wait was on, then carries out what
    /// [`plan_step`] decides (the checks before the first write come first), and stores the
    /// state when it changed and the step waits or ends (one followed at once by another is
    /// stored with it). A `cancelled` attempt ends Terminated.
    ///
    /// # Errors
    /// The state cannot be stored.
    pub async fn advance(&mut self, cancelled: bool) -> Result<Advance, ExecuteError> {
        if !self.progress.prepared {
            self.progress.prepared = true;
            if let Some(reason) = self.prepare().await? {
                return self
                    .end(OperationPhase::Failed, reason)
                    .await
                    .map(Advance::Done);
            }
            if self.progress.plan.has_hooks() || !self.context.store.defers_start() {
                self.save().await?;
            }
        }
        if let Some(waiting) = self.progress.observe.take() {
            self.observe(&waiting).await;
        }
        if cancelled {
            return self.terminate().await.map(Advance::Done);
        }
        let timed_out = self.deadline_passed();
        let started = self
            .progress
            .state
            .get()
            .started_at
            .as_ref()
            .map(|time| time.0);
        let step = {
            let state = SyncState {
                plan: &self.progress.plan,
                live: &self.progress.live,
                results: &self.progress.state.get().resources,
                operation_id: &self.progress.state.get().operation_id,
                prune: &self.progress.prune,
                failure: self.progress.state.get().failure.as_deref(),
                timed_out,
                prune_confirmed: self.context.confirmation.confirmed(started),
                wave_delay: self.context.settings.wave_delay,
                now: self.context.cluster.now(),
            };
            let step = plan_step(&state);
            if !matches!(
                step,
                SyncStep::Wait(_) | SyncStep::AwaitPruneConfirmation { .. }
            ) {
                (self.context.events)(&SyncEvent::Step(step.to_string()));
            }
            OwnedStep::of(step)
        };
        let advance = match step {
            OwnedStep::Apply(batch, tasks) => {
                self.apply(batch, &tasks).await;
                Advance::Continue
            }
            // Parked by the controller meanwhile, never slept in a step.
            OwnedStep::Delay(left) => Advance::Pause(left),
            OwnedStep::AdoptHooks(tasks) => {
                self.adopt_hooks(&tasks);
                Advance::Continue
            }
            OwnedStep::DeleteHooks(keys) => {
                if self.delete_hooks(&keys).await {
                    Advance::Continue
                } else {
                    // Deleting failed: try again after a poll interval.
                    Advance::Pause(self.context.settings.poll_interval)
                }
            }
            OwnedStep::FinishHooks(hooks) => {
                self.finish_hooks(hooks).await;
                Advance::Continue
            }
            OwnedStep::Prune(objects) => {
                if !self.progress.state.get().message.is_empty() {
                    // The wait for a pruning confirmation is over.
                    self.progress.state.edit().message.clear();
                }
                self.prune_objects(&objects).await;
                Advance::Continue
            }
            OwnedStep::AwaitPruneConfirmation(message) => {
                if self.progress.state.get().message != message {
                    (self.context.events)(&SyncEvent::Step(message.clone()));
                    self.progress.state.edit().message = message;
                }
                Advance::AwaitConfirmation
            }
            OwnedStep::Wait(waiting) => {
                (self.context.events)(&SyncEvent::Waiting(waiting.clone()));
                self.progress.observe = Some(waiting.clone());
                Advance::Wait(waiting)
            }
            OwnedStep::RunSyncFail(reason) => {
                self.progress.timed_out |= timed_out.is_some();
                self.progress.state.edit().failure = Some(reason);
                self.progress.sync_fail_started = Some(self.context.cluster.now());
                Advance::Continue
            }
            OwnedStep::Done(outcome) => {
                self.progress.timed_out |=
                    timed_out.is_some() && self.progress.state.get().failure.is_none();
                let (phase, message) = match outcome {
                    Outcome::Succeeded => (
                        OperationPhase::Succeeded,
                        flotilla_core::sync::SUCCESS_MESSAGE.to_owned(),
                    ),
                    Outcome::Failed { reason } => (OperationPhase::Failed, reason),
                };
                return self.end(phase, message).await.map(Advance::Done);
            }
        };
        // A step followed at once by the next is stored with it: the state is written before
        // the first write to the cluster (above; for an operation without hooks only when the
        // store does not defer it, see `OperationStore::defers_start`), before every wait and
        // at the end. A
        // controller stopped in between resumes from the last stored state; what it wrote
        // since is written again (applies are idempotent, hooks are adopted by their mark).
        if !matches!(advance, Advance::Continue) {
            self.save().await?;
        }
        Ok(advance)
    }

    /// How long the caller may wait before the next step at most: until the current limit
    /// passes (the operation's timeout, or its SyncFail hooks'), and no longer than a pause.
    #[must_use]
    pub fn wait_limit(&self, advance: &Advance) -> Duration {
        let (left, _) = self.time_left();
        match advance {
            Advance::Pause(duration) => left.min(*duration),
            _ => left,
        }
    }

    /// Before the first write of a fresh operation: asks the server which of the plan's kinds
    /// it serves, carries out what [`flotilla_core::sync::prepare`] decides — a refusal, or the
    /// server-side dry run (objects that need a Namespace or kind of this sync wait for their
    /// wave) and then the destination namespace's creation when it is missing. Returns the
    /// failure, if any; a failed check records the objects it names and writes nothing.
    async fn prepare(&mut self) -> Result<Option<String>, ExecuteError> {
        let cluster = self.context.cluster;
        let settings = self.context.settings;
        let mut unserved = std::collections::BTreeSet::new();
        for (api_version, kind) in planned_types(&self.progress.plan) {
            let served = cluster.served(&api_version, &kind).await.map_err(|error| {
                ExecuteError::Observe {
                    what: format!("resource type {kind} in {api_version}"),
                    error,
                }
            })?;
            if !served {
                unserved.insert((api_version, kind));
            }
        }
        let shared = self.shared_objects().await?;
        let now = Time(cluster.now());
        let decided = prepare(
            &self.progress.plan,
            &PrepareInput {
                prune: &self.progress.prune,
                allow_empty: settings.allow_empty,
                unserved: &unserved,
                sync_options: &settings.sync_options,
                destination_namespace: settings.destination_namespace.as_deref(),
                admission: &settings.admission,
                shared: &shared,
                now: &now,
            },
        );
        let (dry_run, to_create) = match decided {
            Prepared::Refused { records, message } => {
                self.progress.state.edit().resources.extend(records);
                return Ok(Some(message));
            }
            Prepared::Checked {
                dry_run,
                create_namespace,
            } => (dry_run, create_namespace),
        };
        let verdicts = dry_run_tasks(cluster, &self.progress.plan, dry_run, settings).await;
        let (records, failure) = rejected_records(&rejected(&verdicts), &Time(cluster.now()));
        self.progress.deferred = deferred(&verdicts);
        self.progress.state.edit().resources.extend(records);
        if let Some(failure) = failure {
            return Ok(Some(format!("nothing was written: {failure}")));
        }
        let Some(key) = to_create else {
            return Ok(None);
        };
        let existing = cluster
            .get(&key)
            .await
            .map_err(|error| ExecuteError::Observe {
                what: key.to_string(),
                error,
            })?;
        let metadata = settings.managed_namespace_metadata.as_ref();
        if !namespace_written(existing.is_some(), metadata) {
            return Ok(None);
        }
        let started = Time(cluster.now());
        let created = cluster
            .apply(
                &namespace_object(&key, metadata),
                false,
                FieldValidation::Strict,
            )
            .await
            .map(|applied| {
                let health = LiveObject::from_object(&applied.object, &settings.health)
                    .map(|live| live.health.status);
                (applied.action, health)
            })
            .map_err(|error| error.to_string());
        let (record, failure) = created_namespace_record(
            &key,
            existing.is_some(),
            created,
            started,
            Time(cluster.now()),
        );
        self.progress.state.edit().resources.push(record);
        Ok(failure)
    }

    /// With `FailOnSharedResource=true`, the objects of the plan (hooks aside) whose live copy
    /// another Application tracks (one read of each); none otherwise.
    async fn shared_objects(&self) -> Result<Vec<SharedObject>, ExecuteError> {
        if !self.context.settings.fail_on_shared_resource {
            return Ok(Vec::new());
        }
        let mut shared = Vec::new();
        for task in self.progress.plan.tasks.iter().filter(|t| t.hook.is_none()) {
            let live = self.context.cluster.get(&task.key).await.map_err(|error| {
                ExecuteError::Observe {
                    what: task.key.to_string(),
                    error,
                }
            })?;
            shared.extend(
                live.and_then(|live| tracked_elsewhere(&task.key, &live, self.context.app)),
            );
        }
        Ok(shared)
    }

    /// The limit that passed, if any: the operation timeout, or SyncFail hooks' own one.
    fn deadline_passed(&self) -> Option<Duration> {
        let (left, limit) = self.time_left();
        limit.filter(|_| left.is_zero())
    }

    /// The time left before the current limit passes, and that limit; without one (no sync
    /// timeout, Argo CD's default), [`UNLIMITED_WAIT`] and None.
    fn time_left(&self) -> (Duration, Option<Duration>) {
        let settings = self.context.settings;
        let (since, limit) = match self.progress.sync_fail_started {
            Some(since) => (since, Some(settings.sync_fail_timeout)),
            None => (self.progress.started, settings.timeout),
        };
        let Some(limit) = limit else {
            return (UNLIMITED_WAIT, None);
        };
        let elapsed = self.context.cluster.now().duration_since(since);
        let elapsed = Duration::try_from(elapsed).unwrap_or_default();
        (limit.saturating_sub(elapsed), Some(limit))
    }

    /// Dry-runs the objects of a batch whose check waited for their wave; true when the server
    /// accepted them all (the operation has failed otherwise, and the batch is not written).
    async fn check_deferred(&mut self, tasks: &[usize]) -> bool {
        if self.progress.deferred.is_empty() {
            return true;
        }
        let plan = &self.progress.plan;
        let waiting: Vec<&SyncTask> = tasks
            .iter()
            .map(|&index| &plan.tasks[index])
            .filter(|task| self.progress.deferred.contains(&task.key))
            .collect();
        if waiting.is_empty() {
            return true;
        }
        let cluster = self.context.cluster;
        let verdicts = dry_run_tasks(cluster, plan, waiting, self.context.settings).await;
        // Checked once: an object still waiting for its kind (a CRD of this very batch) is
        // written as before and fails on its own if the kind never comes.
        for (task, _) in &verdicts {
            self.progress.deferred.remove(&task.key);
        }
        let (records, failure) = rejected_records(&rejected(&verdicts), &Time(cluster.now()));
        self.progress.state.edit().resources.extend(records);
        let Some(failure) = failure else {
            return true;
        };
        self.progress.state.edit().failure = Some(failure);
        self.progress.sync_fail_started = Some(self.context.cluster.now());
        false
    }

    async fn apply(&mut self, batch: Batch, tasks: &[usize]) {
        if !self.check_deferred(tasks).await {
            return;
        }
        let settings = self.context.settings;
        self.progress.last_batch = Some(batch);
        let started = Time(self.context.cluster.now());
        let cluster = self.context.cluster;
        let app = self.context.app;
        let operation_id = self.progress.state.get().operation_id.as_str();
        // Futures built in a loop, not by a closure: a closure's borrowed argument would make
        // the controller's reconcile future not provably `Send`.
        let mut writes = Vec::with_capacity(tasks.len());
        for &index in tasks {
            let task = &self.progress.plan.tasks[index];
            writes.push(async move {
                let mut object = tracked(task, app);
                if task.hook.is_some() {
                    mark_hook(&mut object, operation_id);
                }
                let policy = WritePolicy::for_task(task, &settings.sync_options);
                let written = write_object(cluster, &task.key, &object, policy, settings).await;
                (task, written)
            });
        }
        let applied: Vec<_> = futures::stream::iter(writes)
            .buffered(settings.concurrency.max(1))
            .collect()
            .await;
        let finished = Time(self.context.cluster.now());
        let health = self.context.cluster.observing(&settings.health).await;
        for (task, written) in applied {
            let result = written.result.map(|applied| {
                let live = LiveObject::from_object(&applied.object, &health);
                let generation = applied
                    .object
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64);
                (applied.action, generation, live)
            });
            let outcome = WriteOutcome {
                result: match &result {
                    Ok((action, generation, live)) => Ok(Written {
                        action: *action,
                        generation: *generation,
                        live: live.as_ref(),
                    }),
                    Err(error) => Err(error.to_string()),
                },
                note: written.note,
            };
            let record = applied_record(task, outcome, &started, &finished);
            self.progress.state.edit().resources.push(record);
            if let Ok((_, _, Some(live))) = result {
                self.progress.seen.insert(task.key.clone(), started.0);
                self.progress.live.insert(task.key.clone(), live);
            }
        }
    }

    /// Records hooks this operation created before it stopped, from their live instances, as
    /// [`Self::apply`] would have recorded them.
    fn adopt_hooks(&mut self, tasks: &[usize]) {
        let now = Time(self.context.cluster.now());
        for &index in tasks {
            let task = &self.progress.plan.tasks[index];
            let record = adopted_record(task, self.progress.live.get(&task.key), &now);
            self.progress.state.edit().resources.push(record);
        }
    }

    /// Deletes previous hook instances; false when one could not be deleted.
    async fn delete_hooks(&mut self, keys: &[ObjectKey]) -> bool {
        let mut failed = false;
        for key in keys {
            match self
                .context
                .cluster
                .delete(key, Propagation::Background)
                .await
            {
                Ok(Deleted::Requested) => {
                    if let Some(live) = self.progress.live.get_mut(key) {
                        live.deleting = true;
                    }
                }
                Ok(Deleted::AlreadyGone) => {
                    self.progress.live.remove(key);
                }
                Err(error) => {
                    tracing::warn!(object = %key, %error, "cannot delete the previous hook instance");
                    failed = true;
                }
            }
        }
        !failed
    }

    async fn finish_hooks(&mut self, hooks: Vec<FinishedHook>) {
        for hook in hooks {
            let deleted = if hook.delete {
                Some(
                    self.context
                        .cluster
                        .delete(&hook.key, Propagation::Background)
                        .await,
                )
            } else {
                None
            };
            let now = Time(self.context.cluster.now());
            let Some(index) = self
                .progress
                .state
                .get()
                .resources
                .iter()
                .rposition(|r| r.sync_phase == hook.phase && r.key() == hook.key)
            else {
                continue;
            };
            if matches!(deleted, Some(Ok(_))) {
                self.progress.live.remove(&hook.key);
            }
            let deleted = deleted.map(|result| result.map(drop).map_err(|e| e.to_string()));
            let record = &mut self.progress.state.edit().resources[index];
            finish_hook_record(record, hook.succeeded, hook.message, deleted, now);
        }
    }

    async fn prune_objects(&mut self, objects: &[PruneTask]) {
        for object in objects {
            let started = Time(self.context.cluster.now());
            let result = self
                .context
                .cluster
                .delete(&object.key, self.context.settings.prune_propagation)
                .await;
            let outcome = match result {
                Ok(Deleted::Requested) => {
                    if let Some(live) = self.progress.live.get_mut(&object.key) {
                        live.deleting = true;
                    }
                    PruneOutcome::Requested
                }
                Ok(Deleted::AlreadyGone) => {
                    self.progress.live.remove(&object.key);
                    PruneOutcome::AlreadyGone
                }
                Err(error) => PruneOutcome::Failed(error.to_string()),
            };
            let record = pruned_record(object, outcome, started);
            self.progress.state.edit().resources.push(record);
        }
    }

    /// Re-reads the objects a wait is blocked on; workloads that are not Healthy get their
    /// pods' problems added to the health message.
    async fn observe(&mut self, waiting: &Waiting) {
        let keys: Vec<ObjectKey> = waiting.on.iter().map(|b| b.key.clone()).collect();
        let health = self
            .context
            .cluster
            .observing(&self.context.settings.health)
            .await;
        for (key, object) in self.read(&keys).await {
            let object = match object {
                Ok(object) => object,
                Err(error) => {
                    tracing::warn!(object = %key, %error, "cannot read; will retry");
                    continue;
                }
            };
            let Some(object) = object else {
                self.progress.live.remove(&key);
                continue;
            };
            let Some(mut live) = LiveObject::from_object(&object, &health) else {
                continue;
            };
            if is_workload(&key) && live.health.status != HealthStatus::Healthy {
                match self.context.cluster.pods_of(&object).await {
                    Ok(pods) => live.health = with_pod_problems(live.health, &pods),
                    Err(error) => tracing::debug!(object = %key, %error, "cannot list pods"),
                }
            }
            let resources = &self.progress.state.get().resources;
            let changed = resources.iter().rposition(|r| {
                r.key() == key
                    && r.hook_phase != Some(HookPhase::Succeeded)
                    && r.hook_phase != Some(HookPhase::Failed)
            });
            let changed = changed.filter(|&index| {
                let record = &resources[index];
                record.health != Some(live.health.status) || record.message != live.health.message
            });
            if let Some(index) = changed {
                let record = &mut self.progress.state.edit().resources[index];
                record.health = Some(live.health.status);
                record.message = live.health.message.clone();
            }
            self.progress.live.insert(key, live);
        }
    }

    /// Reads objects concurrently, noting when each was read.
    async fn read(
        &mut self,
        keys: &[ObjectKey],
    ) -> Vec<(ObjectKey, Result<Option<Value>, ClusterError>)> {
        let cluster = self.context.cluster;
        let at = cluster.now();
        let mut reads = Vec::with_capacity(keys.len());
        for key in keys {
            reads.push(async move { (key.clone(), cluster.get(key).await) });
        }
        let read: Vec<_> = futures::stream::iter(reads)
            .buffered(self.context.settings.concurrency.max(1))
            .collect()
            .await;
        for (key, result) in &read {
            if result.is_ok() {
                self.progress.seen.insert(key.clone(), at);
            }
        }
        read
    }

    /// Sleeps on the cluster's clock; a terminate request cuts it short.
    pub async fn pause(&self, duration: Duration, cancel: &mut watch::Receiver<bool>) {
        tokio::select! {
            () = self.context.cluster.sleep(duration) => {}
            Ok(()) = cancel.changed() => {}
        }
    }

    /// Waits before polling the objects `waiting` is blocked on (see
    /// [`ClusterApi::wait_for_change`]), at most until the current limit; a terminate request
    /// cuts it short. Objects never read are polled after one interval.
    pub async fn wait_for_change(&self, waiting: &Waiting, cancel: &mut watch::Receiver<bool>) {
        let interval = self.context.settings.poll_interval;
        let keys: Vec<ObjectKey> = waiting.on.iter().map(|b| b.key.clone()).collect();
        let since = keys
            .iter()
            .map(|key| self.progress.seen.get(key).copied())
            .collect::<Option<Vec<Timestamp>>>()
            .and_then(|seen| seen.into_iter().min());
        let Some(since) = since else {
            return self.pause(interval, cancel).await;
        };
        let (left, _) = self.time_left();
        tokio::select! {
            () = self.context.cluster.wait_for_change(&keys, since, interval, left) => {}
            Ok(()) = cancel.changed() => {}
        }
    }

    async fn terminate(&mut self) -> Result<AttemptEnd, ExecuteError> {
        let message = match &self.progress.last_batch {
            Some(batch) => format!("terminated by request during {batch}"),
            None => "terminated by request".to_owned(),
        };
        self.end(OperationPhase::Terminated, message).await
    }

    async fn end(
        &mut self,
        phase: OperationPhase,
        message: String,
    ) -> Result<AttemptEnd, ExecuteError> {
        let now = Time(self.context.cluster.now());
        let state = self.progress.state.edit();
        state.phase = phase;
        state.message = message;
        state.finished_at = Some(now);
        (self.context.events)(&SyncEvent::Finished(phase));
        self.save().await?;
        Ok(AttemptEnd {
            state: self.progress.state.get().clone(),
            timed_out: self.progress.timed_out,
        })
    }

    /// Stores the state when a step changed it since the last write.
    async fn save(&mut self) -> Result<(), ExecuteError> {
        if self.progress.state.take_edited() {
            self.context.store.save(self.progress.state.get()).await?;
        }
        Ok(())
    }
}

fn is_workload(key: &ObjectKey) -> bool {
    matches!(
        (key.group.as_str(), key.kind.as_str()),
        (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        ) | ("batch", "Job")
    )
}

/// The objects whose dry run waits for their wave.
fn deferred(verdicts: &[(&SyncTask, Verdict)]) -> HashSet<ObjectKey> {
    verdicts
        .iter()
        .filter(|(_, verdict)| matches!(verdict, Verdict::Deferred(_)))
        .map(|(task, _)| task.key.clone())
        .collect()
}

/// The tasks the server rejected in a dry run, with its message.
fn rejected<'v, 't>(verdicts: &'v [(&'t SyncTask, Verdict)]) -> Vec<(&'t SyncTask, &'v str)> {
    verdicts
        .iter()
        .filter_map(|(task, verdict)| match verdict {
            Verdict::Rejected(message) => Some((*task, message.as_str())),
            _ => None,
        })
        .collect()
}

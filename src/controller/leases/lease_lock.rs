//! The I/O of leader election: reads and writes one `coordination.k8s.io/v1` Lease every retry
//! period, each call bounded by [`LeaseTiming::call_timeout`], feeds what it saw to the pure
//! [`Elector`], and publishes the resulting deadline in a [`Leadership`]. Writes carry the
//! Lease's `resourceVersion`, so two replicas racing for it cannot both win. Errors never end
//! the loop: a standby keeps trying, a holder keeps acting only until its renew deadline. A
//! replica leading again after a loss says so in an Event on the Lease
//! ([`LeaseLock::report_regained`]).

use std::convert::Infallible;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use super::leadership::Leadership;
use super::readiness::Readiness;
use crate::cluster::api_server::api_error::api_message;
use crate::controller::runtime::events::EventPublisher;
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::controller::leader::{Elector, LeaseDecision, LeaseTiming, held_spec};

/// How a replica competes for the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The Lease's name (in the controller's namespace).
    pub name: String,
    /// This replica's identity, unique among replicas (e.g. the pod name).
    pub identity: String,
    pub timing: LeaseTiming,
}

/// Why a call on the Lease failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseCallError {
    #[error("no answer within {}", flotilla_generators::duration::format_duration(*.0))]
    Timeout(Duration),
    #[error("{}", api_message(.0))]
    Api(#[from] kube::Error),
}

/// The Lease could not be read or written (a lost race is not an error).
#[derive(Debug, thiserror::Error)]
#[error("Lease {namespace}/{name}: {source}")]
pub struct LeaseError {
    namespace: String,
    name: String,
    #[source]
    source: LeaseCallError,
}

/// Reads and writes one Lease for one replica.
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    elector: Mutex<Elector>,
    readiness: Readiness,
    leadership: Leadership,
    events: EventPublisher,
}

impl LeaseLock {
    /// A lock on the Lease `config.name` in `namespace`. `client` should not carry the
    /// [`Leadership::gate`]: a standby writes the Lease to become leader.
    #[must_use]
    pub fn new(client: Client, namespace: &str, config: LeaseConfig) -> Self {
        Self {
            api: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_string(),
            name: config.name,
            elector: Mutex::new(Elector::new(config.identity, config.timing)),
            readiness: Readiness::default(),
            leadership: Leadership::default(),
            events: EventPublisher::new(client),
        }
    }

    /// Publishes, while leading again, the Warning Event `LeadershipLost` on the Lease: this
    /// replica stopped acting at `stopped` and leads again now. Bounded by the call timeout; a
    /// failure is logged (the loss is counted in `flotilla_leadership_lost_total` anyway).
    pub async fn report_regained(&self, stopped: Timestamp) {
        let now = Timestamp::now();
        let away = now.duration_since(stopped).max(SignedDuration::ZERO);
        let note = format!(
            "{} stopped acting at {stopped}: its Lease was not renewed by the renew deadline \
             (the API server did not answer in time) or was taken by another replica; it leads \
             again since {now}, {}s later, and resumes every rollout from its status",
            self.identity(),
            away.as_secs()
        );
        let lease = ObjectReference {
            api_version: Some("coordination.k8s.io/v1".to_owned()),
            kind: Some("Lease".to_owned()),
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            ..ObjectReference::default()
        };
        let timeout = self.elector().timing().call_timeout();
        let published = self
            .events
            .publish(&lease, EventReason::LeadershipLost, note);
        if tokio::time::timeout(timeout, published).await.is_err() {
            tracing::warn!("publishing the LeadershipLost Event: no answer within {timeout:?}");
        }
    }

    /// Ready while the Lease's reads answer (see [`Readiness`]).
    #[must_use]
    pub fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// Until when this replica may act, kept current by [`Self::campaign`].
    #[must_use]
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// This replica's identity.
    #[must_use]
    pub fn identity(&self) -> String {
        self.elector().identity().to_string()
    }

    fn elector(&self) -> std::sync::MutexGuard<'_, Elector> {
        self.elector
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn error(&self, source: LeaseCallError) -> LeaseError {
        LeaseError {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Runs `call` with the call timeout.
    async fn call<T>(
        &self,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LeaseCallError> {
        let timeout = self.elector().timing().call_timeout();
        tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| LeaseCallError::Timeout(timeout))?
            .map_err(LeaseCallError::Api)
    }

    /// Competes for the Lease forever: one attempt every retry period, the deadline published
    /// after each.
    pub async fn campaign(&self) -> Infallible {
        loop {
            let retry = self.elector().timing().retry;
            let next = tokio::time::Instant::now() + retry;
            if let Err(error) = self.attempt().await {
                tracing::warn!("{error}");
            }
            self.leadership.set(self.elector().leading_until());
            tokio::time::sleep_until(next).await;
        }
    }

    /// Reads the Lease, and creates, takes over or renews it as the [`Elector`] decides.
    async fn attempt(&self) -> Result<(), LeaseError> {
        let started = Instant::now();
        let current = match self.call(self.api.get_opt(&self.name)).await {
            Ok(current) => current,
            Err(error) => {
                self.elector().failed();
                self.readiness
                    .mark_unanswered(Timestamp::now(), &error.to_string());
                return Err(self.error(error));
            }
        };
        self.readiness.mark_ready();
        let spec = current.as_ref().and_then(|lease| lease.spec.as_ref());
        let (decision, identity, timing) = {
            let mut elector = self.elector();
            let decision = elector.read(spec, Instant::now());
            (decision, elector.identity().to_string(), elector.timing())
        };
        if decision == LeaseDecision::Wait {
            return Ok(());
        }
        let spec = held_spec(spec, decision, &identity, timing, Timestamp::now());
        let written = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.call(self.api.create(&PostParams::default(), &lease))
                    .await
            }
            Some(mut lease) => {
                // The resourceVersion read above makes a concurrent write fail with 409.
                lease.spec = Some(spec);
                self.call(self.api.replace(&self.name, &PostParams::default(), &lease))
                    .await
            }
        };
        match written {
            Ok(_) => {
                self.elector().written(started);
                Ok(())
            }
            Err(LeaseCallError::Api(kube::Error::Api(status))) if status.code == 409 => {
                self.elector().lost_race();
                Ok(())
            }
            Err(error) => {
                self.elector().failed();
                Err(self.error(error))
            }
        }
    }

    /// Gives the Lease up if it names us, so another replica takes over at once. Call it only
    /// once this replica has stopped acting.
    ///
    /// # Errors
    /// The API server refused the read or write, or did not answer in time.
    pub async fn release(&self) -> Result<(), LeaseError> {
        self.leadership.set(None);
        let current = self
            .call(self.api.get_opt(&self.name))
            .await
            .map_err(|e| self.error(e))?;
        let Some(mut lease) = current else {
            return Ok(());
        };
        let identity = self.identity();
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        match self
            .call(self.api.replace(&self.name, &PostParams::default(), &lease))
            .await
        {
            Ok(_) => Ok(()),
            Err(LeaseCallError::Api(kube::Error::Api(status))) if status.code == 409 => Ok(()),
            Err(error) => Err(self.error(error)),
        }
    }
}

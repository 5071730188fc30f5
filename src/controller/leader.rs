//! Leader election through a `coordination.k8s.io/v1` Lease: acquire it when it is free or
//! expired, renew it while leading, release it on shutdown. Writes carry the Lease's
//! `resourceVersion`, so two replicas racing for it cannot both win. Whether to take the Lease is
//! decided by the pure [`decide`]; [`LeaseLock`] does the reads and writes.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use super::readiness::Readiness;
use crate::cluster::api_error::ApiError;

/// How a replica competes for the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The Lease's name (in the controller's namespace).
    pub name: String,
    /// This replica's identity, unique among replicas (e.g. the pod name).
    pub identity: String,
    /// How long the Lease stays valid without renewal.
    pub duration: Duration,
    /// How often the holder renews and a waiting replica retries.
    pub retry: Duration,
}

/// What to do with the Lease as it is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    /// There is no Lease: create it, held by us.
    Create,
    /// It is free or expired: take it over.
    Acquire,
    /// We hold it: renew it.
    Renew,
    /// Someone else holds it and it has not expired.
    Wait,
}

/// Decides what `identity` does with a Lease whose spec is `spec` at `now`.
#[must_use]
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> LeaseDecision {
    let Some(spec) = spec else {
        return LeaseDecision::Create;
    };
    match spec.holder_identity.as_deref() {
        Some(holder) if holder == identity => LeaseDecision::Renew,
        None | Some("") => LeaseDecision::Acquire,
        Some(_) => {
            let seconds = i64::from(spec.lease_duration_seconds.unwrap_or_default());
            let expired = spec.renew_time.as_ref().is_none_or(|renewed| {
                renewed
                    .0
                    .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds))
                    .is_ok_and(|until| until < now)
            });
            if expired {
                LeaseDecision::Acquire
            } else {
                LeaseDecision::Wait
            }
        }
    }
}

/// The spec after `decision` (not [`LeaseDecision::Wait`]) by `config.identity` at `now`.
#[must_use]
pub fn held_spec(
    old: Option<&LeaseSpec>,
    decision: LeaseDecision,
    config: &LeaseConfig,
    now: Timestamp,
) -> LeaseSpec {
    let old = old.cloned().unwrap_or_default();
    let taken = decision != LeaseDecision::Renew;
    LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(
            i32::try_from(config.duration.as_secs().max(1)).unwrap_or(i32::MAX),
        ),
        acquire_time: if taken {
            Some(MicroTime(now))
        } else {
            old.acquire_time.clone()
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: match decision {
            LeaseDecision::Acquire => Some(old.lease_transitions.unwrap_or_default() + 1),
            LeaseDecision::Create => Some(0),
            LeaseDecision::Renew | LeaseDecision::Wait => old.lease_transitions,
        },
        ..old
    }
}

/// The Lease could not be read or written (a lost race is not an error).
#[derive(Debug, thiserror::Error)]
#[error("Lease {namespace}/{name}: {error}")]
pub struct LeaseError {
    namespace: String,
    name: String,
    error: ApiError,
}

/// Reads and writes one Lease for one replica.
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    config: LeaseConfig,
    readiness: Readiness,
}

impl LeaseLock {
    /// A lock on the Lease `config.name` in `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, config: LeaseConfig) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            config,
            readiness: Readiness::default(),
        }
    }

    /// Ready once the Lease has been read (see [`Readiness`]).
    #[must_use]
    pub fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// The configuration this lock competes with.
    #[must_use]
    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    fn error(&self, error: kube::Error) -> LeaseError {
        LeaseError {
            namespace: self.namespace.clone(),
            name: self.config.name.clone(),
            error: error.into(),
        }
    }

    /// Acquires or renews the Lease if it can; `true` when we hold it afterwards.
    ///
    /// # Errors
    /// The API server refused a read or write for another reason than a lost race.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, LeaseError> {
        let current = self
            .api
            .get_opt(&self.config.name)
            .await
            .map_err(|e| self.error(e))?;
        self.readiness.mark_ready();
        let now = Timestamp::now();
        let spec = current.as_ref().and_then(|lease| lease.spec.as_ref());
        let decision = decide(spec, &self.config.identity, now);
        if decision == LeaseDecision::Wait {
            return Ok(false);
        }
        let spec = held_spec(spec, decision, &self.config, now);
        let written = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(mut lease) => {
                // The resourceVersion read above makes a concurrent write fail with 409.
                lease.spec = Some(spec);
                self.api
                    .replace(&self.config.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match written {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(self.error(error)),
        }
    }

    /// Gives the Lease up if we hold it, so another replica takes over at once.
    ///
    /// # Errors
    /// The API server refused the read or write.
    pub async fn release(&self) -> Result<(), LeaseError> {
        let Some(mut lease) = self
            .api
            .get_opt(&self.config.name)
            .await
            .map_err(|e| self.error(e))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(error) => Err(self.error(error)),
        }
    }

    /// Waits until the Lease is ours.
    ///
    /// # Errors
    /// See [`Self::try_acquire_or_renew`].
    pub async fn acquire(&self) -> Result<(), LeaseError> {
        while !self.try_acquire_or_renew().await? {
            tokio::time::sleep(self.config.retry).await;
        }
        Ok(())
    }

    /// Renews the Lease every `retry` and returns once it is lost: taken by another replica, or
    /// not renewed within its duration.
    pub async fn hold(&self) {
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.config.retry).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => renewed = tokio::time::Instant::now(),
                Ok(false) => return,
                Err(error) => {
                    tracing::warn!("renewing the Lease: {error}");
                    if renewed.elapsed() >= self.config.duration {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn held_by(holder: Option<&str>, renewed_at: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(10),
            renew_time: Some(MicroTime(at(renewed_at))),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn decisions() {
        let cases = [
            (None, LeaseDecision::Create),
            (Some(held_by(Some("me"), 100)), LeaseDecision::Renew),
            (Some(held_by(Some("other"), 100)), LeaseDecision::Wait),
            (Some(held_by(Some("other"), 80)), LeaseDecision::Acquire),
            (Some(held_by(None, 100)), LeaseDecision::Acquire),
            (Some(held_by(Some(""), 100)), LeaseDecision::Acquire),
        ];
        for (index, (spec, expected)) in cases.into_iter().enumerate() {
            assert_eq!(
                decide(spec.as_ref(), "me", at(105)),
                expected,
                "case {index}"
            );
        }
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_keeps_the_acquire_time() {
        let config = LeaseConfig {
            name: "l".into(),
            identity: "me".into(),
            duration: Duration::from_secs(15),
            retry: Duration::from_secs(5),
        };
        let mut old = held_by(Some("other"), 80);
        old.lease_transitions = Some(2);
        let taken = held_spec(Some(&old), LeaseDecision::Acquire, &config, at(105));
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(3));
        assert_eq!(taken.lease_duration_seconds, Some(15));
        assert_eq!(taken.acquire_time, Some(MicroTime(at(105))));
        let renewed = held_spec(Some(&taken), LeaseDecision::Renew, &config, at(110));
        assert_eq!(renewed.acquire_time, Some(MicroTime(at(105))));
        assert_eq!(renewed.renew_time, Some(MicroTime(at(110))));
        assert_eq!(renewed.lease_transitions, Some(3));
        let created = held_spec(None, LeaseDecision::Create, &config, at(1));
        assert_eq!(created.lease_transitions, Some(0));
    }
}

//! The I/O of sharded membership: every retry period, lists the member Leases of the control
//! namespace (label [`MEMBER_LABEL`]), feeds them to the pure
//! [`flotilla_core::controller::shard::membership::Membership`] (its `//!` explains the protocol), stops
//! the work on slots given away and waits for it to settle, deletes the Leases of expired members
//! (precondition: the `resourceVersion` seen unchanged), then renews its own Lease with its claim
//! (annotation [`SLOTS_ANNOTATION`]; replace with the listed `resourceVersion`, or create), and
//! publishes the slots it acts on in an [`Ownership`]. Every call is bounded by
//! [`LeaseTiming::call_timeout`]; errors never end the loop.

use std::convert::Infallible;
use std::sync::Mutex;
use std::time::Instant;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams, Preconditions};
use kube::{Api, Client, ResourceExt};

use super::lease_lock::LeaseCallError;
use super::ownership::Ownership;
use flotilla_core::controller::leader::{LeaseDecision, LeaseTiming, held_spec};
use flotilla_core::controller::shard::membership::{MemberLease, Membership};
use flotilla_core::controller::shard::slots::SlotSet;

/// The label of member Leases; its value is the leader Lease's name, so that controllers of
/// one namespace with different `--lease-name`s form different groups.
pub const MEMBER_LABEL: &str = "flotilla.dev/members-of";

/// The annotation of a member Lease holding the slots it claims.
pub const SLOTS_ANNOTATION: &str = "flotilla.dev/slots";

/// A member Lease could not be listed or written.
#[derive(Debug, thiserror::Error)]
#[error("member Leases {namespace}/{group}: {source}")]
pub struct MemberError {
    namespace: String,
    group: String,
    #[source]
    source: LeaseCallError,
}

/// One replica's member Lease and its view of the others.
pub struct MemberLeases {
    api: Api<Lease>,
    namespace: String,
    group: String,
    own_name: String,
    membership: Mutex<Membership>,
    ownership: Ownership,
}

impl MemberLeases {
    /// The member `identity` of the group `group` (the leader Lease's name) in `namespace`;
    /// its Lease is `<group>-<identity>`. `client` must not carry a write gate.
    #[must_use]
    pub fn new(
        client: Client,
        namespace: &str,
        group: &str,
        identity: &str,
        timing: LeaseTiming,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            group: group.to_owned(),
            own_name: format!("{group}-{identity}"),
            membership: Mutex::new(Membership::new(identity, timing)),
            ownership: Ownership::default(),
        }
    }

    /// The slots this replica acts on, kept current by [`Self::run`].
    #[must_use]
    pub fn ownership(&self) -> Ownership {
        self.ownership.clone()
    }

    fn membership(&self) -> std::sync::MutexGuard<'_, Membership> {
        self.membership
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn error(&self, source: LeaseCallError) -> MemberError {
        MemberError {
            namespace: self.namespace.clone(),
            group: self.group.clone(),
            source,
        }
    }

    fn timing(&self) -> LeaseTiming {
        self.membership().timing()
    }

    async fn call<T>(
        &self,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LeaseCallError> {
        let timeout = self.timing().call_timeout();
        tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| LeaseCallError::Timeout(timeout))?
            .map_err(LeaseCallError::Api)
    }

    fn publish(&self) {
        let (slots, until) = self.membership().acting(Instant::now());
        self.ownership.set(slots, until);
    }

    /// Takes part in the membership forever: a round every retry period (at once after a round
    /// that claimed new slots, to confirm them), the slots acted on published after each.
    pub async fn run(&self) -> Infallible {
        let mut again_at_once = false;
        let mut members = Vec::new();
        loop {
            let next = tokio::time::Instant::now() + self.timing().retry;
            let pending = match self.round(&mut members).await {
                Ok(pending) => pending,
                Err(error) => {
                    tracing::warn!("{error}");
                    false
                }
            };
            self.publish();
            again_at_once = pending && !again_at_once;
            if !again_at_once {
                tokio::time::sleep_until(next).await;
            }
        }
    }

    /// One round; whether it claimed slots it does not act on yet.
    async fn round(&self, members: &mut Vec<String>) -> Result<bool, MemberError> {
        let started = Instant::now();
        let params = ListParams::default().labels(&format!("{MEMBER_LABEL}={}", self.group));
        let listed = match self.call(self.api.list(&params)).await {
            Ok(listed) => listed.items,
            Err(error) => {
                self.membership().failed();
                return Err(self.error(error));
            }
        };
        let leases: Vec<MemberLease> = listed.iter().filter_map(member_lease).collect();
        let round = self.membership().read(&leases, Instant::now());
        if *members != round.members {
            tracing::info!(members = ?round.members, "members");
            members.clone_from(&round.members);
        }
        if !round.stop.is_empty() {
            self.stop(round.stop).await;
        }
        for (name, version) in &round.expired {
            tracing::info!(lease = %name, "member expired: deleting its Lease");
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: Some(version.clone()),
                    uid: None,
                }),
                ..DeleteParams::default()
            };
            match self.call(self.api.delete(name, &params)).await {
                // Renewed, or deleted by another member meanwhile.
                Err(LeaseCallError::Api(kube::Error::Api(status)))
                    if status.code == 409 || status.code == 404 =>
                {
                    tracing::debug!(lease = %name, "not deleted: {}", status.message);
                }
                Err(error) => {
                    tracing::warn!(lease = %name, "deleting an expired member's Lease: {error}")
                }
                Ok(_) => {}
            }
        }
        let own = listed
            .into_iter()
            .find(|lease| lease.name_any() == self.own_name);
        let written = self.write(own, round.claims).await;
        match written {
            Ok(()) => {
                self.membership().written(started);
                Ok(round.pending)
            }
            Err(LeaseCallError::Api(kube::Error::Api(status)))
                if status.code == 409 || status.code == 404 =>
            {
                tracing::warn!(lease = %self.own_name, "member Lease changed or deleted by another: acting on nothing");
                self.membership().lost();
                Ok(false)
            }
            Err(error) => {
                self.membership().failed();
                Err(self.error(error))
            }
        }
    }

    /// Stops acting on `slots`: publishes the narrower set at once (the write gate refuses
    /// their Applications from now on), waits until the controllers started with the wider set
    /// are gone (at most the renew deadline), then a retry period for requests they had sent.
    async fn stop(&self, slots: SlotSet) {
        tracing::info!(slots = slots.len(), "giving slots away");
        let (acting, until) = self.membership().acting(Instant::now());
        let generation = self.ownership.set(acting, until);
        let timing = self.timing();
        if tokio::time::timeout(timing.renew_deadline, self.ownership.quiesced(generation))
            .await
            .is_err()
        {
            tracing::warn!("the Application controllers did not stop in time");
        }
        tokio::time::sleep(timing.retry).await;
    }

    /// Renews (or creates) this replica's Lease with `claims`.
    async fn write(&self, own: Option<Lease>, claims: SlotSet) -> Result<(), LeaseCallError> {
        let (identity, timing) = {
            let membership = self.membership();
            (membership.identity().to_owned(), membership.timing())
        };
        let decision = if own.is_some() {
            LeaseDecision::Renew
        } else {
            LeaseDecision::Create
        };
        let old = own.as_ref().and_then(|lease| lease.spec.as_ref());
        let spec = held_spec(old, decision, &identity, timing, Timestamp::now());
        let mut lease = own.unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.own_name.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        });
        lease
            .labels_mut()
            .insert(MEMBER_LABEL.to_owned(), self.group.clone());
        lease
            .annotations_mut()
            .insert(SLOTS_ANNOTATION.to_owned(), claims.encode());
        lease.spec = Some(spec);
        let params = PostParams::default();
        if lease.metadata.resource_version.is_some() {
            self.call(self.api.replace(&self.own_name, &params, &lease))
                .await
                .map(drop)
        } else {
            self.call(self.api.create(&params, &lease)).await.map(drop)
        }
    }

    /// Leaves the membership: acts on nothing, and deletes this replica's Lease so the others
    /// take its slots at once. Call it only once its work has stopped.
    ///
    /// # Errors
    /// The API server refused the delete or did not answer in time.
    pub async fn release(&self) -> Result<(), MemberError> {
        self.membership().lost();
        self.ownership.set(SlotSet::empty(), None);
        match self
            .call(self.api.delete(&self.own_name, &DeleteParams::default()))
            .await
        {
            Ok(_) => Ok(()),
            Err(LeaseCallError::Api(kube::Error::Api(status))) if status.code == 404 => Ok(()),
            Err(error) => Err(self.error(error)),
        }
    }
}

/// A listed Lease as a member's (None: not a member Lease, no holder).
fn member_lease(lease: &Lease) -> Option<MemberLease> {
    let spec = lease.spec.clone().unwrap_or_default();
    let identity = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
    let claims = lease
        .annotations()
        .get(SLOTS_ANNOTATION)
        .map_or(Ok(SlotSet::empty()), |text| SlotSet::decode(text))
        // An unreadable claim blocks every slot rather than none.
        .unwrap_or_else(|_| SlotSet::all());
    Some(MemberLease {
        identity,
        name: lease.name_any(),
        version: lease.resource_version().unwrap_or_default(),
        spec,
        claims,
    })
}

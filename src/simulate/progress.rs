//! How the status of a simulated object moves over virtual time, per kind, the way Kubernetes'
//! controllers move it: a Deployment makes its replicas available one after another over its
//! duration, a StatefulSet brings up one pod per duration, a Job runs and then completes or fails,
//! a CRD becomes Established, claims bind, load balancers and Ingresses get an address, and other
//! kinds need no status. The status written is exactly what `crate::health` reads, so the same
//! health rules judge simulated and real objects. Pure: object, behaviour and elapsed time in,
//! status out.

use std::time::Duration;

use serde_json::{Value, json};

use flotilla_core::simulated_pod::{Behavior, Outcome};

/// The status of `object` (its `apiVersion`, `kind`, `spec` and `metadata.generation` are read)
/// `elapsed` after it was last changed; `None` for kinds whose status nothing reads.
#[must_use]
pub fn status_at(object: &Value, behavior: Behavior, elapsed: Duration) -> Option<Value> {
    let progress = Progress::of(object, behavior, elapsed);
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    match kind_of(object) {
        ("apps", "Deployment") => Some(progress.deployment(generation)),
        ("apps", "StatefulSet") => Some(progress.stateful_set(generation)),
        ("apps", "DaemonSet") => Some(progress.daemon_set(generation)),
        ("apps", "ReplicaSet") => Some(progress.replica_set(generation)),
        ("batch", "Job") => Some(progress.job()),
        ("", "Pod") => Some(progress.pod(object)),
        ("", "PersistentVolumeClaim") => Some(progress.claim()),
        ("", "Namespace") => Some(json!({"phase": "Active"})),
        ("", "Service") if is_load_balancer(object) => Some(progress.load_balancer()),
        ("networking.k8s.io" | "extensions", "Ingress") => Some(progress.load_balancer()),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Some(progress.crd()),
        (group, _) if is_custom(group) && progress.said() => Some(progress.custom(generation)),
        _ => None,
    }
}

/// The first moment after `elapsed` (time since `object` last changed) at which [`status_at`]
/// may answer differently; `None` once its status has stopped moving. Lets a waiter skip the
/// time in which nothing can be observed to change.
#[must_use]
pub fn next_change(object: &Value, behavior: Behavior, elapsed: Duration) -> Option<Duration> {
    let progress = Progress::of(object, behavior, elapsed);
    match kind_of(object) {
        ("apps", "Deployment" | "ReplicaSet") => progress.next_evenly(progress.replicas),
        ("apps", "DaemonSet") => progress.next_evenly(1),
        ("apps", "StatefulSet") => progress.next_in_turn(),
        ("batch", "Job")
        | ("", "Pod" | "PersistentVolumeClaim")
        | ("networking.k8s.io" | "extensions", "Ingress")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => progress.next_done(),
        ("", "Service") if is_load_balancer(object) => progress.next_done(),
        (group, _) if is_custom(group) && progress.said() => progress.next_done(),
        _ => None,
    }
}

/// Whether `group` is an operator's (a custom resource), not Kubernetes' own.
fn is_custom(group: &str) -> bool {
    group.contains('.') && !group.ends_with(".k8s.io")
}

/// The API group and kind of `object`.
fn kind_of(object: &Value) -> (&str, &str) {
    let group = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .map_or("", crate::manifest::group_of);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    (group, kind)
}

fn is_load_balancer(service: &Value) -> bool {
    service.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer")
}

/// Whether an object of this kind can be made to fail (its pods crash, its Job fails, or its
/// operator reports a failure).
#[must_use]
pub fn can_fail(group: &str, kind: &str) -> bool {
    is_custom(group)
        || matches!(
            (group, kind),
            (
                "apps",
                "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
            ) | ("batch", "Job")
                | ("", "Pod")
        )
}

struct Progress {
    behavior: Behavior,
    elapsed: Duration,
    replicas: i64,
}

impl Progress {
    fn of(object: &Value, behavior: Behavior, elapsed: Duration) -> Self {
        Self {
            behavior,
            elapsed,
            replicas: object
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(0),
        }
    }

    /// Whether the object was given a duration or an outcome (kinds without a status of their
    /// own have one only then).
    fn said(&self) -> bool {
        !self.behavior.ready_after.is_zero() || !self.healthy()
    }

    fn done(&self) -> bool {
        self.elapsed >= self.behavior.ready_after
    }

    fn healthy(&self) -> bool {
        self.behavior.outcome == Outcome::Healthy
    }

    /// Of `count` pods started together and ready evenly over the duration, how many are ready.
    fn ready_evenly(&self, count: i64) -> i64 {
        if !self.healthy() {
            return 0;
        }
        let total = self.behavior.ready_after.as_millis();
        if total == 0 || self.done() {
            return count;
        }
        let share = self.elapsed.as_millis() * u128::try_from(count).unwrap_or(0) / total;
        i64::try_from(share).unwrap_or(count).min(count)
    }

    /// Of `count` pods started one after another, each taking the duration, how many are ready.
    fn ready_in_turn(&self) -> i64 {
        if !self.healthy() {
            return 0;
        }
        let each = self.behavior.ready_after.as_millis();
        if each == 0 {
            return self.replicas;
        }
        i64::try_from(self.elapsed.as_millis() / each)
            .unwrap_or(self.replicas)
            .min(self.replicas)
    }

    /// When [`Self::done`] turns true, if it has not yet.
    fn next_done(&self) -> Option<Duration> {
        (!self.done()).then_some(self.behavior.ready_after)
    }

    /// When [`Self::ready_evenly`] of `count` next grows, or (failing) the duration runs out.
    fn next_evenly(&self, count: i64) -> Option<Duration> {
        let total = self.behavior.ready_after.as_millis();
        if !self.healthy() || total == 0 || count <= 0 {
            return self.next_done();
        }
        let done = self.next_done()?;
        let ready = u128::try_from(self.ready_evenly(count)).unwrap_or(0);
        let count = u128::try_from(count).unwrap_or(1);
        let next = ((ready + 1) * total).div_ceil(count);
        Some(done.min(Duration::from_millis(
            u64::try_from(next).unwrap_or(u64::MAX),
        )))
    }

    /// When [`Self::ready_in_turn`] next grows.
    fn next_in_turn(&self) -> Option<Duration> {
        let each = self.behavior.ready_after;
        let ready = self.ready_in_turn();
        if !self.healthy() || each.is_zero() || ready >= self.replicas {
            return None;
        }
        each.checked_mul(u32::try_from(ready + 1).ok()?)
    }

    fn deployment(&self, generation: i64) -> Value {
        let available = self.ready_evenly(self.replicas);
        let mut status = json!({
            "observedGeneration": generation,
            "replicas": self.replicas,
            "updatedReplicas": self.replicas,
            "readyReplicas": available,
            "availableReplicas": available,
        });
        if !self.healthy() && self.done() {
            status["conditions"] = json!([{
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet has timed out progressing.",
            }]);
        }
        status
    }

    fn stateful_set(&self, generation: i64) -> Value {
        let ready = self.ready_in_turn();
        let revision = format!("rev-{generation}");
        json!({
            "observedGeneration": generation,
            "replicas": self.replicas,
            "readyReplicas": ready,
            "currentReplicas": ready,
            "updatedReplicas": ready,
            "currentRevision": revision,
            "updateRevision": revision,
        })
    }

    fn daemon_set(&self, generation: i64) -> Value {
        let available = self.ready_evenly(1);
        json!({
            "observedGeneration": generation,
            "desiredNumberScheduled": 1,
            "currentNumberScheduled": 1,
            "numberMisscheduled": 0,
            "numberReady": available,
            "updatedNumberScheduled": 1,
            "numberAvailable": available,
        })
    }

    fn replica_set(&self, generation: i64) -> Value {
        let available = self.ready_evenly(self.replicas);
        json!({
            "observedGeneration": generation,
            "replicas": self.replicas,
            "readyReplicas": available,
            "availableReplicas": available,
        })
    }

    fn job(&self) -> Value {
        if !self.done() || self.behavior.outcome == Outcome::ImagePullError {
            return json!({"active": 1});
        }
        if self.healthy() {
            json!({"succeeded": 1, "conditions": [{
                "type": "Complete", "status": "True",
            }]})
        } else {
            json!({"failed": 1, "conditions": [{
                "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
            }]})
        }
    }

    fn pod(&self, object: &Value) -> Value {
        let runs_to_completion = object
            .pointer("/spec/restartPolicy")
            .and_then(Value::as_str)
            .is_some_and(|policy| policy != "Always");
        if !self.done() {
            return json!({"phase": "Pending"});
        }
        match (self.behavior.outcome, runs_to_completion) {
            (Outcome::Healthy, true) => json!({"phase": "Succeeded"}),
            (Outcome::Healthy, false) => json!({"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True"}]}),
            (Outcome::Fail, true) => {
                json!({"phase": "Failed", "message": "container exited with code 1"})
            }
            (outcome, _) => json!({"phase": "Running", "containerStatuses": [
                waiting_container(outcome)]}),
        }
    }

    fn claim(&self) -> Value {
        json!({"phase": if self.done() { "Bound" } else { "Pending" }})
    }

    fn load_balancer(&self) -> Value {
        if self.done() {
            json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}})
        } else {
            json!({"loadBalancer": {}})
        }
    }

    /// A custom resource's status by the conventions operators follow: a `Ready` condition,
    /// False while it comes up, then True — or False with a failure reason.
    fn custom(&self, generation: i64) -> Value {
        let ready = match (self.done(), self.healthy()) {
            (false, _) => json!({"type": "Ready", "status": "False", "reason": "Progressing",
                                 "message": "Waiting for the operator"}),
            (true, true) => json!({"type": "Ready", "status": "True", "reason": "Ready"}),
            (true, false) => json!({"type": "Ready", "status": "False", "reason": "Failed",
                                    "message": "The operator failed to bring it up"}),
        };
        json!({"observedGeneration": generation, "conditions": [ready]})
    }

    fn crd(&self) -> Value {
        let established = if self.done() { "True" } else { "False" };
        json!({"conditions": [
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": established},
        ]})
    }
}

/// The container status of a pod that does not start: crash-looping, or its image not pulling.
#[must_use]
pub fn waiting_container(outcome: Outcome) -> Value {
    let reason = if outcome == Outcome::ImagePullError {
        "ImagePullBackOff"
    } else {
        "CrashLoopBackOff"
    };
    json!({"name": "main", "image": "simulated", "ready": false, "restartCount": 1,
           "imageID": "", "state": {"waiting": {"reason": reason}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{HealthStatus, assess};

    fn behavior(outcome: Outcome, seconds: u64) -> Behavior {
        Behavior {
            outcome,
            ready_after: Duration::from_secs(seconds),
        }
    }

    /// The health the real rules give `object` with the simulated status at `elapsed`.
    fn health(object: &Value, behavior: Behavior, elapsed: u64) -> (HealthStatus, String) {
        let mut object = object.clone();
        if let Some(status) = status_at(&object, behavior, Duration::from_secs(elapsed)) {
            object["status"] = status;
        }
        let health = assess(&object);
        (health.status, health.message)
    }

    #[test]
    fn statuses_move_through_the_health_rules() {
        use HealthStatus::{Degraded, Healthy, Progressing};
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 4}});
        let stateful = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "s"}, "spec": {"replicas": 3}});
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}});
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "w.example.com"}});
        let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "i"}});
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let database = json!({"apiVersion": "db.example.com/v1", "kind": "Database",
            "metadata": {"name": "pg", "generation": 1}});
        let ok = |s| behavior(Outcome::Healthy, s);
        let fail = |s| behavior(Outcome::Fail, s);
        let cases: Vec<(&Value, Behavior, u64, HealthStatus, &str)> = vec![
            (
                &deployment,
                ok(20),
                0,
                Progressing,
                "0/4 available, waiting for updated replicas",
            ),
            (
                &deployment,
                ok(20),
                10,
                Progressing,
                "2/4 available, waiting for updated replicas",
            ),
            (&deployment, ok(20), 20, Healthy, "4/4 available"),
            (
                &deployment,
                fail(20),
                5,
                Progressing,
                "0/4 available, waiting for updated replicas",
            ),
            (
                &deployment,
                fail(20),
                20,
                Degraded,
                "0/4 available, exceeded its progress deadline",
            ),
            (
                &stateful,
                ok(10),
                15,
                Progressing,
                "1/3 ready, waiting for 2 pods to be ready",
            ),
            (&stateful, ok(10), 30, Healthy, "3/3 ready"),
            (&job, ok(30), 29, Progressing, "job running, 1 active pods"),
            (&job, ok(30), 30, Healthy, ""),
            (
                &job,
                fail(30),
                30,
                Degraded,
                "Job has reached the specified backoff limit",
            ),
            (
                &crd,
                ok(2),
                1,
                Progressing,
                "waiting for the CRD to be Established",
            ),
            (&crd, ok(2), 2, Healthy, ""),
            (
                &ingress,
                ok(5),
                0,
                Progressing,
                "waiting for an ingress address",
            ),
            (&ingress, ok(5), 5, Healthy, ""),
            (&config, ok(0), 0, Healthy, ""),
            (&database, ok(0), 0, Healthy, ""),
            (
                &database,
                ok(30),
                29,
                Progressing,
                "Waiting for the operator",
            ),
            (&database, ok(30), 30, Healthy, "Ready"),
            (
                &database,
                fail(30),
                30,
                Degraded,
                "The operator failed to bring it up",
            ),
        ];
        for (object, behavior, elapsed, status, message) in cases {
            assert_eq!(
                health(object, behavior, elapsed),
                (status, message.to_owned()),
                "{} {behavior:?} after {elapsed}s",
                object["kind"]
            );
        }
    }

    #[test]
    fn statuses_hold_until_their_next_change() {
        let object = |api: &str, kind: &str, spec: Value| json!({"apiVersion": api, "kind": kind, "metadata": {"name": "x"}, "spec": spec});
        let objects = [
            object("apps/v1", "Deployment", json!({"replicas": 3})),
            object("apps/v1", "ReplicaSet", json!({"replicas": 7})),
            object("apps/v1", "DaemonSet", json!({})),
            object("apps/v1", "StatefulSet", json!({"replicas": 3})),
            object("batch/v1", "Job", json!({})),
            object("v1", "Pod", json!({"restartPolicy": "Never"})),
            object("v1", "Service", json!({"type": "LoadBalancer"})),
            object("v1", "ConfigMap", json!({})),
            object("db.example.com/v1", "Database", json!({})),
        ];
        let behaviors = [
            behavior(Outcome::Healthy, 0),
            Behavior {
                outcome: Outcome::Healthy,
                ready_after: Duration::from_millis(2_500),
            },
            Behavior {
                outcome: Outcome::Fail,
                ready_after: Duration::from_millis(1_300),
            },
        ];
        for object in &objects {
            for behavior in behaviors {
                let status = |ms| status_at(object, behavior, Duration::from_millis(ms));
                let mut segment = (0, status(0), next_change(object, behavior, Duration::ZERO));
                for ms in 1..9_000 {
                    let at = Duration::from_millis(ms);
                    if segment.2.is_none_or(|next| at < next) {
                        assert_eq!(
                            status(ms),
                            segment.1,
                            "{} {behavior:?}: changed at {ms} ms, before the next change \
                             announced at {} ms ({:?})",
                            object["kind"],
                            segment.0,
                            segment.2
                        );
                    } else {
                        segment = (ms, status(ms), next_change(object, behavior, at));
                    }
                }
            }
        }
        let deployment = &objects[0];
        let ok = behavior(Outcome::Healthy, 3);
        let after = |ms| next_change(deployment, ok, Duration::from_millis(ms));
        assert_eq!(
            after(0),
            Some(Duration::from_secs(1)),
            "one replica per second"
        );
        assert_eq!(after(2_500), Some(Duration::from_secs(3)));
        assert_eq!(after(3_000), None, "rolled out");
    }
}

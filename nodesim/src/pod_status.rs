//! The status a kubelet would report for a pod: which [`Stage`] it is in after some time, the
//! full `PodStatus` for that stage, and which stage an existing status already reports.

use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, PodCondition, PodIP, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use flotilla_core::simulated_pod::{Behavior, Outcome};

/// The lifecycle stages the simulator reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Bound and waiting for its delay: Pending, containers `ContainerCreating`.
    Starting,
    /// Running and Ready.
    Running,
    /// Running but not ready: the container exited 1 and waits in `CrashLoopBackOff`.
    CrashLooping,
    /// Pending, containers waiting in `ImagePullBackOff`.
    ImagePullBackOff,
    /// Run-to-completion pod whose containers exited 0.
    Succeeded,
    /// Run-to-completion pod (`restartPolicy: Never`) whose containers exited 1.
    Failed,
}

/// A pod's `restartPolicy`; the API server defaults it to `Always`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Long-running: containers are restarted whatever their exit code.
    Always,
    /// Run to completion, restarting failed containers in place.
    OnFailure,
    /// Run to completion once.
    Never,
}

impl RestartPolicy {
    /// Reads `spec.restartPolicy` (absent means `Always`, as the API server defaults it).
    #[must_use]
    pub fn of(spec: &PodSpec) -> Self {
        match spec.restart_policy.as_deref() {
            Some("Never") => Self::Never,
            Some("OnFailure") => Self::OnFailure,
            _ => Self::Always,
        }
    }
}

/// The stage of a pod `elapsed` after it was bound.
#[must_use]
pub fn stage(behavior: Behavior, restart: RestartPolicy, elapsed: Duration) -> Stage {
    if elapsed < behavior.ready_after {
        return Stage::Starting;
    }
    match (behavior.outcome, restart) {
        (Outcome::ImagePullError, _) => Stage::ImagePullBackOff,
        (Outcome::Healthy, RestartPolicy::Always) => Stage::Running,
        (Outcome::Healthy, RestartPolicy::OnFailure | RestartPolicy::Never) => Stage::Succeeded,
        (Outcome::Fail, RestartPolicy::Never) => Stage::Failed,
        (Outcome::Fail, RestartPolicy::Always | RestartPolicy::OnFailure) => Stage::CrashLooping,
    }
}

/// The stage an existing status reports, if it is one the simulator writes.
#[must_use]
pub fn observed_stage(status: &PodStatus) -> Option<Stage> {
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let waiting = |reason: &str| {
        containers.iter().any(|c| {
            c.state
                .as_ref()
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| w.reason.as_deref())
                == Some(reason)
        })
    };
    match status.phase.as_deref() {
        Some("Succeeded") => Some(Stage::Succeeded),
        Some("Failed") => Some(Stage::Failed),
        _ if waiting("ImagePullBackOff") => Some(Stage::ImagePullBackOff),
        _ if waiting("CrashLoopBackOff") => Some(Stage::CrashLooping),
        Some("Running") if !containers.is_empty() && containers.iter().all(|c| c.ready) => {
            Some(Stage::Running)
        }
        Some("Pending") if status.start_time.is_some() && waiting("ContainerCreating") => {
            Some(Stage::Starting)
        }
        _ => None,
    }
}

/// Where and when the pod runs, for the status fields that are not derived from the stage.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The node's address.
    pub host_ip: String,
    /// The pod's (simulated) address.
    pub pod_ip: String,
    /// When the pod was bound (its `status.startTime`).
    pub start_time: Timestamp,
    /// The current time, for transition and container start times.
    pub now: Timestamp,
}

/// The complete status a kubelet would report for `spec` in `stage`.
#[must_use]
pub fn pod_status(stage: Stage, spec: &PodSpec, placement: &Placement) -> PodStatus {
    let now = Time(placement.now);
    let (phase, ready_reason) = match stage {
        Stage::Starting | Stage::ImagePullBackOff => ("Pending", Some("ContainersNotReady")),
        Stage::Running => ("Running", None),
        Stage::CrashLooping => ("Running", Some("ContainersNotReady")),
        Stage::Succeeded => ("Succeeded", Some("PodCompleted")),
        Stage::Failed => ("Failed", Some("PodFailed")),
    };
    let init_containers = spec.init_containers.as_deref().unwrap_or_default();
    let initialized = stage != Stage::Starting || init_containers.is_empty();
    let condition = |type_: &str, ok: bool, reason: Option<&str>| PodCondition {
        type_: type_.to_owned(),
        status: if ok { "True" } else { "False" }.to_owned(),
        reason: if ok { None } else { reason.map(str::to_owned) },
        last_transition_time: Some(now.clone()),
        ..PodCondition::default()
    };
    PodStatus {
        phase: Some(phase.to_owned()),
        conditions: Some(vec![
            condition("Initialized", initialized, Some("ContainersNotInitialized")),
            condition("Ready", ready_reason.is_none(), ready_reason),
            condition("ContainersReady", ready_reason.is_none(), ready_reason),
            condition("PodScheduled", true, None),
        ]),
        host_ip: Some(placement.host_ip.clone()),
        pod_ip: Some(placement.pod_ip.clone()),
        pod_ips: Some(vec![PodIP {
            ip: placement.pod_ip.clone(),
        }]),
        start_time: Some(Time(placement.start_time)),
        init_container_statuses: (!init_containers.is_empty()).then(|| {
            let init_stage = if initialized {
                Stage::Succeeded
            } else {
                Stage::Starting
            };
            init_containers
                .iter()
                .map(|c| container_status(c, init_stage, &now))
                .collect()
        }),
        container_statuses: Some(
            spec.containers
                .iter()
                .map(|c| container_status(c, stage, &now))
                .collect(),
        ),
        ..PodStatus::default()
    }
}

fn container_status(container: &Container, stage: Stage, now: &Time) -> ContainerStatus {
    let image = container.image.clone().unwrap_or_default();
    let waiting = |reason: &str, message: Option<String>| ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_owned()),
            message,
        }),
        ..ContainerState::default()
    };
    let terminated = |exit_code: i32| ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code,
            reason: Some(if exit_code == 0 { "Completed" } else { "Error" }.to_owned()),
            started_at: Some(now.clone()),
            finished_at: Some(now.clone()),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    };
    let (state, last_state, restart_count) = match stage {
        Stage::Starting => (waiting("ContainerCreating", None), None, 0),
        Stage::ImagePullBackOff => (
            waiting(
                "ImagePullBackOff",
                Some(format!("Back-off pulling image \"{image}\"")),
            ),
            None,
            0,
        ),
        Stage::Running => (
            ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(now.clone()),
                }),
                ..ContainerState::default()
            },
            None,
            0,
        ),
        Stage::CrashLooping => (
            waiting(
                "CrashLoopBackOff",
                Some(format!(
                    "back-off 10s restarting failed container={}",
                    container.name
                )),
            ),
            Some(terminated(1)),
            1,
        ),
        Stage::Succeeded => (terminated(0), None, 0),
        Stage::Failed => (terminated(1), None, 0),
    };
    let started = stage == Stage::Running;
    ContainerStatus {
        name: container.name.clone(),
        image: image.clone(),
        image_id: if stage == Stage::ImagePullBackOff || stage == Stage::Starting {
            String::new()
        } else {
            format!("sim://{image}")
        },
        container_id: state
            .waiting
            .is_none()
            .then(|| format!("sim://{}", container.name)),
        ready: started,
        started: Some(started),
        restart_count,
        state: Some(state),
        last_state,
        ..ContainerStatus::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn behavior(outcome: Outcome) -> Behavior {
        Behavior {
            outcome,
            ready_after: SECOND,
        }
    }

    #[test]
    fn stage_follows_outcome_restart_policy_and_delay() {
        use Outcome::*;
        use RestartPolicy::*;
        let cases = [
            (Healthy, Always, Duration::ZERO, Stage::Starting),
            (Fail, Never, Duration::from_millis(999), Stage::Starting),
            (Healthy, Always, SECOND, Stage::Running),
            (Healthy, Never, SECOND, Stage::Succeeded),
            (Healthy, OnFailure, SECOND, Stage::Succeeded),
            (Fail, Always, SECOND, Stage::CrashLooping),
            (Fail, OnFailure, SECOND, Stage::CrashLooping),
            (Fail, Never, SECOND, Stage::Failed),
            (ImagePullError, Always, SECOND, Stage::ImagePullBackOff),
            (ImagePullError, Never, SECOND, Stage::ImagePullBackOff),
        ];
        for (outcome, restart, elapsed, expected) in cases {
            assert_eq!(
                stage(behavior(outcome), restart, elapsed),
                expected,
                "{outcome:?} {restart:?} {elapsed:?}"
            );
        }
    }

    fn spec(init: bool) -> PodSpec {
        let container = |name: &str| Container {
            name: name.to_owned(),
            image: Some(format!("{name}:1")),
            ..Container::default()
        };
        PodSpec {
            containers: vec![container("app"), container("sidecar")],
            init_containers: init.then(|| vec![container("setup")]),
            ..PodSpec::default()
        }
    }

    fn placement() -> Placement {
        Placement {
            host_ip: "127.0.0.1".to_owned(),
            pod_ip: "10.244.0.7".to_owned(),
            start_time: Timestamp::from_second(1_000).unwrap(),
            now: Timestamp::from_second(1_002).unwrap(),
        }
    }

    fn condition(status: &PodStatus, type_: &str) -> (String, Option<String>) {
        let c = status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap();
        (c.status.clone(), c.reason.clone())
    }

    #[test]
    fn every_stage_round_trips_through_observed_stage() {
        use Stage::*;
        for stage in [
            Starting,
            Running,
            CrashLooping,
            ImagePullBackOff,
            Succeeded,
            Failed,
        ] {
            for init in [false, true] {
                let status = pod_status(stage, &spec(init), &placement());
                assert_eq!(
                    observed_stage(&status),
                    Some(stage),
                    "{stage:?} init={init}"
                );
            }
        }
    }

    #[test]
    fn running_pod_is_ready_with_ready_containers() {
        let status = pod_status(Stage::Running, &spec(true), &placement());
        assert_eq!(status.phase.as_deref(), Some("Running"));
        for type_ in ["Initialized", "Ready", "ContainersReady", "PodScheduled"] {
            assert_eq!(
                condition(&status, type_),
                ("True".to_owned(), None),
                "{type_}"
            );
        }
        let containers = status.container_statuses.unwrap();
        assert_eq!(
            containers
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["app", "sidecar"]
        );
        assert!(
            containers
                .iter()
                .all(|c| c.ready && c.state.as_ref().unwrap().running.is_some())
        );
        let init = status.init_container_statuses.unwrap();
        let exit = init[0]
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code;
        assert_eq!(exit, 0);
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.7"));
        assert_eq!(
            status.start_time,
            Some(Time(Timestamp::from_second(1_000).unwrap()))
        );
    }

    #[test]
    fn failures_report_exit_codes_and_reasons() {
        let failed = pod_status(Stage::Failed, &spec(false), &placement());
        assert_eq!(failed.phase.as_deref(), Some("Failed"));
        assert_eq!(
            condition(&failed, "Ready"),
            ("False".to_owned(), Some("PodFailed".to_owned()))
        );
        let terminated = failed.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (1, Some("Error"))
        );

        let crashing = pod_status(Stage::CrashLooping, &spec(false), &placement());
        assert_eq!(crashing.phase.as_deref(), Some("Running"));
        assert_eq!(
            condition(&crashing, "Ready"),
            ("False".to_owned(), Some("ContainersNotReady".to_owned()))
        );
        let app = &crashing.container_statuses.unwrap()[0];
        assert_eq!((app.ready, app.restart_count), (false, 1));
        assert_eq!(
            app.last_state
                .as_ref()
                .unwrap()
                .terminated
                .as_ref()
                .unwrap()
                .exit_code,
            1
        );

        let pulling = pod_status(Stage::ImagePullBackOff, &spec(false), &placement());
        assert_eq!(pulling.phase.as_deref(), Some("Pending"));
        let waiting = pulling.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .waiting
            .unwrap();
        assert_eq!(waiting.reason.as_deref(), Some("ImagePullBackOff"));
        assert_eq!(
            waiting.message.as_deref(),
            Some("Back-off pulling image \"app:1\"")
        );
    }

    #[test]
    fn starting_pod_with_init_containers_is_not_initialized() {
        let status = pod_status(Stage::Starting, &spec(true), &placement());
        assert_eq!(condition(&status, "Initialized").0, "False");
        assert_eq!(condition(&status, "PodScheduled").0, "True");
        assert_eq!(observed_stage(&PodStatus::default()), None);
    }
}

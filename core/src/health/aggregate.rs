//! An Application's health from its objects': the worst of them in Argo CD's order (Healthy,
//! Suspended, Progressing, Missing, Degraded, Unknown), with a message naming the object that
//! decided it (`Service shop/web: Progressing: waiting for a load balancer address`). The one
//! rule of the controller's compare and of the simulator.

use crate::manifest::ObjectKey;

use super::{Health, HealthStatus};

/// How bad a health status is, as Argo CD orders them: Healthy, Suspended, Progressing,
/// Missing, Degraded, Unknown.
#[must_use]
pub fn severity(status: HealthStatus) -> u8 {
    match status {
        HealthStatus::Healthy => 0,
        HealthStatus::Suspended => 1,
        HealthStatus::Progressing => 2,
        HealthStatus::Missing => 3,
        HealthStatus::Degraded => 4,
        HealthStatus::Unknown => 5,
    }
}

/// The worst of `objects`' health (the first of equally bad ones), its message naming the
/// object; Healthy without a message when none is worse (or there is none).
#[must_use]
pub fn worst<'a>(objects: impl IntoIterator<Item = (&'a ObjectKey, &'a Health)>) -> Health {
    let mut worst: Option<(&ObjectKey, &Health)> = None;
    for (key, health) in objects {
        if worst.is_none_or(|(_, w)| severity(health.status) > severity(w.status)) {
            worst = Some((key, health));
        }
    }
    match worst {
        Some((key, health)) if health.status != HealthStatus::Healthy => {
            Health::new(health.status, format!("{key}: {health}"))
        }
        _ => Health::new(HealthStatus::Healthy, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: String::new(),
            kind: kind.to_owned(),
            namespace: Some("shop".to_owned()),
            name: name.to_owned(),
        }
    }

    #[test]
    fn the_worst_object_decides_and_is_named() {
        let (web, db, cache) = (key("Service", "web"), key("Pod", "db"), key("Pod", "cache"));
        let healthy = Health::new(HealthStatus::Healthy, "");
        let waiting = Health::new(
            HealthStatus::Progressing,
            "waiting for a load balancer address",
        );
        let crashing = Health::new(HealthStatus::Degraded, "CrashLoopBackOff");
        assert_eq!(
            worst([(&db, &healthy), (&web, &waiting)]),
            Health::new(
                HealthStatus::Progressing,
                "Service shop/web: Progressing: waiting for a load balancer address"
            )
        );
        assert_eq!(
            worst([(&web, &waiting), (&db, &crashing), (&cache, &crashing)]).message,
            "Pod shop/db: Degraded: CrashLoopBackOff"
        );
        assert_eq!(worst([(&db, &healthy)]), healthy);
        assert_eq!(worst([]), healthy);
    }

    #[test]
    fn argo_cd_order() {
        use HealthStatus::*;
        let mut all = [Unknown, Degraded, Missing, Progressing, Suspended, Healthy];
        all.sort_by_key(|s| severity(*s));
        assert_eq!(
            all,
            [Healthy, Suspended, Progressing, Missing, Degraded, Unknown]
        );
    }
}

//! Prune candidates: live objects this Application manages (see [`super::tracking`]) that are no
//! longer desired. Never hooks, never objects with `Prune=false`; `Prune=confirm` objects wait
//! for a confirmation; `PruneLast`. Each option from the object's annotation, else the
//! Application's options. Deleted in reverse wave order (see [`super::step`]).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::manifest::ObjectKey;

use super::annotations::SyncAnnotations;
use super::live::LiveObject;
use super::options::{SyncOptionKey, SyncOptions};
use super::plan::SyncPlan;
use super::tracking::is_managed_by;

/// An object to delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneTask {
    /// Identity.
    pub key: ObjectKey,
    /// Its wave (from its live annotations); higher waves are deleted first.
    pub wave: i32,
    /// Deleted only after every Sync wave is Healthy.
    pub last: bool,
    /// `Prune=confirm`: deleted only once the pruning is confirmed.
    pub confirm: bool,
}

/// An extraneous object that is kept, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptObject {
    /// Identity.
    pub key: ObjectKey,
    /// Why it is not pruned.
    pub reason: String,
}

/// What pruning would do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PrunePlan {
    /// Objects to delete.
    pub tasks: Vec<PruneTask>,
    /// Extraneous objects that stay.
    pub kept: Vec<KeptObject>,
}

/// Finds the managed, extraneous objects among `live` (which may hold any objects) and decides
/// which to delete; `application` holds the Application-wide sync options.
#[must_use]
pub fn plan_prune(
    plan: &SyncPlan,
    live: &[LiveObject],
    app: &str,
    application: &SyncOptions,
) -> PrunePlan {
    let desired: BTreeSet<&ObjectKey> = plan
        .tasks
        .iter()
        .chain(&plan.on_delete)
        .map(|t| &t.key)
        .collect();
    let skipped: BTreeSet<&ObjectKey> = plan.skipped.iter().collect();
    let mut prune = PrunePlan::default();
    for object in live {
        if desired.contains(&object.key)
            || skipped.contains(&object.key)
            || !is_managed_by(app, &object.key, &object.annotations)
        {
            continue;
        }
        let keep = |reason: &str| KeptObject {
            key: object.key.clone(),
            reason: reason.to_owned(),
        };
        match SyncAnnotations::parse(&object.annotations) {
            (Some(annotations), _) if annotations.is_hook() => {}
            (Some(annotations), _) => {
                let options = annotations.options.over(application);
                if options.get(SyncOptionKey::Prune) {
                    prune.tasks.push(PruneTask {
                        key: object.key.clone(),
                        wave: annotations.wave,
                        last: options.get(SyncOptionKey::PruneLast),
                        confirm: options.confirms(SyncOptionKey::Prune),
                    });
                } else {
                    prune.kept.push(keep("Prune=false"));
                }
            }
            (None, problems) => prune.kept.push(keep(&format!(
                "unreadable annotations: {}",
                problems.join("; ")
            ))),
        }
    }
    prune
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::health::Health;
    use crate::sync::tracking::{TRACKING_ANNOTATION, tracking_id};

    fn live(name: &str, app: &str, extra: &[(&str, &str)]) -> LiveObject {
        let key = ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: name.into(),
        };
        let mut annotations: BTreeMap<String, String> = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        annotations.insert(TRACKING_ANNOTATION.into(), tracking_id(app, &key));
        LiveObject {
            key,
            generation: None,
            observed_generation: None,
            deleting: false,
            health: Health::missing(),
            annotations,
        }
    }

    #[test]
    fn candidates() {
        let plan = SyncPlan::build(Vec::new(), "op").unwrap();
        let objects = [
            live("plain", "app", &[("argocd.argoproj.io/sync-wave", "2")]),
            live("foreign", "other", &[]),
            live(
                "protected",
                "app",
                &[("argocd.argoproj.io/sync-options", "Prune=false")],
            ),
            live("hook", "app", &[("argocd.argoproj.io/hook", "PreSync")]),
            live(
                "last",
                "app",
                &[("argocd.argoproj.io/sync-options", "PruneLast=true")],
            ),
            live(
                "critical",
                "app",
                &[("argocd.argoproj.io/sync-options", "Prune=confirm")],
            ),
            live("weird", "app", &[("argocd.argoproj.io/sync-wave", "x")]),
            live("helm-kept", "app", &[("helm.sh/resource-policy", "keep")]),
        ];
        let prune = plan_prune(&plan, &objects, "app", &SyncOptions::default());
        let tasks: Vec<_> = prune
            .tasks
            .iter()
            .map(|t| (t.key.name.as_str(), t.wave, t.last, t.confirm))
            .collect();
        assert_eq!(
            tasks,
            [
                ("plain", 2, false, false),
                ("last", 0, true, false),
                ("critical", 0, false, true)
            ]
        );
        let kept: Vec<_> = prune
            .kept
            .iter()
            .map(|k| (k.key.name.as_str(), k.reason.as_str()))
            .collect();
        assert_eq!(
            kept,
            [
                ("protected", "Prune=false"),
                (
                    "weird",
                    "unreadable annotations: annotation argocd.argoproj.io/sync-wave: \"x\" is not an integer"
                ),
                ("helm-kept", "Prune=false"),
            ]
        );
        let all_last: SyncOptions = "PruneLast=true".parse().unwrap();
        let all_last = plan_prune(&plan, &objects, "app", &all_last);
        assert!(all_last.tasks.iter().all(|t| t.last));
        let application: SyncOptions = "Prune=confirm".parse().unwrap();
        let confirmed = plan_prune(&plan, &objects, "app", &application);
        let confirm: Vec<_> = confirmed
            .tasks
            .iter()
            .map(|t| (t.key.name.as_str(), t.confirm))
            .collect();
        assert_eq!(
            confirm,
            [("plain", true), ("last", true), ("critical", true)],
            "the Application's Prune=confirm, under objects that do not say otherwise"
        );
        let application: SyncOptions = "Prune=false".parse().unwrap();
        let kept = plan_prune(&plan, &objects, "app", &application);
        let pruned: Vec<_> = kept.tasks.iter().map(|t| t.key.name.as_str()).collect();
        assert_eq!(
            pruned,
            ["critical"],
            "only an object's own Prune=confirm wins over the Application's Prune=false"
        );
    }
}

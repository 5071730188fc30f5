//! A rollback of an Application to an entry of its `status.history`, decided (`flotilla app
//! rollback`, as `argocd app rollback`): which entry (the one named, else the one before the
//! newest), whether it may run (not with automated sync on, unless forced: then the same write
//! suspends it with `automated.enabled: false`; not while a sync is requested; not when the
//! Application's sources changed since the entry other than in `targetRevision`), and the
//! operation that syncs the entry's revisions — the same `spec.operation` as `flotilla app
//! sync`, run by the controller. Pure.

use crate::api::application::{
    Application, ApplicationSource, InitiatedBy, Operation, RevisionHistory, SyncOperation,
};

/// Why a rollback is refused; nothing is written.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RollbackError {
    /// The history is empty.
    #[error("Application {app} has no history: nothing to roll back to")]
    NoHistory { app: String },
    /// No id given and only one entry.
    #[error("Application {app} has one history entry (id {id}): no previous entry to roll back to")]
    NoPrevious { app: String, id: i64 },
    /// The id named is not in the history.
    #[error("Application {app} has no history entry {id} (ids: {ids})")]
    NoSuchId { app: String, id: i64, ids: String },
    /// Automated sync would sync the source's revision again at once.
    #[error(
        "Application {app} has automated sync enabled (spec.syncPolicy.automated): a rollback \
         would be undone by its next sync; pass --force to suspend it (automated.enabled: false) \
         and roll back"
    )]
    Automated { app: String },
    /// `spec.operation` already asks for a sync.
    #[error("Application {app} already has a sync requested by {by}; wait for it or terminate it")]
    Pending { app: String, by: String },
    /// The entry synced other sources than the Application has now.
    #[error(
        "history entry {id} of Application {app} synced other sources than spec.source(s) \
         has now ({what}); flotilla rolls back to a revision of the current sources only"
    )]
    SourcesChanged { app: String, id: i64, what: String },
}

/// What `flotilla app rollback` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollback<'a> {
    /// The history entry rolled back to.
    pub entry: &'a RevisionHistory,
    /// The sync that rolls back, for `spec.operation`.
    pub operation: Operation,
    /// Whether the same write sets `spec.syncPolicy.automated.enabled: false`.
    pub suspend_automated: bool,
}

/// The rollback of `app` to history entry `id` (else the previous one), requested by
/// `initiated_by`; `force` lets it suspend automated sync, `prune` prunes what the entry does
/// not have.
///
/// # Errors
/// See [`RollbackError`].
pub fn rollback(
    app: &Application,
    id: Option<i64>,
    (force, prune): (bool, bool),
    initiated_by: InitiatedBy,
) -> Result<Rollback<'_>, RollbackError> {
    let name = app.metadata.name.clone().unwrap_or_default();
    let history = app.history();
    let entry = match (id, history) {
        (_, []) => return Err(RollbackError::NoHistory { app: name }),
        (None, [only]) => {
            return Err(RollbackError::NoPrevious {
                app: name,
                id: only.id,
            });
        }
        (None, [.., previous, _]) => previous,
        (Some(id), _) => history.iter().find(|h| h.id == id).ok_or_else(|| {
            let ids: Vec<String> = history.iter().map(|h| h.id.to_string()).collect();
            RollbackError::NoSuchId {
                app: name.clone(),
                id,
                ids: ids.join(", "),
            }
        })?,
    };
    if let Some(pending) = &app.spec.operation {
        return Err(RollbackError::Pending {
            app: name,
            by: pending.initiated_by.username.clone(),
        });
    }
    let automated = app
        .spec
        .sync_policy
        .as_ref()
        .and_then(|p| p.automated_enabled())
        .is_some();
    if automated && !force {
        return Err(RollbackError::Automated { app: name });
    }
    if let Some(what) = sources_changed(app, entry) {
        return Err(RollbackError::SourcesChanged {
            app: name,
            id: entry.id,
            what,
        });
    }
    let mut sync = SyncOperation {
        prune,
        ..SyncOperation::default()
    };
    sync.set_revision(&entry.revision);
    Ok(Rollback {
        entry,
        operation: Operation { sync, initiated_by },
        suspend_automated: automated,
    })
}

/// How the sources `entry` recorded differ from the Application's now, other than in
/// `targetRevision` (the entry's revision replaces it); None when they do not (or the entry
/// recorded none).
fn sources_changed(app: &Application, entry: &RevisionHistory) -> Option<String> {
    if entry.source.is_none() && entry.sources.is_empty() {
        return None;
    }
    let (source, sources) = app.spec.deployed_sources();
    let unpinned =
        |sources: &mut dyn Iterator<Item = &ApplicationSource>| -> Vec<ApplicationSource> {
            sources
                .map(|s| ApplicationSource {
                    target_revision: String::new(),
                    ..s.clone()
                })
                .collect()
        };
    let then = unpinned(&mut entry.source.iter().chain(&entry.sources));
    let now = unpinned(&mut source.iter().chain(&sources));
    if then == now {
        return None;
    }
    let urls = |sources: &[ApplicationSource]| -> String {
        let urls: Vec<String> = sources
            .iter()
            .map(|s| format!("{} {}{}", s.repo_url, s.path, s.chart))
            .collect();
        urls.join(", ")
    };
    Some(format!("then: {}; now: {}", urls(&then), urls(&now)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn app(automated: Option<serde_json::Value>, revisions: &[&str]) -> Application {
        let source = json!({"repoURL": "https://git.example.com/shop.git", "path": "web", "targetRevision": "main"});
        let history: Vec<serde_json::Value> = revisions
            .iter()
            .enumerate()
            .map(|(id, revision)| {
                json!({"id": id, "revision": revision, "deployedAt": "2026-12-03T10:00:00Z", "source": source})
            })
            .collect();
        let mut value = json!({
            "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application", "metadata": {"name": "web"},
            "spec": {"project": "default", "source": source, "destination": {}},
            "status": {"history": history}
        });
        if let Some(automated) = automated {
            value["spec"]["syncPolicy"] = json!({"automated": automated});
        }
        serde_json::from_value(value).unwrap()
    }

    fn alice() -> InitiatedBy {
        InitiatedBy {
            username: "alice".into(),
            automated: false,
        }
    }

    #[test]
    fn the_previous_entry_by_default_or_the_one_named() {
        let app = app(None, &["aaa", "bbb", "ccc"]);
        let back = rollback(&app, None, (false, true), alice()).unwrap();
        assert_eq!((back.entry.id, back.entry.revision.as_str()), (1, "bbb"));
        assert_eq!(back.operation.sync.revision, "bbb");
        assert!(back.operation.sync.prune);
        assert_eq!(back.operation.initiated_by, alice());
        assert!(!back.suspend_automated);
        let named = rollback(&app, Some(0), (false, false), alice()).unwrap();
        assert_eq!(named.operation.sync.revision, "aaa");
        assert_eq!(
            rollback(&app, Some(7), (false, false), alice()).unwrap_err(),
            RollbackError::NoSuchId {
                app: "web".into(),
                id: 7,
                ids: "0, 1, 2".into()
            }
        );
    }

    #[test]
    fn refused_with_automated_sync_unless_forced_which_suspends_it() {
        let automated = app(Some(json!({"prune": true})), &["aaa", "bbb"]);
        let refused = rollback(&automated, None, (false, false), alice()).unwrap_err();
        assert_eq!(refused, RollbackError::Automated { app: "web".into() });
        assert!(refused.to_string().contains("--force"), "{refused}");
        let forced = rollback(&automated, None, (true, false), alice()).unwrap();
        assert!(forced.suspend_automated);
        assert_eq!(forced.operation.sync.revision, "aaa");
        let suspended = app(
            Some(json!({"prune": true, "enabled": false})),
            &["aaa", "bbb"],
        );
        let back = rollback(&suspended, None, (false, false), alice()).unwrap();
        assert!(!back.suspend_automated);
    }

    #[test]
    fn refused_without_a_previous_entry_while_requested_or_on_other_sources() {
        assert!(matches!(
            rollback(&app(None, &[]), None, (false, false), alice()),
            Err(RollbackError::NoHistory { .. })
        ));
        assert!(matches!(
            rollback(&app(None, &["aaa"]), None, (false, false), alice()),
            Err(RollbackError::NoPrevious { id: 0, .. })
        ));
        let mut requested = app(None, &["aaa", "bbb"]);
        requested.spec.operation = Some(Operation {
            initiated_by: alice(),
            ..Operation::default()
        });
        assert!(matches!(
            rollback(&requested, None, (false, false), alice()),
            Err(RollbackError::Pending { .. })
        ));
        let mut moved = app(None, &["aaa", "bbb"]);
        moved.spec.source.target_revision = "release-2".into();
        assert!(
            rollback(&moved, None, (false, false), alice()).is_ok(),
            "targetRevision only"
        );
        moved.spec.source.path = "web-v2".into();
        let changed = rollback(&moved, None, (false, false), alice()).unwrap_err();
        assert!(
            changed
                .to_string()
                .contains("then: https://git.example.com/shop.git web; now: https://git.example.com/shop.git web-v2"),
            "{changed}"
        );
    }
}

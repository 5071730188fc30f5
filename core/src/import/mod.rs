//! `flotilla import`'s decisions, pure: which Argo CD (`argoproj.io/v1alpha1`) AppProjects,
//! ApplicationSets and Applications become which `flotilla.dev/v1alpha1` objects
//! ([`convert`]), what writing each does beside the object of that name already there
//! ([`Action`]), which objects are written at all ([`ImportPlan::writes`]: nothing while one is
//! refused, unless the rest is asked for), and which live objects Argo CD tracks for each
//! Application ([`tracking`]).

pub mod convert;
pub mod tracking;

use serde::Serialize;

pub use convert::{ConvertError, convert};
pub use tracking::{TrackedObject, Tracking};

/// The kinds `flotilla import` reads, in the order it writes them: projects first, so that an
/// Application's project exists when the controller first sees the Application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum ImportKind {
    AppProject,
    ApplicationSet,
    Application,
}

impl ImportKind {
    /// Every kind, in writing order.
    pub const ALL: [Self; 3] = [Self::AppProject, Self::ApplicationSet, Self::Application];

    /// The kind's name (the same in both API groups).
    #[must_use]
    pub fn kind(self) -> &'static str {
        match self {
            Self::AppProject => "AppProject",
            Self::ApplicationSet => "ApplicationSet",
            Self::Application => "Application",
        }
    }

    /// The resource's plural (the same in both API groups).
    #[must_use]
    pub fn plural(self) -> &'static str {
        match self {
            Self::AppProject => "appprojects",
            Self::ApplicationSet => "applicationsets",
            Self::Application => "applications",
        }
    }

    /// The kind named `kind`, if it is one of the three.
    #[must_use]
    pub fn of(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.kind() == kind)
    }
}

/// What importing one object does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum Action {
    /// No `flotilla.dev` object of that name: it is created.
    Create,
    /// The `flotilla.dev` object of that name differs in these parts (`spec`,
    /// `metadata.labels`, `metadata.annotations`, `metadata.finalizers`): they are replaced.
    Update { changed: Vec<String> },
    /// The `flotilla.dev` object of that name is already the same.
    Unchanged,
    /// Not importable as it is (a field Flotilla does not implement, a finalizer it does not
    /// run): never written.
    Refused { reason: String },
    /// An Application an imported ApplicationSet generated (its owner reference): not written,
    /// Flotilla's ApplicationSet controller writes it from the ApplicationSet.
    Generated {
        #[serde(rename = "applicationSet")]
        application_set: String,
    },
}

impl Action {
    /// The word the report's table uses.
    #[must_use]
    pub fn word(&self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update { .. } => "update",
            Self::Unchanged => "unchanged",
            Self::Refused { .. } => "refused",
            Self::Generated { .. } => "generated",
        }
    }

    /// What the report says beside the word.
    #[must_use]
    pub fn detail(&self) -> String {
        match self {
            Self::Create | Self::Unchanged => String::new(),
            Self::Update { changed } => format!("changes {}", changed.join(", ")),
            Self::Refused { reason } => reason.clone(),
            Self::Generated { application_set } => {
                format!("written by Flotilla's controller from ApplicationSet {application_set}")
            }
        }
    }

    /// What writing `converted` does beside `existing` (the `flotilla.dev` object of that
    /// name, if any): only the [`convert::COPIED`] parts are compared.
    #[must_use]
    pub fn decide(converted: &serde_json::Value, existing: Option<&serde_json::Value>) -> Self {
        let Some(existing) = existing else {
            return Self::Create;
        };
        let changed: Vec<String> = convert::COPIED
            .iter()
            .filter(|pointer| {
                let part = |object: &serde_json::Value| {
                    object.pointer(pointer).filter(|v| !is_empty(v)).cloned()
                };
                part(converted) != part(existing)
            })
            .map(|pointer| pointer.trim_start_matches('/').replace('/', "."))
            .collect();
        if changed.is_empty() {
            Self::Unchanged
        } else {
            Self::Update { changed }
        }
    }
}

/// Whether a copied part is empty: an absent and an empty map or list are the same.
fn is_empty(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Null => true,
        serde_json::Value::Object(map) => map.is_empty(),
        serde_json::Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// One object read and what importing it does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedObject {
    pub kind: ImportKind,
    pub name: String,
    /// Where the `flotilla.dev` object goes.
    pub namespace: String,
    /// Where the Argo CD object was read (a file, or `namespace NS` of the cluster).
    pub source: String,
    #[serde(flatten)]
    pub action: Action,
    /// The `flotilla.dev` object to write (none when refused).
    #[serde(skip)]
    pub object: Option<serde_json::Value>,
}

/// What `flotilla import` found and would do (or did).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportPlan {
    pub objects: Vec<PlannedObject>,
    /// The live objects Argo CD tracks for the imported Applications.
    pub tracking: Vec<TrackedObject>,
    /// Whether the writes were made (false for a dry run).
    pub written: bool,
}

/// Nothing is written: objects were refused and the rest was not asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "nothing was written: {} refused ({}); fix or remove them, or pass --skip-refused to write the others",
    count(.refused.len()), .refused.join(", ")
)]
pub struct Refusals {
    /// `Kind name` of each refused object.
    pub refused: Vec<String>,
}

/// `1 object` or `N objects`.
fn count(n: usize) -> String {
    if n == 1 {
        "1 object".to_owned()
    } else {
        format!("{n} objects")
    }
}

impl ImportPlan {
    /// The planned objects in writing order (projects, ApplicationSets, Applications; by name).
    #[must_use]
    pub fn new(mut objects: Vec<PlannedObject>, tracking: Vec<TrackedObject>) -> Self {
        objects.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        Self {
            objects,
            tracking,
            written: false,
        }
    }

    /// The refused objects, as `Kind name`.
    #[must_use]
    pub fn refused(&self) -> Vec<String> {
        self.objects
            .iter()
            .filter(|o| matches!(o.action, Action::Refused { .. }))
            .map(|o| format!("{} {}", o.kind.kind(), o.name))
            .collect()
    }

    /// The objects to write, in order: every created or updated one — none while an object is
    /// refused, unless `skip_refused` (then the others are written all the same).
    ///
    /// # Errors
    /// [`Refusals`] when an object is refused and `skip_refused` is false.
    pub fn writes(&self, skip_refused: bool) -> Result<Vec<&PlannedObject>, Refusals> {
        let refused = self.refused();
        if !refused.is_empty() && !skip_refused {
            return Err(Refusals { refused });
        }
        Ok(self
            .objects
            .iter()
            .filter(|o| matches!(o.action, Action::Create | Action::Update { .. }))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn planned(kind: ImportKind, name: &str, action: Action) -> PlannedObject {
        PlannedObject {
            kind,
            name: name.into(),
            namespace: "argocd".into(),
            source: "namespace argocd".into(),
            action,
            object: None,
        }
    }

    #[test]
    fn an_object_is_created_updated_or_unchanged_by_its_copied_parts() {
        let converted =
            json!({"metadata": {"name": "web", "labels": {"team": "a"}}, "spec": {"project": "p"}});
        assert_eq!(Action::decide(&converted, None), Action::Create);
        let same = json!({"metadata": {"name": "web", "uid": "1", "labels": {"team": "a"}, "annotations": {}},
                          "spec": {"project": "p"}, "status": {"x": 1}});
        assert_eq!(Action::decide(&converted, Some(&same)), Action::Unchanged);
        let other =
            json!({"metadata": {"name": "web", "finalizers": ["f"]}, "spec": {"project": "q"}});
        assert_eq!(
            Action::decide(&converted, Some(&other)),
            Action::Update {
                changed: vec![
                    "metadata.labels".into(),
                    "metadata.finalizers".into(),
                    "spec".into()
                ]
            }
        );
    }

    #[test]
    fn nothing_is_written_while_an_object_is_refused_unless_the_rest_is_asked_for() {
        let plan = ImportPlan::new(
            vec![
                planned(ImportKind::Application, "web", Action::Create),
                planned(
                    ImportKind::Application,
                    "bad",
                    Action::Refused {
                        reason: "unsupported field spec.info".into(),
                    },
                ),
                planned(ImportKind::AppProject, "team", Action::Unchanged),
                planned(
                    ImportKind::ApplicationSet,
                    "fleet",
                    Action::Update {
                        changed: vec!["spec".into()],
                    },
                ),
            ],
            Vec::new(),
        );
        let order: Vec<&str> = plan.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(order, ["team", "fleet", "bad", "web"], "projects first");
        assert_eq!(
            plan.writes(false).unwrap_err().to_string(),
            "nothing was written: 1 object refused (Application bad); fix or remove them, or pass \
             --skip-refused to write the others"
        );
        let written: Vec<&str> = plan
            .writes(true)
            .unwrap()
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(written, ["fleet", "web"]);
    }
}

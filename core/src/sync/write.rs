//! How one desired object is written, decided from its sync options (over the Application's):
//! skipped when `ApplyOutOfSyncOnly=true` and the live object already matches, replaced (PUT, or
//! created) with `Replace=true`, server-side applied otherwise; and, with `Force=true`, deleted
//! and created again when the server rejects the write because an immutable field changed.
//! `ServerSideApply=true` is the default here and changes nothing. `Validate=false` sends the write
//! with the server's field validation off (`fieldValidation=Ignore`, as `kubectl apply
//! --validate=false`); server-side apply still refuses a field its schema does not declare
//! (`field not declared in schema`, whatever `fieldValidation` says), so such an object, and only
//! such an object, is then written as `Replace=true` writes it, which drops the field.

use serde_json::Value;

use super::diff::first_difference;
use super::options::{SyncOptionKey, SyncOptions};
use super::task::SyncTask;

/// The write to send for an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// The live object already matches: record it Unchanged, send nothing.
    Skip,
    /// Server-side apply.
    Apply,
    /// Replace the whole object (create it when absent).
    Replace,
}

/// How the server checks the fields of a write (its `fieldValidation` query parameter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// An unknown or duplicate field refuses the write (the default).
    #[default]
    Strict,
    /// Unknown and duplicate fields are dropped (`Validate=false`).
    Ignore,
}

impl FieldValidation {
    /// The parameter's value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Strict => "Strict",
            Self::Ignore => "Ignore",
        }
    }
}

/// The write options of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WritePolicy {
    /// `Replace=true`.
    pub replace: bool,
    /// `Force=true`.
    pub force: bool,
    /// `ApplyOutOfSyncOnly=true`.
    pub out_of_sync_only: bool,
    /// `Validate=false` turns the server's field validation off.
    pub validation: FieldValidation,
}

impl WritePolicy {
    /// The policy of an object's effective options.
    #[must_use]
    pub fn of(options: &SyncOptions) -> Self {
        Self {
            replace: options.get(SyncOptionKey::Replace),
            force: options.get(SyncOptionKey::Force),
            out_of_sync_only: options.get(SyncOptionKey::ApplyOutOfSyncOnly),
            validation: if options.get(SyncOptionKey::Validate) {
                FieldValidation::Strict
            } else {
                FieldValidation::Ignore
            },
        }
    }

    /// The policy of a task: its options over the Application's. Hooks always run, so
    /// `ApplyOutOfSyncOnly` never skips one.
    #[must_use]
    pub fn for_task(task: &SyncTask, application: &SyncOptions) -> Self {
        let policy = Self::of(&task.options.over(application));
        Self {
            out_of_sync_only: policy.out_of_sync_only && task.hook.is_none(),
            ..policy
        }
    }

    /// Whether the object is replaced (updated whole, or created) rather than server-side
    /// applied: `Replace=true`.
    #[must_use]
    pub fn replaces(&self) -> bool {
        self.replace
    }

    /// Whether the live object must be read before deciding.
    #[must_use]
    pub fn needs_live(&self) -> bool {
        self.out_of_sync_only
    }

    /// The write for `desired` (normalised, as it would be sent), given the live object when
    /// [`Self::needs_live`] (None when it does not exist). `manager` is our field manager.
    #[must_use]
    pub fn write(&self, desired: &Value, live: Option<&Value>, manager: &str) -> Write {
        let in_sync = self.out_of_sync_only
            && live.is_some_and(|live| first_difference(desired, live, manager).is_none());
        match (in_sync, self.replaces()) {
            (true, _) => Write::Skip,
            (false, true) => Write::Replace,
            (false, false) => Write::Apply,
        }
    }

    /// Whether a write the server rejected is followed by deleting the object and writing it
    /// again (Argo CD's `--force`): only with `Force=true`, and only when the rejection was
    /// about an immutable field.
    #[must_use]
    pub fn recreate_after_rejection(&self, immutable_field: bool) -> bool {
        self.force && immutable_field
    }

    /// Whether a server-side apply the server refused is sent again as a replace: only with
    /// `Validate=false`, and only when the refusal was about a field the schema does not declare
    /// (see the module's documentation).
    #[must_use]
    pub fn replace_after_rejection(&self, undeclared_field: bool) -> bool {
        self.validation == FieldValidation::Ignore && undeclared_field && !self.replace
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(options: &str) -> WritePolicy {
        WritePolicy::of(&options.parse().unwrap())
    }

    #[test]
    fn write_follows_the_options_and_the_live_object() {
        let desired = json!({"kind": "ConfigMap", "data": {"a": "1"}});
        let same = json!({"kind": "ConfigMap", "data": {"a": "1"}, "metadata": {"uid": "u"}});
        let drifted = json!({"kind": "ConfigMap", "data": {"a": "2"}});
        let cases = [
            ("", Some(&same), Write::Apply),
            ("Replace=true", Some(&same), Write::Replace),
            ("ApplyOutOfSyncOnly=true", Some(&same), Write::Skip),
            ("ApplyOutOfSyncOnly=true", Some(&drifted), Write::Apply),
            ("ApplyOutOfSyncOnly=true", None, Write::Apply),
            (
                "ApplyOutOfSyncOnly=true,Replace=true",
                Some(&same),
                Write::Skip,
            ),
            (
                "ApplyOutOfSyncOnly=true,Replace=true",
                Some(&drifted),
                Write::Replace,
            ),
            ("ServerSideApply=true", Some(&same), Write::Apply),
            ("Validate=false", Some(&same), Write::Apply),
            ("Validate=false,Replace=true", Some(&same), Write::Replace),
        ];
        for (options, live, expected) in cases {
            let policy = policy(options);
            assert_eq!(policy.needs_live(), options.contains("ApplyOutOfSyncOnly"));
            assert_eq!(
                policy.write(&desired, live, "flotilla"),
                expected,
                "{options} {live:?}"
            );
        }
    }

    #[test]
    fn hooks_are_never_skipped_and_object_options_win() {
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: \
                    {argocd.argoproj.io/sync-options: Replace=false}}\n---\napiVersion: v1\n\
                    kind: ConfigMap\nmetadata: {name: h, annotations: {argocd.argoproj.io/hook: Sync}}\n";
        let (resources, errors) =
            crate::manifest::parse_documents(std::path::Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        let plan = crate::sync::SyncPlan::build(resources, "op").unwrap();
        let application: SyncOptions = "ApplyOutOfSyncOnly=true,Replace=true".parse().unwrap();
        let policies: Vec<(&str, WritePolicy)> = plan
            .tasks
            .iter()
            .map(|t| (t.key.name.as_str(), WritePolicy::for_task(t, &application)))
            .collect();
        let expected = |replace, out_of_sync_only| WritePolicy {
            replace,
            force: false,
            out_of_sync_only,
            validation: FieldValidation::Strict,
        };
        assert_eq!(
            policies,
            [("c", expected(false, true)), ("h", expected(true, false))]
        );
    }

    #[test]
    fn validate_false_turns_field_validation_off() {
        let cases = [
            ("", FieldValidation::Strict),
            ("Validate=true", FieldValidation::Strict),
            ("Validate=false", FieldValidation::Ignore),
        ];
        for (options, expected) in cases {
            assert_eq!(policy(options).validation, expected, "{options}");
        }
        assert_eq!(FieldValidation::Ignore.as_str(), "Ignore");
    }

    #[test]
    fn only_force_recreates_and_only_after_an_immutable_field() {
        let cases = [
            ("Force=true", true, true),
            ("Force=true", false, false),
            ("Force=true,Replace=true", true, true),
            ("", true, false),
            ("Force=false", true, false),
        ];
        for (options, immutable, expected) in cases {
            assert_eq!(
                policy(options).recreate_after_rejection(immutable),
                expected,
                "{options} {immutable}"
            );
        }
    }

    #[test]
    fn only_validate_false_replaces_after_an_undeclared_field() {
        let cases = [
            ("Validate=false", true, true),
            ("Validate=false", false, false),
            ("Validate=false,Replace=true", true, false),
            ("", true, false),
            ("Validate=true", true, false),
        ];
        for (options, undeclared, expected) in cases {
            assert_eq!(
                policy(options).replace_after_rejection(undeclared),
                expected,
                "{options} {undeclared}"
            );
        }
    }
}

//! Sync options (`argocd.argoproj.io/sync-options`, a comma list of `Key=value`) and compare
//! options (`argocd.argoproj.io/compare-options`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// The per-object sync-options annotation.
pub const SYNC_OPTIONS_ANNOTATION: &str = "argocd.argoproj.io/sync-options";
/// The per-object compare-options annotation.
pub const COMPARE_OPTIONS_ANNOTATION: &str = "argocd.argoproj.io/compare-options";

/// A sync option key. Each takes `true` or `false`; `Prune` and `Delete` also take `confirm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum SyncOptionKey {
    /// `Prune=false`: never prune this object; `Prune=confirm`: prune it only once confirmed.
    Prune,
    /// `Delete=false`: keep it when the Application is deleted; `Delete=confirm`: delete it
    /// (and the Application's other objects) only once confirmed.
    Delete,
    /// `Replace=true`: replace instead of apply.
    Replace,
    /// `Force=true`: delete and recreate when an update is rejected.
    Force,
    /// `ServerSideApply=true`.
    ServerSideApply,
    /// `SkipDryRunOnMissingResource=true`: the kind may not exist yet at dry-run time.
    SkipDryRunOnMissingResource,
    /// `CreateNamespace=true`: create the destination namespace.
    CreateNamespace,
    /// `PruneLast=true`: prune after everything else is Healthy.
    PruneLast,
    /// `ApplyOutOfSyncOnly=true`: skip objects already in sync.
    ApplyOutOfSyncOnly,
    /// `Validate=false`: skip schema validation.
    Validate,
}

impl SyncOptionKey {
    const ALL: [Self; 10] = [
        Self::Prune,
        Self::Delete,
        Self::Replace,
        Self::Force,
        Self::ServerSideApply,
        Self::SkipDryRunOnMissingResource,
        Self::CreateNamespace,
        Self::PruneLast,
        Self::ApplyOutOfSyncOnly,
        Self::Validate,
    ];

    /// The value an object has when the option is not written.
    #[must_use]
    pub fn default_value(self) -> bool {
        matches!(self, Self::Prune | Self::Delete | Self::Validate)
    }
}

impl fmt::Display for SyncOptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// An unparsable sync or compare option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// Not `Key=value`.
    #[error("sync option {0:?} is not Key=value")]
    NotKeyValue(String),
    /// Unknown key.
    #[error("unknown sync option {0:?} (Flotilla does not implement it)")]
    UnknownOption(String),
    /// Value is not `true`/`false` (or `confirm` for `Prune` and `Delete`).
    #[error("sync option {key}={value:?}: expected {}", expected(*.key))]
    BadValue {
        /// The option.
        key: SyncOptionKey,
        /// What was written.
        value: String,
    },
    /// Unknown compare option.
    #[error("unknown compare option {0:?}")]
    UnknownCompareOption(String),
    /// A compare option of Argo CD that Flotilla does not implement when enabled.
    #[error(
        "compare option {0}=true is not implemented: Flotilla diffs the desired object with the \
         live one it watches, by field ownership (as {0}=false); remove it or set it to false"
    )]
    UnsupportedCompareOption(&'static str),
}

/// The values `key` accepts, for [`OptionError::BadValue`].
fn expected(key: SyncOptionKey) -> &'static str {
    if key.confirmable() {
        "true, false or confirm"
    } else {
        "true or false"
    }
}

impl SyncOptionKey {
    /// Whether the option takes `confirm` (Argo CD's `Prune=confirm` and `Delete=confirm`).
    #[must_use]
    pub fn confirmable(self) -> bool {
        matches!(self, Self::Prune | Self::Delete)
    }
}

/// The value of a written sync option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptionValue {
    /// `true`.
    True,
    /// `false`.
    False,
    /// `confirm` (`Prune` and `Delete` only): done, but only once confirmed.
    Confirm,
}

impl OptionValue {
    fn of(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }

    /// Whether the option is on (`confirm` is: the action happens once confirmed).
    #[must_use]
    pub fn is_on(self) -> bool {
        self != Self::False
    }
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::True => "true",
            Self::False => "false",
            Self::Confirm => "confirm",
        })
    }
}

impl FromStr for SyncOptionKey {
    type Err = OptionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|key| key.to_string() == text)
            .ok_or_else(|| OptionError::UnknownOption(text.to_owned()))
    }
}

/// The options written on an object; unwritten ones take [`SyncOptionKey::default_value`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct SyncOptions(BTreeMap<SyncOptionKey, OptionValue>);

impl SyncOptions {
    /// Whether an option is on (`confirm` counts as on).
    #[must_use]
    pub fn get(&self, key: SyncOptionKey) -> bool {
        self.0
            .get(&key)
            .map_or(key.default_value(), |value| value.is_on())
    }

    /// Whether an option says `confirm` (`Prune=confirm`, `Delete=confirm`).
    #[must_use]
    pub fn confirms(&self, key: SyncOptionKey) -> bool {
        self.0.get(&key) == Some(&OptionValue::Confirm)
    }

    /// The options written explicitly, e.g. for display as `Prune=false`.
    pub fn written(&self) -> impl Iterator<Item = (SyncOptionKey, OptionValue)> + '_ {
        self.0.iter().map(|(key, value)| (*key, *value))
    }

    /// `Prune=false,Delete=false`: what Helm's `resource-policy: keep` means.
    #[must_use]
    pub fn kept() -> Self {
        Self(BTreeMap::from([
            (SyncOptionKey::Prune, OptionValue::of(false)),
            (SyncOptionKey::Delete, OptionValue::of(false)),
        ]))
    }

    /// These options over Application-wide ones: an option written here wins, an unwritten one
    /// takes the Application's value.
    #[must_use]
    pub fn over(&self, application: &Self) -> Self {
        let mut merged = application.0.clone();
        merged.extend(self.written());
        Self(merged)
    }

    /// Application-wide options (`syncPolicy.syncOptions`, one `Key=value` per item), after the
    /// runner took out those that do not concern the writing of objects
    /// (`PrunePropagationPolicy`, `RespectIgnoreDifferences`, `FailOnSharedResource`).
    ///
    /// # Errors
    /// An item that is not `Key=value`, an option Flotilla does not know (refused by name, never
    /// ignored), or a value other than true/false.
    pub fn from_items<'i>(items: impl IntoIterator<Item = &'i str>) -> Result<Self, OptionError> {
        let mut options = BTreeMap::new();
        for item in items {
            options.extend(item.parse::<Self>()?.0);
        }
        Ok(Self(options))
    }
}

impl FromStr for SyncOptions {
    type Err = OptionError;

    /// Parses `Prune=false,ServerSideApply=true`; blanks around items are ignored.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let mut options = BTreeMap::new();
        for item in list
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| OptionError::NotKeyValue(item.to_owned()))?;
            let key: SyncOptionKey = key.trim().parse()?;
            let value = match value.trim() {
                "true" => OptionValue::of(true),
                "false" => OptionValue::of(false),
                "confirm" if key.confirmable() => OptionValue::Confirm,
                other => {
                    return Err(OptionError::BadValue {
                        key,
                        value: other.to_owned(),
                    });
                }
            };
            options.insert(key, value);
        }
        Ok(Self(options))
    }
}

/// The compare options of an object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompareOptions {
    /// `IgnoreExtraneous`: does not count towards the Application's sync status.
    pub ignore_extraneous: bool,
}

impl FromStr for CompareOptions {
    type Err = OptionError;

    /// Parses `IgnoreExtraneous`, and Argo CD's `ServerSideDiff=false` and
    /// `IncludeMutationWebhook=false` (what Flotilla's diff does); either set to `true` (a dry-run
    /// apply per object to predict the live state) is refused by name.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let mut options = Self::default();
        for item in list
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            match item.split_once('=').map_or(item, |(key, _)| key.trim()) {
                "IgnoreExtraneous" => options.ignore_extraneous = true,
                key @ ("ServerSideDiff" | "IncludeMutationWebhook") => {
                    match item.split_once('=').map(|(_, value)| value.trim()) {
                        Some("false") => {}
                        Some("true") => {
                            return Err(OptionError::UnsupportedCompareOption(
                                if key == "ServerSideDiff" {
                                    "ServerSideDiff"
                                } else {
                                    "IncludeMutationWebhook"
                                },
                            ));
                        }
                        _ => return Err(OptionError::UnknownCompareOption(item.to_owned())),
                    }
                }
                _ => return Err(OptionError::UnknownCompareOption(item.to_owned())),
            }
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SyncOptionKey::*;

    #[test]
    fn parses_every_option() {
        let list = "Prune=false, Delete=false,Replace=true,Force=true,ServerSideApply=true,\
                    SkipDryRunOnMissingResource=true,CreateNamespace=true,PruneLast=true,ApplyOutOfSyncOnly=true,Validate=false";
        let options: SyncOptions = list.parse().unwrap();
        for key in SyncOptionKey::ALL {
            assert_eq!(options.get(key), !key.default_value(), "{key}");
        }
        assert_eq!(options.written().count(), 10);
    }

    #[test]
    fn defaults() {
        let options = SyncOptions::default();
        assert!(options.get(Prune) && options.get(Delete) && options.get(Validate));
        assert!(!options.get(PruneLast) && !options.get(Replace));
    }

    #[test]
    fn confirm_is_accepted_for_prune_and_delete_only() {
        let cases = [
            ("Prune=confirm", Prune, true, true),
            ("Delete=confirm", Delete, true, true),
            ("Prune=true", Prune, true, false),
            ("Delete=false", Delete, false, false),
            ("", Prune, true, false),
        ];
        for (text, key, on, confirms) in cases {
            let options: SyncOptions = text.parse().unwrap();
            assert_eq!(
                (options.get(key), options.confirms(key)),
                (on, confirms),
                "{text}"
            );
        }
        let written: SyncOptions = "Prune=confirm".parse().unwrap();
        let shown: Vec<String> = written.written().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(shown, ["Prune=confirm"]);
    }

    #[test]
    fn errors() {
        let cases = [
            ("Prune", "sync option \"Prune\" is not Key=value"),
            (
                "Prun=false",
                "unknown sync option \"Prun\" (Flotilla does not implement it)",
            ),
            (
                "Prune=maybe",
                "sync option Prune=\"maybe\": expected true, false or confirm",
            ),
            (
                "Delete=yes",
                "sync option Delete=\"yes\": expected true, false or confirm",
            ),
            (
                "Replace=confirm",
                "sync option Replace=\"confirm\": expected true or false",
            ),
        ];
        for (text, expected) in cases {
            let error = text.parse::<SyncOptions>().unwrap_err();
            assert_eq!(error.to_string(), expected, "{text}");
        }
    }

    #[test]
    fn object_options_override_application_options() {
        let application: SyncOptions = "ApplyOutOfSyncOnly=true,Replace=true".parse().unwrap();
        let object: SyncOptions = "Replace=false,Force=true".parse().unwrap();
        let merged = object.over(&application);
        assert!(merged.get(ApplyOutOfSyncOnly) && merged.get(Force) && !merged.get(Replace));
        assert_eq!(SyncOptions::default().over(&application), application);
    }

    #[test]
    fn application_items_refuse_unknown_options_by_name() {
        let options =
            SyncOptions::from_items(["CreateNamespace=true", " PruneLast=true "]).unwrap();
        assert!(options.get(CreateNamespace) && options.get(PruneLast));
        assert_eq!(
            SyncOptions::from_items(["CreateNamespace=true", "ClientSideApplyMigration=false"]),
            Err(OptionError::UnknownOption(
                "ClientSideApplyMigration".into()
            ))
        );
        assert_eq!(
            SyncOptions::from_items(["Replace=yes"]).map(|_| ()),
            Err(OptionError::BadValue {
                key: Replace,
                value: "yes".into()
            })
        );
    }

    #[test]
    fn compare_options() {
        assert!(
            "IgnoreExtraneous"
                .parse::<CompareOptions>()
                .unwrap()
                .ignore_extraneous
        );
        assert!(
            !"ServerSideDiff=false"
                .parse::<CompareOptions>()
                .unwrap()
                .ignore_extraneous
        );
        assert_eq!(
            "IgnoreEverything".parse::<CompareOptions>(),
            Err(OptionError::UnknownCompareOption("IgnoreEverything".into()))
        );
        assert_eq!(
            "ServerSideDiff=false, IncludeMutationWebhook=false".parse::<CompareOptions>(),
            Ok(CompareOptions::default())
        );
        for key in ["ServerSideDiff", "IncludeMutationWebhook"] {
            let error = format!("{key}=true").parse::<CompareOptions>().unwrap_err();
            assert_eq!(error, OptionError::UnsupportedCompareOption(key));
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("compare option {key}=true is not implemented"))
            );
        }
    }
}

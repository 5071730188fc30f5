//! Health checks configured the way Argo CD configures them, read from a ConfigMap's data:
//! `resource.customizations.health.<group>_<Kind>` keys holding a Lua script (with
//! `resource.customizations.useOpenLibs.<group>_<Kind>: "true"` for the open libraries), and the
//! `resource.customizations` key holding YAML `{"<group>/<Kind>": {health.lua: ...,
//! health.lua.useOpenLibs: true}}`, whose keys may be globs (`*.crossplane.io/*`); then the
//! scripts of a library directory laid out as Argo CD's ([`HealthDefaults`]). A configured check
//! wins over Flotilla's own rule for the kind, as in Argo CD; an exact key wins over a glob, a
//! ConfigMap's check over the library's. Flotilla's own keys turn off the wait for a first status
//! per kind: `resource.customizations.awaitStatus.<group>_<Kind>: "false"` or
//! `health.awaitStatus: false` in the YAML. [`HealthChecks::assess`] is the one health function
//! the controller, `flotilla sync` and `flotilla simulate` call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::lua::LuaCheck;
use super::status_gate::{DEFAULT_STATUS_GRACE, StatusKinds, awaiting_status};
use super::{Health, HealthStatus, assess};
use crate::manifest::{group_kind_of_key, group_of};

/// The data key prefix of one kind's health script.
pub const HEALTH_KEY_PREFIX: &str = "resource.customizations.health.";
/// The data key prefix of whether one kind's health script gets the open libraries.
pub const OPEN_LIBS_KEY_PREFIX: &str = "resource.customizations.useOpenLibs.";
/// The data key prefix of whether objects of one kind are awaited for a first status (Flotilla's).
pub const AWAIT_STATUS_KEY_PREFIX: &str = "resource.customizations.awaitStatus.";
/// The data key of the YAML map of customizations per kind.
pub const CUSTOMIZATIONS_KEY: &str = "resource.customizations";

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CustomizationsError {
    #[error("{source_name}: key {key}: expected <group>_<Kind> after {prefix}")]
    Key {
        source_name: String,
        key: String,
        prefix: String,
    },
    #[error("{source_name}: key {key}: expected true or false, found {value:?}")]
    Flag {
        source_name: String,
        key: String,
        value: String,
    },
    #[error("{source_name}: key {CUSTOMIZATIONS_KEY}: {error}")]
    Yaml {
        source_name: String,
        #[source]
        error: Box<serde_saphyr::Error>,
    },
    #[error("{source_name}: key {CUSTOMIZATIONS_KEY}: {pattern:?} is not a valid pattern")]
    Pattern {
        source_name: String,
        pattern: String,
        #[source]
        source: globset::Error,
    },
    /// A script that does not compile (the Lua error as text: it is not `Send`).
    #[error("{message}")]
    Script { message: String },
}

/// A `group/Kind` a setting applies to, possibly a glob (`*.crossplane.io/*`).
#[derive(Clone, Debug)]
struct KindPattern {
    pattern: String,
    matcher: Option<GlobMatcher>,
}

impl KindPattern {
    /// The pattern of a `resource.customizations` key (`group/Kind`, or `Kind` of the core
    /// group).
    fn of_key(source_name: &str, key: &str) -> Result<Self, CustomizationsError> {
        let pattern = if key.contains('/') {
            key.to_owned()
        } else {
            format!("/{key}")
        };
        let matcher = if pattern.contains(['*', '?', '[']) {
            let glob = Glob::new(&pattern).map_err(|source| CustomizationsError::Pattern {
                source_name: source_name.to_owned(),
                pattern: key.to_owned(),
                source,
            })?;
            Some(glob.compile_matcher())
        } else {
            None
        };
        Ok(Self { pattern, matcher })
    }

    /// An exact `group/Kind`.
    fn exact(pattern: String) -> Self {
        Self {
            pattern,
            matcher: None,
        }
    }

    fn matches(&self, group_kind: &str) -> bool {
        match &self.matcher {
            Some(matcher) => matcher.is_match(group_kind),
            None => self.pattern == group_kind,
        }
    }
}

/// One configured check: the kinds it applies to.
#[derive(Clone, Debug)]
struct Configured {
    kinds: KindPattern,
    check: LuaCheck,
}

/// A health check script of a library laid out as Argo CD's `resource_customizations`
/// directory (`GROUP/KIND/health.lua`), read by the shell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryScript {
    /// API group (empty for the core group).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// The file, naming the script in errors.
    pub path: String,
    /// The Lua source.
    pub source: String,
}

/// What the controller's (or a command's) flags set for every settings ConfigMap: a library of
/// health scripts (`--resource-customizations-dir`) and the wait for a first status
/// (`--health-status-grace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthDefaults {
    /// Library scripts, one per kind.
    pub library: Vec<LibraryScript>,
    /// How long an object whose CRD declares a status subresource is awaited without status.
    pub status_grace: Duration,
}

impl Default for HealthDefaults {
    fn default() -> Self {
        Self {
            library: Vec::new(),
            status_grace: DEFAULT_STATUS_GRACE,
        }
    }
}

/// The configured health checks (none by default), the kinds whose wait for a first status is
/// turned off, the grace of that wait, and what the shell observed of the cluster judged;
/// cheap to clone.
#[derive(Clone, Debug)]
pub struct HealthChecks {
    /// ConfigMap checks (exact keys, then globs), then library scripts.
    checks: Arc<Vec<Configured>>,
    /// Kinds not awaited for a first status.
    not_awaited: Arc<Vec<KindPattern>>,
    status_grace: Duration,
    observed: Option<(StatusKinds, Timestamp)>,
}

impl Default for HealthChecks {
    fn default() -> Self {
        Self {
            checks: Arc::default(),
            not_awaited: Arc::default(),
            status_grace: DEFAULT_STATUS_GRACE,
            observed: None,
        }
    }
}

/// Equal configurations; what was observed of a cluster is not configuration.
impl PartialEq for HealthChecks {
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &KindPattern, b: &KindPattern| a.pattern == b.pattern;
        self.status_grace == other.status_grace
            && self.checks.len() == other.checks.len()
            && self
                .checks
                .iter()
                .zip(other.checks.iter())
                .all(|(a, b)| same(&a.kinds, &b.kinds) && a.check == b.check)
            && self.not_awaited.len() == other.not_awaited.len()
            && self
                .not_awaited
                .iter()
                .zip(other.not_awaited.iter())
                .all(|(a, b)| same(a, b))
    }
}

/// One entry of `resource.customizations`.
#[derive(serde::Deserialize)]
struct Customization {
    #[serde(rename = "health.lua", default)]
    health_lua: Option<String>,
    #[serde(rename = "health.lua.useOpenLibs", default)]
    use_open_libs: bool,
    #[serde(rename = "health.awaitStatus", default)]
    await_status: Option<bool>,
}

impl HealthChecks {
    /// The checks in a ConfigMap's `data`; `source_name` (the ConfigMap or file) names it in
    /// errors.
    ///
    /// # Errors
    /// A health key without a kind, unreadable YAML under `resource.customizations`, a bad
    /// glob, a flag that is not `true` or `false`, or a script that does not compile.
    pub fn from_data(
        source_name: &str,
        data: &BTreeMap<String, String>,
    ) -> Result<Self, CustomizationsError> {
        let key_kinds = |key: &str, prefix: &str| {
            let group_kind = key.strip_prefix(prefix)?;
            Some(
                group_kind_of_key(group_kind)
                    .map(KindPattern::exact)
                    .ok_or_else(|| CustomizationsError::Key {
                        source_name: source_name.to_owned(),
                        key: key.to_owned(),
                        prefix: prefix.to_owned(),
                    }),
            )
        };
        let flag = |key: &str, value: &str| match value.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(CustomizationsError::Flag {
                source_name: source_name.to_owned(),
                key: key.to_owned(),
                value: other.to_owned(),
            }),
        };
        let mut open_libs = Vec::new();
        let mut checks = Vec::new();
        let mut not_awaited = Vec::new();
        for (key, value) in data {
            if let Some(kinds) = key_kinds(key, HEALTH_KEY_PREFIX) {
                checks.push(Configured {
                    kinds: kinds?,
                    check: LuaCheck {
                        name: format!("{source_name} {key}"),
                        source: value.clone(),
                        open_libs: false,
                    },
                });
            } else if let Some(kinds) = key_kinds(key, OPEN_LIBS_KEY_PREFIX) {
                if flag(key, value)? {
                    open_libs.push(kinds?.pattern);
                }
            } else if let Some(kinds) = key_kinds(key, AWAIT_STATUS_KEY_PREFIX)
                && !flag(key, value)?
            {
                not_awaited.push(kinds?);
            }
        }
        for configured in &mut checks {
            configured.check.open_libs = open_libs.contains(&configured.kinds.pattern);
        }
        if let Some(yaml) = data.get(CUSTOMIZATIONS_KEY) {
            let map: BTreeMap<String, Customization> =
                serde_saphyr::from_str(yaml).map_err(|error| CustomizationsError::Yaml {
                    source_name: source_name.to_owned(),
                    error: Box::new(error),
                })?;
            for (key, customization) in map {
                let kinds = KindPattern::of_key(source_name, &key)?;
                if customization.await_status == Some(false) {
                    not_awaited.push(kinds.clone());
                }
                let Some(source) = customization.health_lua else {
                    continue;
                };
                checks.push(Configured {
                    kinds,
                    check: LuaCheck {
                        name: format!("{source_name} {CUSTOMIZATIONS_KEY} {key} health.lua"),
                        source,
                        open_libs: customization.use_open_libs,
                    },
                });
            }
        }
        compile(&checks)?;
        // Exact keys first, then globs; each in key order.
        checks.sort_by_key(|c| c.kinds.matcher.is_some());
        Ok(Self {
            checks: Arc::new(checks),
            not_awaited: Arc::new(not_awaited),
            ..Self::default()
        })
    }

    /// These checks, then `defaults.library`'s scripts for the kinds they leave to it (a
    /// ConfigMap's check wins over the library's, as Argo CD's `argocd-cm` wins over its
    /// built-in library), awaiting a first status for `defaults.status_grace`. The library's
    /// scripts run with the open libraries, as Argo CD runs its library's.
    ///
    /// # Errors
    /// A library script that does not compile, named by its file.
    pub fn with_defaults(self, defaults: &HealthDefaults) -> Result<Self, CustomizationsError> {
        let added: Vec<Configured> = defaults
            .library
            .iter()
            .map(|script| Configured {
                kinds: KindPattern::exact(format!("{}/{}", script.group, script.kind)),
                check: LuaCheck {
                    name: script.path.clone(),
                    source: script.source.clone(),
                    open_libs: true,
                },
            })
            .collect();
        compile(&added)?;
        let mut checks = Vec::clone(&self.checks);
        checks.extend(added);
        Ok(Self {
            checks: Arc::new(checks),
            status_grace: defaults.status_grace,
            ..self
        })
    }

    /// These checks judging objects of a cluster whose kinds declaring a status subresource
    /// are `kinds`, at `now`.
    #[must_use]
    pub fn observing(&self, kinds: StatusKinds, now: Timestamp) -> Self {
        Self {
            observed: Some((kinds, now)),
            ..self.clone()
        }
    }

    /// The health of a live object: the configured check for its kind; else, for a kind whose
    /// CRD declares a status subresource (when observed), Progressing until its controller has
    /// reported ([`awaiting_status`]); else Flotilla's rules. A check that fails makes the
    /// object Unknown with the error as its message. Objects being deleted are Progressing
    /// whatever a check says.
    #[must_use]
    pub fn assess(&self, object: &Value) -> Health {
        if object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            return assess(object);
        }
        let group = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .map_or("", group_of);
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let group_kind = format!("{group}/{kind}");
        if let Some(configured) = self.checks.iter().find(|c| c.kinds.matches(&group_kind)) {
            return configured
                .check
                .run(object)
                .unwrap_or_else(|error| Health::new(HealthStatus::Unknown, error.to_string()));
        }
        let awaited = self.observed.as_ref().is_some_and(|(kinds, _)| {
            kinds.declares(group, kind) && !self.not_awaited.iter().any(|p| p.matches(&group_kind))
        });
        if awaited
            && let Some((_, now)) = &self.observed
            && let Some(waiting) = awaiting_status(object, self.status_grace, *now)
        {
            return waiting;
        }
        assess(object)
    }
}

/// Compiles every check, so a syntax error is found when the settings are read.
fn compile(checks: &[Configured]) -> Result<(), CustomizationsError> {
    for configured in checks {
        configured
            .check
            .compile()
            .map_err(|error| CustomizationsError::Script {
                message: error.to_string(),
            })?;
    }
    Ok(())
}

/// A ConfigMap's `data` from `(key, value)` pairs, for tests.
#[cfg(test)]
pub fn test_data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::test_data as data;
    use super::*;

    fn object(api_version: &str, kind: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}})
    }

    const DEGRADED: &str = "return {status = 'Degraded', message = 'from the exact key'}";

    #[test]
    fn configured_checks_win_over_rules_exact_keys_over_globs() {
        let yaml = "\"*.crossplane.io/*\":\n  health.lua: |\n    return {status = 'Suspended', message = 'from the glob'}\nConfigMap:\n  health.lua: return {status = 'Progressing'}\n";
        let checks = HealthChecks::from_data(
            "ConfigMap argocd/argocd-cm",
            &data(&[
                (
                    "resource.customizations.health.database.crossplane.io_Claim",
                    DEGRADED,
                ),
                ("resource.customizations", yaml),
                ("url", "https://argo.example.com"),
            ]),
        )
        .unwrap();
        let health = |api: &str, kind: &str| {
            let health = checks.assess(&object(api, kind));
            (health.status, health.message)
        };
        assert_eq!(
            health("database.crossplane.io/v1", "Claim"),
            (HealthStatus::Degraded, "from the exact key".into())
        );
        assert_eq!(
            health("network.crossplane.io/v1", "Vpc"),
            (HealthStatus::Suspended, "from the glob".into())
        );
        assert_eq!(
            health("v1", "ConfigMap"),
            (HealthStatus::Progressing, String::new())
        );
        assert_eq!(
            health("v1", "Secret"),
            (HealthStatus::Healthy, String::new()),
            "no check: Flotilla's rule"
        );
        let mut deleting = object("database.crossplane.io/v1", "Claim");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
        assert_eq!(checks.assess(&deleting).status, HealthStatus::Progressing);
    }

    #[test]
    fn custom_resources_wait_for_a_first_status_unless_a_check_decides_or_the_kind_opts_out() {
        let yaml = "\"*.opted.example.com/*\":\n  health.awaitStatus: false\n";
        let library = [LibraryScript {
            group: "scripted.example.com".into(),
            kind: "Widget".into(),
            path: "lib/scripted.example.com/Widget/health.lua".into(),
            source: "return {status = 'Degraded', message = os.date('!%Y', 0)}".into(),
        }];
        let defaults = HealthDefaults {
            library: library.to_vec(),
            status_grace: Duration::from_secs(60),
        };
        let checks = HealthChecks::from_data(
            "cm",
            &data(&[
                (
                    "resource.customizations.awaitStatus.flat.example.com_Widget",
                    "false",
                ),
                ("resource.customizations", yaml),
            ]),
        )
        .unwrap()
        .with_defaults(&defaults)
        .unwrap();
        let kinds = StatusKinds::new(
            [
                "example.com",
                "flat.example.com",
                "a.opted.example.com",
                "scripted.example.com",
            ]
            .map(|group| (group.to_owned(), "Widget".to_owned())),
        );
        let created = "2026-12-01T10:00:00Z";
        let at = |time: &str| checks.observing(kinds.clone(), time.parse().unwrap());
        let widget = |group: &str| {
            json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                   "metadata": {"name": "w", "creationTimestamp": created}})
        };
        let health = |time: &str, group: &str| {
            let health = at(time).assess(&widget(group));
            (health.status, health.message)
        };
        let waiting = (
            HealthStatus::Progressing,
            "Waiting for its controller to report status".to_owned(),
        );
        let healthy = (HealthStatus::Healthy, String::new());
        assert_eq!(health("2026-12-01T10:00:30Z", "example.com"), waiting);
        assert_eq!(
            health("2026-12-01T10:01:00Z", "example.com"),
            healthy,
            "the grace passed"
        );
        assert_eq!(health("2026-12-01T10:00:30Z", "flat.example.com"), healthy);
        assert_eq!(
            health("2026-12-01T10:00:30Z", "a.opted.example.com"),
            healthy
        );
        assert_eq!(
            health("2026-12-01T10:00:30Z", "scripted.example.com"),
            (HealthStatus::Degraded, "1970".to_owned()),
            "a library script decides, with the open libraries"
        );
        assert_eq!(
            checks.assess(&widget("example.com")),
            Health::new(HealthStatus::Healthy, ""),
            "nothing observed of a cluster: no wait"
        );
        assert_eq!(
            checks,
            at("2026-12-01T10:00:30Z"),
            "observing is not configuration"
        );
    }

    #[test]
    fn use_open_libs_is_read_from_both_forms() {
        let script = "return {status = 'Healthy', message = os.date('!%Y', 0)}";
        let yaml = format!(
            "example.com/Gadget:\n  health.lua: \"{script}\"\n  health.lua.useOpenLibs: true\n"
        );
        let checks = HealthChecks::from_data(
            "cm",
            &data(&[
                ("resource.customizations.health.example.com_Widget", script),
                (
                    "resource.customizations.useOpenLibs.example.com_Widget",
                    "true",
                ),
                ("resource.customizations.health.example.com_Gizmo", script),
                ("resource.customizations", &yaml),
            ]),
        )
        .unwrap();
        for (kind, message) in [("Widget", "1970"), ("Gadget", "1970")] {
            assert_eq!(
                checks.assess(&object("example.com/v1", kind)).message,
                message
            );
        }
        let closed = checks.assess(&object("example.com/v1", "Gizmo"));
        assert_eq!(closed.status, HealthStatus::Unknown, "{}", closed.message);
        let error = HealthChecks::from_data(
            "cm",
            &data(&[(
                "resource.customizations.awaitStatus.example.com_Widget",
                "no",
            )]),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "cm: key resource.customizations.awaitStatus.example.com_Widget: expected true or false, found \"no\""
        );
    }

    #[test]
    fn a_failing_check_is_unknown_and_named() {
        let checks = HealthChecks::from_data(
            "ConfigMap argocd/argocd-cm",
            &data(&[(
                "resource.customizations.health.example.com_Widget",
                "while true do end",
            )]),
        )
        .unwrap();
        let health = checks.assess(&object("example.com/v1", "Widget"));
        assert_eq!(health.status, HealthStatus::Unknown);
        assert_eq!(
            health.message,
            "health check ConfigMap argocd/argocd-cm resource.customizations.health.example.com_Widget: runtime error: stopped after 10000000 instructions"
        );
    }

    #[test]
    fn bad_configurations_are_named() {
        let cases = [
            (
                data(&[("resource.customizations.health.", "")]),
                "cm: key resource.customizations.health.: expected <group>_<Kind> after resource.customizations.health.",
            ),
            (
                data(&[("resource.customizations", "[a list]")]),
                "cm: key resource.customizations: ",
            ),
            (
                data(&[("resource.customizations", "\"a/[b\":\n  health.lua: x\n")]),
                "cm: key resource.customizations: \"a/[b\" is not a valid pattern",
            ),
            (
                data(&[(
                    "resource.customizations.health.example.com_Widget",
                    "hs = {}\nif obj.status then\n  hs.status = 'Healthy'\nreturn hs\n",
                )]),
                "health check cm resource.customizations.health.example.com_Widget: syntax error: cm resource.customizations.health.example.com_Widget:5:",
            ),
            (
                data(&[(
                    "resource.customizations",
                    "example.com/Widget:\n  health.lua: 'return {'\n",
                )]),
                "health check cm resource.customizations example.com/Widget health.lua: syntax error:",
            ),
        ];
        for (data, expected) in cases {
            let error = HealthChecks::from_data("cm", &data)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(expected), "{error}");
        }
    }
}

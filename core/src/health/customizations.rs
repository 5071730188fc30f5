//! Health checks configured the way Argo CD configures them, read from a ConfigMap's data:
//! `resource.customizations.health.<group>_<Kind>` keys holding a Lua script, and the
//! `resource.customizations` key holding YAML `{"<group>/<Kind>": {health.lua: ...}}`, whose keys
//! may be globs (`*.crossplane.io/*`). A configured check wins over Flotilla's own rule for the
//! kind, as in Argo CD; an exact key wins over a glob. [`HealthChecks::assess`] is the one health
//! function the controller, `flotilla sync` and `flotilla simulate` call.

use std::collections::BTreeMap;
use std::sync::Arc;

use globset::{Glob, GlobMatcher};
use serde_json::Value;

use super::lua::LuaCheck;
use super::{Health, HealthStatus, assess};
use crate::manifest::{group_kind_of_key, group_of};

/// The data key prefix of one kind's health script.
pub const HEALTH_KEY_PREFIX: &str = "resource.customizations.health.";
/// The data key of the YAML map of customizations per kind.
pub const CUSTOMIZATIONS_KEY: &str = "resource.customizations";

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CustomizationsError {
    #[error("{source_name}: key {key}: expected <group>_<Kind> after {HEALTH_KEY_PREFIX}")]
    Key { source_name: String, key: String },
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

/// One configured check: the `group/Kind` it applies to (possibly a glob).
#[derive(Clone, Debug)]
struct Configured {
    pattern: String,
    matcher: Option<GlobMatcher>,
    check: LuaCheck,
}

/// The configured health checks (none by default); cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct HealthChecks(Arc<Vec<Configured>>);

impl PartialEq for HealthChecks {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(other.0.iter())
                .all(|(a, b)| a.pattern == b.pattern && a.check == b.check)
    }
}

/// One entry of `resource.customizations`.
#[derive(serde::Deserialize)]
struct Customization {
    #[serde(rename = "health.lua", default)]
    health_lua: Option<String>,
}

impl HealthChecks {
    /// The checks in a ConfigMap's `data`; `source_name` (the ConfigMap or file) names it in
    /// errors.
    ///
    /// # Errors
    /// A health key without a kind, unreadable YAML under `resource.customizations`, a bad
    /// glob, or a script that does not compile.
    pub fn from_data(
        source_name: &str,
        data: &BTreeMap<String, String>,
    ) -> Result<Self, CustomizationsError> {
        let mut checks = Vec::new();
        for (key, script) in data {
            let Some(group_kind) = key.strip_prefix(HEALTH_KEY_PREFIX) else {
                continue;
            };
            let pattern =
                group_kind_of_key(group_kind).ok_or_else(|| CustomizationsError::Key {
                    source_name: source_name.to_owned(),
                    key: key.clone(),
                })?;
            checks.push(Configured {
                pattern,
                matcher: None,
                check: LuaCheck {
                    name: format!("{source_name} {key}"),
                    source: script.clone(),
                },
            });
        }
        if let Some(yaml) = data.get(CUSTOMIZATIONS_KEY) {
            let map: BTreeMap<String, Customization> =
                serde_saphyr::from_str(yaml).map_err(|error| CustomizationsError::Yaml {
                    source_name: source_name.to_owned(),
                    error: Box::new(error),
                })?;
            for (key, customization) in map {
                let Some(source) = customization.health_lua else {
                    continue;
                };
                let pattern = if key.contains('/') {
                    key.clone()
                } else {
                    format!("/{key}")
                };
                let matcher = if pattern.contains(['*', '?', '[']) {
                    let glob =
                        Glob::new(&pattern).map_err(|source| CustomizationsError::Pattern {
                            source_name: source_name.to_owned(),
                            pattern: key.clone(),
                            source,
                        })?;
                    Some(glob.compile_matcher())
                } else {
                    None
                };
                checks.push(Configured {
                    pattern,
                    matcher,
                    check: LuaCheck {
                        name: format!("{source_name} {CUSTOMIZATIONS_KEY} {key} health.lua"),
                        source,
                    },
                });
            }
        }
        for configured in &checks {
            configured
                .check
                .compile()
                .map_err(|error| CustomizationsError::Script {
                    message: error.to_string(),
                })?;
        }
        // Exact keys first, then globs; each in key order.
        checks.sort_by_key(|c| c.matcher.is_some());
        Ok(Self(Arc::new(checks)))
    }

    /// The health of a live object: the configured check for its kind, else Flotilla's rules.
    /// A check that fails makes the object Unknown with the error as its message. Objects being
    /// deleted are Progressing whatever a check says.
    #[must_use]
    pub fn assess(&self, object: &Value) -> Health {
        let deleting = object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null());
        match self.check_for(object) {
            Some(check) if !deleting => check
                .run(object)
                .unwrap_or_else(|error| Health::new(HealthStatus::Unknown, error.to_string())),
            _ => assess(object),
        }
    }

    fn check_for(&self, object: &Value) -> Option<&LuaCheck> {
        if self.0.is_empty() {
            return None;
        }
        let group = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .map_or("", group_of);
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let group_kind = format!("{group}/{kind}");
        self.0
            .iter()
            .find(|c| match &c.matcher {
                Some(matcher) => matcher.is_match(&group_kind),
                None => c.pattern == group_kind,
            })
            .map(|c| &c.check)
    }
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

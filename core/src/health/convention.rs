//! The status conventions operators follow, as data: a set of conditions that must all be True
//! ([`Conditions`]: cert-manager, Flux, Crossplane, Knative, KEDA, External Secrets, Strimzi,
//! Prometheus Operator), or a phase string ([`Phases`]: Cluster API, CloudNativePG backups, Argo
//! Rollouts analyses). Each convention judges an object and describes itself for the reference
//! docs, so a kind is one table row ([`super::kinds`]), not a function of its own.

use serde_json::Value;

use super::conditions::{Condition, condition};
use super::{Health, HealthStatus, generation_observed};

/// What each health state means for a kind, in words for the reference docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meaning {
    /// When the kind is Healthy.
    pub healthy: String,
    /// When it is Progressing.
    pub progressing: String,
    /// When it is Degraded.
    pub degraded: String,
}

/// A condition-based convention, judged in this order: `suspend` field true or a `paused`
/// condition True is Suspended; a spec the operator has not observed yet is Progressing; a
/// `blocking` condition True is Degraded (or Progressing for a `waiting` reason); a `busy`
/// condition True is Progressing; then the `ready` conditions: any False is Degraded (unless
/// its reason is `waiting`), else the first missing, Unknown, waiting or reported for an earlier
/// generation is Progressing; all True is Healthy.
#[derive(Debug, Clone, Copy)]
pub struct Conditions {
    /// Conditions that must all be True (`Ready`; Crossplane's `Synced` and `Ready`).
    pub ready: &'static [&'static str],
    /// Conditions whose True means the operator is at work (`Reconciling`, `Issuing`).
    pub busy: &'static [&'static str],
    /// Conditions whose True means the object is not ready (`Stalled`, Strimzi's `NotReady`).
    pub blocking: &'static [&'static str],
    /// Conditions whose True means paused on purpose (KEDA's `Paused`).
    pub paused: &'static [&'static str],
    /// Reasons that mean "still on its way" rather than failed (`Creating`, `Pending`).
    pub waiting: &'static [&'static str],
    /// A spec field (JSON pointer) whose `true` suspends reconciliation (Flux's `/spec/suspend`).
    pub suspend: Option<&'static str>,
    /// Whether a False condition's `severity` says how bad it is (Cluster API): `Info` and
    /// `Warning` are Progressing, `Error` Degraded.
    pub severity: bool,
}

impl Conditions {
    /// Only `Ready`, no other condition: the convention most operators follow.
    pub const READY: Self = Self {
        ready: &["Ready"],
        busy: &[],
        blocking: &[],
        paused: &[],
        waiting: &[],
        suspend: None,
        severity: false,
    };

    /// Judges `object`.
    #[must_use]
    pub fn assess(&self, object: &Value) -> Health {
        if let Some(pointer) = self.suspend
            && object.pointer(pointer) == Some(&Value::Bool(true))
        {
            return Health::new(
                HealthStatus::Suspended,
                format!("{} is true", field_name(pointer)),
            );
        }
        let generation = object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        if let Some(c) = first_true(object, self.paused) {
            return Health::new(HealthStatus::Suspended, c.text());
        }
        if let Some(waiting) = spec_unobserved(object) {
            return waiting;
        }
        if let Some(c) = first_true(object, self.blocking) {
            return Health::new(self.false_status(&c), c.text());
        }
        if let Some(c) = first_true(object, self.busy) {
            return Health::new(HealthStatus::Progressing, c.text());
        }
        let mut message = String::new();
        let mut progressing = None;
        for type_ in self.ready {
            let Some(c) = condition(object, type_) else {
                progressing.get_or_insert_with(|| {
                    Health::new(
                        HealthStatus::Progressing,
                        format!("Waiting for the {type_} condition"),
                    )
                });
                continue;
            };
            let verdict = match c.status {
                "True" if !generation_observed(generation, c.observed_generation) => Health::new(
                    HealthStatus::Progressing,
                    format!("{type_} for an earlier generation: {}", c.text()),
                ),
                "True" => {
                    c.text().clone_into(&mut message);
                    continue;
                }
                "False" => Health::new(self.false_status(&c), c.text()),
                _ => Health::new(HealthStatus::Progressing, c.text()),
            };
            if verdict.status == HealthStatus::Degraded {
                return verdict;
            }
            progressing.get_or_insert(verdict);
        }
        if let Some(progressing) = progressing {
            return progressing;
        }
        Health::new(HealthStatus::Healthy, message)
    }

    /// Degraded, or Progressing for a waiting reason (or a mild severity).
    fn false_status(&self, c: &Condition<'_>) -> HealthStatus {
        let mild = self.severity && matches!(c.severity, "Info" | "Warning");
        if mild || self.waiting.contains(&c.reason) {
            HealthStatus::Progressing
        } else {
            HealthStatus::Degraded
        }
    }

    /// What the states mean, from the convention's data.
    #[must_use]
    pub fn meaning(&self) -> Meaning {
        let ready = listed(self.ready, " and ");
        let mut progressing = vec![
            "the operator has not observed the current generation".to_owned(),
            format!("{ready} missing, `Unknown` or for an earlier generation"),
        ];
        if !self.busy.is_empty() {
            progressing.push(format!("{} `True`", listed(self.busy, " or ")));
        }
        if !self.waiting.is_empty() {
            progressing.push(format!(
                "a `False` condition with reason {}",
                listed(self.waiting, ", ")
            ));
        }
        if self.severity {
            progressing.push("a `False` condition of severity `Info` or `Warning`".to_owned());
        }
        let mut degraded = vec![format!("{ready} `False`")];
        if !self.blocking.is_empty() {
            degraded.push(format!("{} `True`", listed(self.blocking, " or ")));
        }
        if self.severity {
            degraded[0].push_str(" with severity `Error`");
        } else if !self.waiting.is_empty() {
            degraded[0].push_str(" with another reason");
        }
        let mut healthy = format!("{ready} `True` for the current generation");
        let suspended: Vec<String> = self
            .suspend
            .map(|pointer| format!("`{}: true`", field_name(pointer)))
            .into_iter()
            .chain(
                (!self.paused.is_empty())
                    .then(|| format!("{} `True`", listed(self.paused, " or "))),
            )
            .collect();
        if !suspended.is_empty() {
            healthy.push_str(&format!(" (Suspended: {})", suspended.join(", ")));
        }
        Meaning {
            healthy,
            progressing: progressing.join("; "),
            degraded: degraded.join("; "),
        }
    }
}

/// A phase-based convention: the phase at `field` (compared ignoring case) is Healthy, Degraded
/// or Suspended when listed so, Progressing otherwise (or when absent); a Healthy phase whose
/// `ready` condition is not True yet is Progressing.
#[derive(Debug, Clone, Copy)]
pub struct Phases {
    /// JSON pointer of the phase, e.g. `/status/phase`.
    pub field: &'static str,
    /// Phases that mean Healthy.
    pub healthy: &'static [&'static str],
    /// Phases that mean Degraded.
    pub degraded: &'static [&'static str],
    /// Phases that mean Suspended.
    pub suspended: &'static [&'static str],
    /// A condition that must also be True for Healthy.
    pub ready: Option<&'static str>,
    /// JSON pointers of the message, first present wins.
    pub messages: &'static [&'static str],
}

impl Phases {
    /// Judges `object`.
    #[must_use]
    pub fn assess(&self, object: &Value) -> Health {
        if let Some(waiting) = spec_unobserved(object) {
            return waiting;
        }
        let phase = object.pointer(self.field).and_then(Value::as_str);
        let message = self
            .messages
            .iter()
            .find_map(|pointer| object.pointer(pointer).and_then(Value::as_str))
            .filter(|m| !m.is_empty())
            .map(str::to_owned);
        let Some(phase) = phase.filter(|p| !p.is_empty()) else {
            return Health::new(
                HealthStatus::Progressing,
                format!("Waiting for {}", field_name(self.field)),
            );
        };
        let text = message.unwrap_or_else(|| phase.to_owned());
        let is = |list: &[&str]| list.iter().any(|p| p.eq_ignore_ascii_case(phase));
        if is(self.degraded) {
            return Health::new(HealthStatus::Degraded, text);
        }
        if is(self.suspended) {
            return Health::new(HealthStatus::Suspended, text);
        }
        if !is(self.healthy) {
            return Health::new(HealthStatus::Progressing, text);
        }
        match self.ready.map(|type_| (type_, condition(object, type_))) {
            Some((type_, c)) if c.as_ref().is_none_or(|c| c.status != "True") => Health::new(
                HealthStatus::Progressing,
                c.map_or_else(
                    || format!("{phase}, waiting for the {type_} condition"),
                    |c| format!("{phase}: {}", c.text()),
                ),
            ),
            _ => Health::new(HealthStatus::Healthy, text),
        }
    }

    /// What the states mean, from the convention's data.
    #[must_use]
    pub fn meaning(&self) -> Meaning {
        let field = format!("`{}`", field_name(self.field));
        let mut healthy = format!("{field} is {}", listed(self.healthy, " or "));
        if let Some(ready) = self.ready {
            healthy.push_str(&format!(" and the `{ready}` condition is `True`"));
        }
        if !self.suspended.is_empty() {
            healthy.push_str(&format!(" (Suspended: {})", listed(self.suspended, " or ")));
        }
        Meaning {
            healthy,
            progressing: format!(
                "the operator has not observed the current generation; {field} absent or any other value"
            ),
            degraded: format!("{field} is {}", listed(self.degraded, " or ")),
        }
    }
}

/// The first of `types` that is True.
fn first_true<'a>(object: &'a Value, types: &[&str]) -> Option<Condition<'a>> {
    types
        .iter()
        .find_map(|type_| condition(object, type_).filter(|c| c.status == "True"))
}

/// Progressing while the operator has not observed the object's spec
/// (`status.observedGeneration` behind `metadata.generation`).
pub(super) fn spec_unobserved(object: &Value) -> Option<Health> {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = object
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    (!generation_observed(generation, observed)).then(|| {
        Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for the controller to observe generation {}",
                generation.unwrap_or_default()
            ),
        )
    })
}

/// `status.phase` for `/status/phase`.
fn field_name(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// `` `A` ``, `` `A` and `B` `` …
fn listed(items: &[&str], separator: &str) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(separator)
}

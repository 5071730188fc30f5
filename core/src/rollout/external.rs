//! Cross-ApplicationSet gates (a Flotilla extension): a step's `dependsOn` may name a step of
//! another ApplicationSet (`{applicationSet, step}`, optionally in another namespace, on a
//! named revision, on the waiting step's own revision, or for the Applications with some
//! labels); the step opens once that step of that ApplicationSet's current rollout is complete.
//! The controller passes what it read of each ApplicationSet named ([`ExternalApplicationSet`]:
//! its strategy and rollout status, or why it was not read); [`judge`] says whether one
//! dependency is met, what it waits for, or why it can never be (no such ApplicationSet or
//! step, a namespace the project does not permit, a cycle back to the waiting step, through
//! any number of ApplicationSets), and
//! [`permitted_namespace`] which namespaces may be named. Pure: nothing is read here.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::config::RolloutConfig;
use super::graph;
use crate::api::application_set::{ApplicationSetStep, RolloutStrategy};
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, MAX_COUNTED_REVISIONS, RolloutApplicationState as State,
    RolloutRollback, RolloutStepStatus, StepRolloutSummary,
};
use crate::project::Projects;
use crate::project::source_namespaces::permit_source_namespace;

/// What the controller read of an ApplicationSet a step of this one waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalApplicationSet {
    pub namespace: String,
    pub name: String,
    #[serde(flatten)]
    pub lookup: Lookup,
    /// Whether the controller is told each change of it (a watch of its namespace), so a
    /// rollout waiting only for it need not be passed again until it changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watched: bool,
}

/// What was found of an ApplicationSet named in a `dependsOn`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "found")]
pub enum Lookup {
    /// Its namespace may not be named by this ApplicationSet: why ([`permitted_namespace`]).
    NotPermitted { rule: String },
    /// There is no ApplicationSet of that name in that namespace.
    NotFound,
    /// Its strategy and rollout status.
    Found(Box<ExternalRollout>),
}

/// The strategy and the rollout status of another ApplicationSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRollout {
    /// Its `spec.strategy`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RolloutStrategy>,
    /// Whether it has reported its rollout: its status was written by a reconcile (it has
    /// conditions, or lists or counts its Applications). One just created has not, and none
    /// of its steps is complete until it has.
    #[serde(default)]
    pub reported: bool,
    /// Its `status.applicationStatus`; past its `--rollout-status-limit`, the entries its
    /// Applications hold when a `matchLabels` needs them, else empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_status: Vec<ApplicationSetApplicationStatus>,
    /// Its `status.applicationStatusSummary`: the counts per step, state and revision, when it
    /// has more Applications than `applicationStatus` may list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<StepRolloutSummary>,
    /// Its `status.rolloutSteps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_status: Vec<RolloutStepStatus>,
    /// Its `status.rolloutRollback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RolloutRollback>,
    /// The labels of its Applications, by name (read for `matchLabels`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, BTreeMap<String, String>>,
}

/// Where one dependency on another ApplicationSet's step stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// That step is complete (on the revision and labels asked for).
    Met,
    /// Not yet: what it waits for.
    Waiting(String),
    /// It can never be met as written: the reason of the `InvalidRolloutDependency` condition
    /// and what is wrong.
    Broken(DependencyProblem, String),
}

/// Why a dependency on another ApplicationSet's step can never be met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DependencyProblem {
    /// No ApplicationSet of that name in that namespace.
    ApplicationSetNotFound,
    /// The ApplicationSet has no RollingSync step of that name (or number).
    StepNotFound,
    /// The project of the waiting ApplicationSet does not permit that namespace.
    NamespaceNotPermitted,
    /// That step waits, directly or through its steps, for the waiting step.
    DependencyCycle,
}

impl DependencyProblem {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 4] = [
        Self::ApplicationSetNotFound,
        Self::StepNotFound,
        Self::NamespaceNotPermitted,
        Self::DependencyCycle,
    ];

    /// The reason, as written in the condition.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApplicationSetNotFound => "ApplicationSetNotFound",
            Self::StepNotFound => "StepNotFound",
            Self::NamespaceNotPermitted => "NamespaceNotPermitted",
            Self::DependencyCycle => "DependencyCycle",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::ApplicationSetNotFound => {
                "A step's `dependsOn` names an ApplicationSet that does not exist; the step waits."
            }
            Self::StepNotFound => {
                "A step's `dependsOn` names a step the other ApplicationSet does not have; the step waits."
            }
            Self::NamespaceNotPermitted => {
                "A step's `dependsOn` names an ApplicationSet in a namespace the project's `sourceNamespaces` does not permit; the step waits."
            }
            Self::DependencyCycle => {
                "The other ApplicationSet's step waits, directly or through its own steps, for the waiting step: neither can open."
            }
        }
    }
}

/// The waiting side of a dependency: this ApplicationSet, its strategy and the step.
pub struct Waiter<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub config: &'a RolloutConfig,
    /// The waiting step, 0-based.
    pub step: usize,
    /// The revisions the waiting step's Applications target (`sameRevision`).
    pub revisions: &'a BTreeSet<String>,
}

/// `platform step database`, or `team-a/platform step database` in another namespace.
#[must_use]
pub fn dependency_label(dependency: &ApplicationSetStep, own_namespace: &str) -> String {
    let namespace = dependency
        .namespace
        .as_deref()
        .filter(|n| *n != own_namespace)
        .map_or_else(String::new, |n| format!("{n}/"));
    format!(
        "ApplicationSet {namespace}{} step {}",
        dependency.application_set, dependency.step
    )
}

/// The namespace a dependency names (this ApplicationSet's when unset).
#[must_use]
pub fn dependency_namespace<'a>(dependency: &'a ApplicationSetStep, own: &'a str) -> &'a str {
    dependency.namespace.as_deref().unwrap_or(own)
}

/// Whether this ApplicationSet (in `own`, generating Applications of `project`) may wait for
/// an ApplicationSet in `namespace`: its own namespace always; another when the project's
/// `sourceNamespaces` permits it, as for Applications in that namespace.
///
/// # Errors
/// Why not, naming the project's rule.
pub fn permitted_namespace(
    projects: &Projects,
    project: &str,
    own: &str,
    namespace: &str,
) -> Result<(), String> {
    if namespace == own {
        return Ok(());
    }
    let spec = projects.get(project).map_err(|error| error.to_string())?;
    permit_source_namespace(project, &spec, Some(own), Some(namespace), projects.memos())
        .map_err(|refusal| refusal.to_string())
}

/// Where `dependency` of `waiter` stands, given what was read of the ApplicationSets named.
#[must_use]
pub fn judge(
    dependency: &ApplicationSetStep,
    waiter: &Waiter<'_>,
    read: &[ExternalApplicationSet],
) -> Verdict {
    let label = dependency_label(dependency, waiter.namespace);
    let namespace = dependency_namespace(dependency, waiter.namespace);
    let found = read
        .iter()
        .find(|r| r.namespace == namespace && r.name == dependency.application_set);
    let rollout = match found.map(|r| &r.lookup) {
        Some(Lookup::Found(rollout)) => rollout,
        Some(Lookup::NotPermitted { rule }) => {
            return Verdict::Broken(
                DependencyProblem::NamespaceNotPermitted,
                format!("{label}: namespace {namespace} is not permitted: {rule}"),
            );
        }
        Some(Lookup::NotFound) | None => {
            return Verdict::Broken(
                DependencyProblem::ApplicationSetNotFound,
                format!(
                    "{label}: there is no ApplicationSet {} in namespace {namespace}",
                    dependency.application_set
                ),
            );
        }
    };
    let config = match rollout.strategy.as_ref().map(RolloutConfig::from_strategy) {
        Some(Ok(config)) => config,
        Some(Err(error)) => {
            return Verdict::Waiting(format!("{label}: its strategy cannot be followed: {error}"));
        }
        None => {
            return Verdict::Broken(
                DependencyProblem::StepNotFound,
                format!("{label}: it has no RollingSync steps"),
            );
        }
    };
    let Some(step) = step_index(&config, &dependency.step) else {
        let names: Vec<String> = config.steps.iter().map(|s| s.label()).collect();
        return Verdict::Broken(
            DependencyProblem::StepNotFound,
            format!("{label}: it has no such step ({})", names.join(", ")),
        );
    };
    if let Some(cycle) = cycle(
        waiter,
        read,
        (namespace, &dependency.application_set),
        &config,
        step,
    ) {
        return Verdict::Broken(
            DependencyProblem::DependencyCycle,
            format!("{label}: {cycle}"),
        );
    }
    if !rollout.reported {
        return Verdict::Waiting(format!("{label}: it has not reported a rollout yet"));
    }
    if let Some(rollback) = &rollout.rollback {
        return Verdict::Waiting(format!(
            "{label}: its step {} failed and was rolled back",
            rollback.failed_step
        ));
    }
    let mut waits = Vec::new();
    for ancestor in graph::ancestors(&config.steps, step) {
        if let Some(text) = incomplete(rollout, &config, ancestor, None, waiter) {
            waits.push(text);
        }
    }
    if let Some(text) = incomplete(rollout, &config, step, Some(dependency), waiter) {
        waits.push(text);
    }
    if waits.is_empty() {
        Verdict::Met
    } else {
        Verdict::Waiting(format!("{label}: {}", waits.join("; ")))
    }
}

/// The step (0-based) named `name`, or numbered so when no step has that name.
fn step_index(config: &RolloutConfig, name: &str) -> Option<usize> {
    let name = name.trim();
    config
        .steps
        .iter()
        .position(|s| s.name.as_deref() == Some(name))
        .or_else(|| {
            let number = name.parse::<usize>().ok()?;
            (1..=config.steps.len())
                .contains(&number)
                .then(|| number - 1)
        })
}

/// How step `step` of the other ApplicationSet is not complete, `None` when it is. The
/// dependency's `revision`, `sameRevision` and `matchLabels` apply to the step named
/// (`dependency`), not to the steps it waits for.
fn incomplete(
    rollout: &ExternalRollout,
    config: &RolloutConfig,
    step: usize,
    dependency: Option<&ApplicationSetStep>,
    waiter: &Waiter<'_>,
) -> Option<String> {
    let number = (step + 1).to_string();
    let labels = dependency
        .map(|d| &d.match_labels)
        .filter(|l| !l.is_empty());
    let members: Vec<&ApplicationSetApplicationStatus> = rollout
        .application_status
        .iter()
        .filter(|entry| entry.step == number)
        .filter(|entry| {
            labels.is_none_or(|wanted| {
                rollout
                    .labels
                    .get(&entry.application)
                    .is_some_and(|has| wanted.iter().all(|(k, v)| has.get(k) == Some(v)))
            })
        })
        .collect();
    let named = config.steps[step].label();
    if rollout.application_status.is_empty() && !rollout.summary.is_empty() {
        let counts = rollout.summary.iter().find(|s| s.step == number);
        if let Some(waits) = summarised(counts, &named, dependency, waiter) {
            return Some(waits);
        }
        if counts.is_none_or(|c| c.healthy == 0) {
            // A step with no Applications.
            return None;
        }
        return settled(rollout, config, step, &named);
    }
    if let Some(wanted) = labels
        && members.is_empty()
    {
        let wanted: Vec<String> = wanted.iter().map(|(k, v)| format!("{k}={v}")).collect();
        return Some(format!(
            "{named} has no Application labelled {}",
            wanted.join(",")
        ));
    }
    let not_healthy: Vec<String> = members
        .iter()
        .filter(|e| e.status != State::Healthy)
        .map(|e| format!("{} {}", e.application, e.status.as_str()))
        .collect();
    if !not_healthy.is_empty() {
        return Some(format!(
            "{named}: {} of {} not Healthy yet ({})",
            not_healthy.len(),
            members.len(),
            shortened(&not_healthy)
        ));
    }
    let targets: Vec<(String, &[String])> = members
        .iter()
        .map(|e| (e.application.clone(), e.target_revisions.as_slice()))
        .collect();
    if let Some(waits) = off_revision(&named, dependency, waiter, &targets) {
        return Some(waits);
    }
    if members.is_empty() {
        return None;
    }
    settled(rollout, config, step, &named)
}

/// How step `step` (its Applications all Healthy, and it has some) is not complete yet: failed,
/// baking or analysing; `None` when it is.
fn settled(
    rollout: &ExternalRollout,
    config: &RolloutConfig,
    step: usize,
    named: &str,
) -> Option<String> {
    let record = rollout
        .step_status
        .iter()
        .find(|r| usize::try_from(r.step).is_ok_and(|s| s == step + 1));
    let settings = &config.steps[step];
    if record.is_some_and(|r| r.failed_at.is_some()) {
        return Some(format!("{named} failed"));
    }
    if settings.bake_time.is_some() && record.is_none_or(|r| r.baked_at.is_none()) {
        return Some(format!("{named} bakes"));
    }
    if settings.analysis.is_some()
        && record
            .and_then(|r| r.analysis.as_ref())
            .is_none_or(|a| a.passed_at.is_none())
    {
        return Some(format!("{named} analyses"));
    }
    None
}

/// How the step's Applications `targets` (who, and the revisions they target) do not meet
/// `dependency`'s `revision` or `sameRevision` (the waiting step's revisions, `waiter`):
/// `None` when they do.
fn off_revision(
    named: &str,
    dependency: Option<&ApplicationSetStep>,
    waiter: &Waiter<'_>,
    targets: &[(String, &[String])],
) -> Option<String> {
    let elsewhere = |on: &dyn Fn(&[String]) -> bool| -> Vec<String> {
        targets
            .iter()
            .filter(|(_, revisions)| !on(revisions))
            .map(|(who, revisions)| format!("{who} on {}", revisions.join(",")))
            .collect()
    };
    if let Some(revision) = dependency.and_then(|d| d.revision.as_deref()) {
        let elsewhere = elsewhere(&|revisions| revisions.iter().any(|r| same(r, revision)));
        if !elsewhere.is_empty() {
            return Some(format!(
                "{named} is not on revision {revision} yet ({})",
                shortened(&elsewhere)
            ));
        }
    }
    if dependency.is_some_and(|d| d.same_revision) {
        let elsewhere = elsewhere(&|revisions| {
            // Neither side knowing a revision (a local directory) is the same.
            (revisions.is_empty() && waiter.revisions.is_empty())
                || revisions.iter().any(|r| waiter.revisions.contains(r))
        });
        if !elsewhere.is_empty() {
            let ours: Vec<&str> = waiter.revisions.iter().map(String::as_str).collect();
            return Some(format!(
                "{named} is not on this step's revision {} yet ({})",
                ours.join(","),
                shortened(&elsewhere)
            ));
        }
    }
    None
}

/// How a step of a rollout whose Applications are only counted ([`ExternalRollout::summary`];
/// `counts` are the step's) is not complete by those counts: Applications not Healthy, or not
/// on the revision `dependency` asks for (counted by revision). A label condition is judged
/// from the Applications' own entries, which the controller reads for it: here, none had one.
/// `None` when every Application it has is Healthy and on the revision.
fn summarised(
    counts: Option<&StepRolloutSummary>,
    named: &str,
    dependency: Option<&ApplicationSetStep>,
    waiter: &Waiter<'_>,
) -> Option<String> {
    if dependency.is_some_and(|d| !d.match_labels.is_empty()) {
        // The controller reads the entries from the Applications for a label condition: none
        // holds its entry yet.
        return Some(format!(
            "{named}: none of its Applications holds its rollout state yet, so a label \
             condition cannot be checked"
        ));
    }
    let counts = counts?;
    let not_healthy = counts.waiting + counts.pending + counts.progressing;
    let all = not_healthy + counts.healthy;
    if not_healthy > 0 {
        return Some(format!("{named}: {not_healthy} of {all} not Healthy yet"));
    }
    if dependency.is_none_or(|d| d.revision.is_none() && !d.same_revision) {
        return None;
    }
    if counts.revisions.iter().map(|r| r.applications).sum::<u32>() != all {
        return Some(format!(
            "{named}: its Applications are only counted, not by revision (they target more \
             than {MAX_COUNTED_REVISIONS} sets of revisions), so a revision condition cannot \
             be checked"
        ));
    }
    let targets: Vec<(String, &[String])> = counts
        .revisions
        .iter()
        .map(|r| {
            let who = match r.applications {
                1 => "1 Application".to_owned(),
                n => format!("{n} Applications"),
            };
            (who, r.target_revisions.as_slice())
        })
        .collect();
    off_revision(named, dependency, waiter, &targets)
}

/// `revision` as written in status is `wanted`, or a commit that starts with it.
fn same(revision: &str, wanted: &str) -> bool {
    revision == wanted
        || (wanted.len() >= 7
            && wanted.bytes().all(|b| b.is_ascii_hexdigit())
            && revision.starts_with(wanted))
}

/// The first few of `items`, then how many more.
fn shortened(items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// The cycle through which step `step` of the other ApplicationSet `name` (in `namespace`)
/// waits for the waiting step: it, or a step it waits for, names a step of another
/// ApplicationSet — followed through those in `read`, as far as they go — until one names a
/// step of the waiting ApplicationSet that is the waiting step or waits for it. Cycles through
/// an ApplicationSet that was not read are not seen.
fn cycle(
    waiter: &Waiter<'_>,
    read: &[ExternalApplicationSet],
    (namespace, name): (&str, &str),
    config: &RolloutConfig,
    step: usize,
) -> Option<String> {
    let waited_by_waiter = |ours: usize| {
        ours == waiter.step || graph::ancestors(&waiter.config.steps, ours).contains(&waiter.step)
    };
    let config_of = |namespace: &str, name: &str| -> Option<RolloutConfig> {
        if namespace == waiter.namespace && name == waiter.name {
            return Some(waiter.config.clone());
        }
        let found = read
            .iter()
            .find(|r| r.namespace == namespace && r.name == name)?;
        match &found.lookup {
            Lookup::Found(rollout) => RolloutConfig::from_strategy(rollout.strategy.as_ref()?).ok(),
            Lookup::NotPermitted { .. } | Lookup::NotFound => None,
        }
    };
    // Depth first over (namespace, ApplicationSet, step), each with how it was reached.
    let mut seen = BTreeSet::new();
    let mut todo = vec![(
        namespace.to_owned(),
        name.to_owned(),
        config.clone(),
        step,
        None::<String>,
    )];
    while let Some((namespace, name, config, step, said)) = todo.pop() {
        if !seen.insert((namespace.clone(), name.clone(), step)) {
            continue;
        }
        for theirs in std::iter::once(step).chain(graph::ancestors(&config.steps, step)) {
            for back in &config.steps[theirs].external {
                let (back_namespace, back_name) = (
                    dependency_namespace(back, &namespace),
                    back.application_set.as_str(),
                );
                let Some(next) = config_of(back_namespace, back_name) else {
                    continue;
                };
                let Some(target) = step_index(&next, &back.step) else {
                    continue;
                };
                let shown = if back_namespace == waiter.namespace {
                    back_name.to_owned()
                } else {
                    format!("{back_namespace}/{back_name}")
                };
                let hop = format!(
                    "{} waits for {} of {shown}",
                    said.as_ref().map_or_else(
                        || format!("its {}", config.steps[theirs].label()),
                        |said| format!("{said}, which")
                    ),
                    next.steps[target].label(),
                );
                let back_to_waiter = back_namespace == waiter.namespace && back_name == waiter.name;
                if back_to_waiter && waited_by_waiter(target) {
                    return Some(format!(
                        "{hop}, which waits for it: a cycle across ApplicationSets"
                    ));
                }
                todo.push((
                    back_namespace.to_owned(),
                    back_name.to_owned(),
                    next,
                    target,
                    Some(hop),
                ));
            }
        }
    }
    None
}

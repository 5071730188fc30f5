//! The metrics reference page: every metric of the controller's registry as `/metrics` declares
//! it (name, type, help), with its labels. A family appears on `/metrics` once it has a sample,
//! so the page renders a registry given one sample of each.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::markdown::{code, generated_note, table};
use crate::controller::runtime::metrics::{Metrics, Reconciler};

/// The exposition of a registry with one sample in each family.
fn sampled() -> String {
    let metrics = Metrics::default();
    metrics.reconciled(None);
    metrics.application_reconciled(None);
    metrics.observe_reconcile(Reconciler::Application, Duration::ZERO);
    let _slow = metrics.slow_reconcile(Reconciler::Application);
    metrics.count_applications_with(
        "docs",
        Box::new(|| BTreeMap::from([(("Synced".to_owned(), "Healthy".to_owned()), 1)])),
    );
    metrics.synced("Succeeded");
    metrics.webhook("github", "refreshed");
    metrics.notification("on-step-started", "webhook.ops", "delivered");
    metrics.render()
}

/// The page.
#[must_use]
pub fn page() -> String {
    let exposition = sampled();
    let mut help = BTreeMap::new();
    let mut kinds = Vec::new();
    let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help.insert(name.to_owned(), text.trim_end_matches('.').to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            kinds.push((name.to_owned(), kind.to_owned()));
        } else if let Some((sample, rest)) = line.split_once('{') {
            let family = kinds.last().map_or(sample, |(name, _)| name.as_str());
            let set = labels.entry(family.to_owned()).or_default();
            for pair in rest.split('}').next().unwrap_or_default().split(',') {
                if let Some((label, _)) = pair.split_once('=')
                    && label != "le"
                {
                    set.insert(label.to_owned());
                }
            }
        }
    }
    let rows: Vec<Vec<String>> = kinds
        .iter()
        .map(|(name, kind)| {
            let sample = match kind.as_str() {
                "counter" => format!("{name}_total"),
                "histogram" => format!("{name}_bucket, {name}_sum, {name}_count"),
                _ => name.clone(),
            };
            let label_names: Vec<String> = labels
                .get(name)
                .into_iter()
                .flatten()
                .map(|label| code(label))
                .collect();
            vec![
                code(&sample),
                kind.clone(),
                label_names.join(", "),
                help.get(name).cloned().unwrap_or_default(),
            ]
        })
        .collect();
    format!(
        "# Metrics\n\n{}`flotilla controller --metrics-addr ADDR` serves them at `/metrics` in the \
         OpenMetrics text format, with `/healthz` and `/readyz` (ready once the replica has read \
         its Lease: leading or standing by). The `result` label of the reconcile counters is `ok` \
         or the failed step's reason ([reasons](reasons.md)); Applications are counted by sync and \
         health status when scraped.\n\n{}",
        generated_note(),
        table(&["Metric", "Type", "Labels", "Help"], &rows)
    )
}

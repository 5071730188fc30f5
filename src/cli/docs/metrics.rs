//! The metrics reference page: every metric of the controller's registry as `/metrics` declares
//! it (name, type, help), with its labels. The exposition declares every registered family, but
//! a family's labels show only in its samples, so the page renders a registry given one sample
//! of each; a test fails when a registered family has none.

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
    // The API counters are process-wide: a server's counters exist once a client to it does.
    let _ = crate::cluster::api_server::api_requests::ServerCounters::for_server(
        "https://kubernetes.default.svc/",
    );
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

#[cfg(test)]
mod tests {
    use super::sampled;

    /// The families of an exposition that have no sample: their labels would be missing from the
    /// page.
    fn unsampled(exposition: &str) -> Vec<String> {
        let mut families: Vec<(String, bool)> = Vec::new();
        for line in exposition.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap_or(rest);
                families.push((name.to_owned(), false));
            } else if !line.starts_with('#')
                && let Some((name, seen)) = families.last_mut()
                && line.starts_with(name.as_str())
            {
                *seen = true;
            }
        }
        families
            .into_iter()
            .filter(|(_, seen)| !seen)
            .map(|(name, _)| name)
            .collect()
    }

    #[test]
    fn every_registered_family_is_sampled_so_the_page_shows_its_labels() {
        let missing = unsampled(&sampled());
        assert!(
            missing.is_empty(),
            "give {missing:?} a sample in `sampled()`: a family without one shows no labels"
        );
    }

    #[test]
    fn a_family_without_a_sample_is_found() {
        let exposition = "# HELP a_total A.\n# TYPE a counter\na_total{result=\"ok\"} 1\n\
                          # HELP b B.\n# TYPE b gauge\n# EOF\n";
        assert_eq!(unsampled(exposition), vec!["b".to_owned()]);
    }
}

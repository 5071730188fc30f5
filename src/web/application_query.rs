//! Which Applications a list page shows: the filters of its address (`name` substring, `label`
//! selector in kubectl's `-l` syntax, `health`, `sync`, `project`, destination `cluster`,
//! RollingSync `step`) and its `page`, read from and written back to the query string (so a
//! filtered page is a link), and the selection they make of the watched Applications — the
//! page of rows, how many matched, and the matches counted by health and by sync. Pure: it
//! selects from what the watches hold, never from the API server.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_layout::on_applications;

use super::fleet::{health_status, sync_status};
use super::label_filter::{LabelFilterError, parse, selects};
use super::routes::{parameter, percent_decode};

/// How many Applications one page lists.
pub const PAGE_SIZE: usize = 50;

/// The filters and page of a list of Applications, as its address carries them. Empty fields
/// filter nothing; pages count from 1.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplicationQuery {
    /// A part of the Application's name.
    pub name: String,
    /// A label selector (`team=payments,tier!=db`).
    pub label: String,
    /// The health status, exactly (`Healthy`, `Degraded`, …).
    pub health: String,
    /// The sync status, exactly (`Synced`, `OutOfSync`, `Unknown`).
    pub sync: String,
    /// The AppProject.
    pub project: String,
    /// The destination cluster, by name or server URL.
    pub cluster: String,
    /// The RollingSync step the Application's ApplicationSet put it in (`1`, `2`, …).
    pub step: String,
    /// The page, from 1 (0 is read as 1).
    pub page: usize,
}

/// The names of the filters in an address, in the order they are written back.
const FILTERS: [&str; 7] = [
    "name", "label", "health", "sync", "project", "cluster", "step",
];

impl ApplicationQuery {
    /// The query of an address's query string (without the `?`); unknown keys are ignored,
    /// a missing or unreadable page is page 1.
    #[must_use]
    pub fn parse(query: Option<&str>) -> Self {
        let query = query.unwrap_or_default();
        let get = |key: &str| {
            parameter(query, key)
                .map(|value| value.trim().to_owned())
                .unwrap_or_default()
        };
        Self {
            name: get("name"),
            label: get("label"),
            health: get("health"),
            sync: get("sync"),
            project: get("project"),
            cluster: get("cluster"),
            step: get("step"),
            page: get("page")
                .parse()
                .ok()
                .filter(|page| *page >= 1)
                .unwrap_or(1),
        }
    }

    /// The filter's value called `key` (one of [`FILTERS`]).
    fn filter(&self, key: &str) -> &str {
        match key {
            "name" => &self.name,
            "label" => &self.label,
            "health" => &self.health,
            "sync" => &self.sync,
            "project" => &self.project,
            "cluster" => &self.cluster,
            _ => &self.step,
        }
    }

    /// The query string (with its `?`, or empty) of these filters at `page`: the filters that
    /// are set, percent-encoded, and the page when it is not the first.
    #[must_use]
    pub fn to_query(&self, page: usize) -> String {
        let mut pairs: Vec<String> = FILTERS
            .iter()
            .filter(|key| !self.filter(key).is_empty())
            .map(|key| format!("{key}={}", percent_encode(self.filter(key))))
            .collect();
        if page > 1 {
            pairs.push(format!("page={page}"));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }

    /// The value of filter `key` for a form field (`""` when unset).
    #[must_use]
    pub fn value(&self, key: &str) -> &str {
        self.filter(key)
    }
}

/// What a query selects.
#[derive(Debug)]
pub struct Selection<'a> {
    /// The Applications of the page asked for (the last page when it asked past the end).
    pub rows: Vec<&'a Application>,
    /// How many Applications match every filter.
    pub matched: usize,
    /// The page shown, from 1.
    pub page: usize,
    /// How many pages the matches fill (at least 1).
    pub pages: usize,
    /// The matches counted by health status.
    pub health: BTreeMap<String, usize>,
    /// The matches counted by sync status.
    pub sync: BTreeMap<String, usize>,
}

/// The RollingSync step of each Application, by name, as its ApplicationSet's status records
/// it: in `status.applicationStatus`, or — past the controller's `--rollout-status-limit`,
/// where that list is summarised — in the Application's own `status.rollout` (of
/// `applications`).
#[must_use]
pub fn steps<'a>(
    appsets: impl IntoIterator<Item = &'a ApplicationSet>,
    applications: impl IntoIterator<Item = &'a Application>,
) -> HashMap<&'a str, &'a str> {
    let mut steps = HashMap::new();
    let mut kept_on_applications = HashSet::new();
    for appset in appsets {
        let Some(status) = appset.status.as_ref() else {
            continue;
        };
        if on_applications(status) {
            kept_on_applications.insert(appset.metadata.name.as_deref().unwrap_or_default());
        }
        steps.extend(
            status
                .application_status
                .iter()
                .map(|entry| (entry.application.as_str(), entry.step.as_str())),
        );
    }
    for application in applications {
        let entry = application.status.as_ref().and_then(|s| s.rollout.as_ref());
        if let Some(entry) = entry
            && application_set(application).is_some_and(|a| kept_on_applications.contains(a))
        {
            steps.insert(entry.application.as_str(), entry.step.as_str());
        }
    }
    steps
}

/// The destination cluster of `application`: its name, else its server URL.
#[must_use]
pub fn cluster(application: &Application) -> &str {
    let destination = &application.spec.destination;
    destination
        .name
        .as_deref()
        .or(destination.server.as_deref())
        .unwrap_or_default()
}

/// The ApplicationSet that generated `application` (its label), if any.
#[must_use]
pub fn application_set(application: &Application) -> Option<&str> {
    application
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(APPLICATION_SET_LABEL))
        .map(String::as_str)
}

/// The Applications of `applications` (in their order) that pass every filter of `query`, the
/// page it asks for, and the counts; `steps` gives each Application's step ([`steps`]).
///
/// # Errors
/// The label filter cannot be read.
pub fn select<'a>(
    query: &ApplicationQuery,
    applications: impl IntoIterator<Item = &'a Application>,
    steps: &HashMap<&str, &str>,
) -> Result<Selection<'a>, LabelFilterError> {
    let selector = parse(&query.label)?;
    let name = query.name.to_lowercase();
    let matches = |application: &&'a Application| {
        let own_name = application.metadata.name.as_deref().unwrap_or_default();
        (name.is_empty() || own_name.to_lowercase().contains(&name))
            && (query.health.is_empty() || health_status(application) == query.health)
            && (query.sync.is_empty() || sync_status(application) == query.sync)
            && (query.project.is_empty() || application.spec.project == query.project)
            && (query.cluster.is_empty() || cluster(application) == query.cluster)
            && (query.step.is_empty()
                || steps.get(own_name).is_some_and(|step| *step == query.step))
            && selects(&selector, application.metadata.labels.as_ref())
    };
    let mut selection = Selection {
        rows: Vec::new(),
        matched: 0,
        page: 1,
        pages: 1,
        health: BTreeMap::new(),
        sync: BTreeMap::new(),
    };
    let mut matched: Vec<&'a Application> = Vec::new();
    for application in applications.into_iter().filter(matches) {
        *selection
            .health
            .entry(health_status(application).to_owned())
            .or_default() += 1;
        *selection
            .sync
            .entry(sync_status(application).to_owned())
            .or_default() += 1;
        matched.push(application);
    }
    selection.matched = matched.len();
    selection.pages = matched.len().div_ceil(PAGE_SIZE).max(1);
    selection.page = query.page.clamp(1, selection.pages);
    selection.rows = matched
        .into_iter()
        .skip((selection.page - 1) * PAGE_SIZE)
        .take(PAGE_SIZE)
        .collect();
    Ok(selection)
}

/// `text` with every byte but unreserved ones (`A-Z a-z 0-9 - . _ ~`) percent-encoded, for a
/// query string value; [`percent_decode`] reads it back.
#[must_use]
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    debug_assert_eq!(percent_decode(&out), text);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    /// Application `app-NNNNN` of ten thousand: team `t{i % 10}`, health and sync by `i % 4`
    /// and `i % 3`, project `p{i % 5}`, cluster `c{i % 7}`; the ApplicationSet's status puts it
    /// in step `i % 3 + 1`.
    fn fleet(count: usize) -> (Vec<Arc<Application>>, ApplicationSet) {
        const HEALTH: [&str; 4] = ["Healthy", "Progressing", "Degraded", "Missing"];
        const SYNC: [&str; 3] = ["Synced", "OutOfSync", "Unknown"];
        let applications = (0..count)
            .map(|i| {
                Arc::new(
                    serde_json::from_value(json!({
                        "apiVersion": "flotilla.dev/v1alpha1",
                        "kind": "Application",
                        "metadata": {"name": format!("app-{i:05}"),
                                     "labels": {"team": format!("t{}", i % 10)}},
                        "spec": {
                            "project": format!("p{}", i % 5),
                            "source": {"repoURL": "r", "path": "p", "targetRevision": "main"},
                            "destination": {"name": format!("c{}", i % 7), "namespace": "n"},
                        },
                        "status": {
                            "health": {"status": HEALTH[i % 4]},
                            "sync": {"status": SYNC[i % 3], "revision": "abc"},
                        },
                    }))
                    .expect("a valid Application"),
                )
            })
            .collect();
        let entries: Vec<_> = (0..count)
            .map(|i| {
                json!({"application": format!("app-{i:05}"), "status": "Healthy",
                       "step": (i % 3 + 1).to_string(), "message": ""})
            })
            .collect();
        let appset = serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": "fleet"},
            "spec": {"generators": [], "template": {"metadata": {"name": "x"},
                     "spec": {"project": "p", "source": {"repoURL": "r"}, "destination": {}}}},
            "status": {"applicationStatus": entries},
        }))
        .expect("a valid ApplicationSet");
        (applications, appset)
    }

    fn names(selection: &Selection<'_>) -> Vec<String> {
        selection
            .rows
            .iter()
            .map(|a| a.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn ten_thousand_applications_filter_by_label_count_and_page() {
        let (applications, appset) = fleet(10_000);
        let steps = steps([&appset], []);
        let apps = || applications.iter().map(AsRef::as_ref);
        let query = ApplicationQuery::parse(Some("label=team%3Dt3"));
        let first = select(&query, apps(), &steps).unwrap();
        assert_eq!(first.matched, 1_000);
        assert_eq!(first.pages, 20);
        assert_eq!(first.rows.len(), PAGE_SIZE);
        assert_eq!(first.health.values().sum::<usize>(), 1_000);
        assert_eq!(first.sync.values().sum::<usize>(), 1_000);
        let second = select(
            &ApplicationQuery::parse(Some("label=team%3Dt3&page=2")),
            apps(),
            &steps,
        )
        .unwrap();
        assert_eq!(names(&first)[0], "app-00003");
        assert_eq!(names(&second)[0], "app-00503");
        assert!(
            names(&first)
                .iter()
                .all(|name| !names(&second).contains(name))
        );
        // Every filter at once: i ≡ 3 (mod 10), health Degraded (i ≡ 2 mod 4) cannot hold with
        // an odd i; Progressing (i ≡ 1 mod 4), Synced (i ≡ 0 mod 3), p3 (i ≡ 3 mod 5),
        // cluster c5 (i ≡ 5 mod 7), step 1 (i ≡ 0 mod 3), name containing "9".
        let all = select(
            &ApplicationQuery::parse(Some(
                "label=team%3Dt3&health=Progressing&sync=Synced&project=p3&cluster=c5&step=1&name=9",
            )),
            apps(),
            &steps,
        )
        .unwrap();
        let expected: Vec<String> = (0..10_000usize)
            .filter(|i| i % 10 == 3 && i % 4 == 1 && i % 3 == 0 && i % 7 == 5)
            .map(|i| format!("app-{i:05}"))
            .filter(|name| name.contains('9'))
            .collect();
        assert_eq!(all.matched, expected.len());
        assert_eq!(names(&all), expected);
        assert_eq!(all.health.keys().collect::<Vec<_>>(), ["Progressing"]);
    }

    #[test]
    fn a_page_past_the_end_shows_the_last_and_a_bad_label_is_an_error() {
        let (applications, appset) = fleet(120);
        let steps = steps([&appset], []);
        let apps = || applications.iter().map(AsRef::as_ref);
        let last = select(&ApplicationQuery::parse(Some("page=9")), apps(), &steps).unwrap();
        assert_eq!((last.page, last.pages, last.rows.len()), (3, 3, 20));
        let none = select(&ApplicationQuery::parse(Some("name=zzz")), apps(), &steps).unwrap();
        assert_eq!((none.matched, none.page, none.pages), (0, 1, 1));
        assert!(
            select(
                &ApplicationQuery::parse(Some("label=%2C%2C")),
                apps(),
                &steps
            )
            .is_err()
        );
    }

    #[test]
    fn the_query_string_round_trips() {
        let query = ApplicationQuery::parse(Some(
            "name=a+b&label=team%3Dpay%2Ctier%21%3Ddb&health=Degraded&step=2&page=3&other=x",
        ));
        assert_eq!(query.name, "a b");
        assert_eq!(query.label, "team=pay,tier!=db");
        assert_eq!(query.page, 3);
        let written = query.to_query(query.page);
        assert_eq!(
            written,
            "?name=a%20b&label=team%3Dpay%2Ctier%21%3Ddb&health=Degraded&step=2&page=3"
        );
        assert_eq!(ApplicationQuery::parse(written.strip_prefix('?')), query);
        assert_eq!(ApplicationQuery::default().to_query(1), "");
        assert_eq!(ApplicationQuery::parse(Some("page=0")).page, 1);
    }
}

//! One revision string for many sources: a multi-source Application's revisions (commits, chart
//! versions) travel through the engine joined by commas, which neither ever holds, and are
//! stored split again as Argo CD's `revisions` lists.

/// The separator of joined revisions.
pub const SEPARATOR: char = ',';

/// `revisions` as one string (a multi-source Application's revision as the engine keeps it).
#[must_use]
pub fn join(revisions: &[String]) -> String {
    revisions.join(&SEPARATOR.to_string())
}

/// The revision of each source, from a joined string; a single revision (an Application with
/// one source) gives an empty list.
#[must_use]
pub fn split_revisions(revision: &str) -> Vec<String> {
    if revision.contains(SEPARATOR) {
        revision.split(SEPARATOR).map(str::to_owned).collect()
    } else {
        Vec::new()
    }
}

//! Which rendered Applications their projects admit: the ApplicationSet controller creates
//! and updates only those, and reports the rest (as Argo CD's ApplicationSet controller skips
//! Applications that fail validation); `flotilla render` and `simulate` do the same offline.

use kube::ResourceExt;

use crate::cluster::destinations::destination::identity;
use flotilla_core::api::Application;
use flotilla_core::project::{ProjectScope, Projects, Refusal, admit};
use flotilla_core::secrets::cluster::ClusterSecret;

/// A rendered Application its project refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedApplication {
    pub name: String,
    pub refusal: Refusal,
}

/// Splits `rendered` into the Applications their projects admit and those refused, keeping
/// the order; destinations are identified among `clusters`.
#[must_use]
pub fn admitted(
    rendered: Vec<Application>,
    projects: &Projects,
    clusters: &[ClusterSecret],
) -> (Vec<Application>, Vec<RefusedApplication>) {
    let mut refused = Vec::new();
    let admitted = rendered
        .into_iter()
        .filter(|app| {
            let cluster = identity(&app.spec.destination, clusters);
            let scope = ProjectScope {
                projects,
                cluster: &cluster,
                namespace: app.metadata.namespace.as_deref(),
            };
            match admit(&app.spec, scope) {
                Ok(_) => true,
                Err(refusal) => {
                    refused.push(RefusedApplication {
                        name: app.name_any(),
                        refusal,
                    });
                    false
                }
            }
        })
        .collect();
    (admitted, refused)
}

/// One line for a status condition or the CLI: `N Application(s) refused by their project and
/// not written: NAME: REFUSAL; …`.
#[must_use]
pub fn refusals_message(refused: &[RefusedApplication]) -> String {
    let each: Vec<String> = refused
        .iter()
        .map(|r| format!("{}: {}", r.name, r.refusal))
        .collect();
    format!(
        "{} Application(s) refused by their project and not written: {}",
        refused.len(),
        each.join("; ")
    )
}

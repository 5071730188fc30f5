//! How each field of Flotilla's resources stands against Argo CD's field of the same path: it
//! works as in Argo CD, works differently, is Flotilla's own, or — for an Argo CD field Flotilla
//! does not implement — is refused by name. The reference pages of the CRDs print it beside each
//! field; a field path no entry covers is Flotilla's own.

/// The three kinds whose fields are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Application,
    ApplicationSet,
    AppProject,
}

/// A field's standing against Argo CD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parity {
    /// Argo CD has the field and Flotilla reads it the same way.
    Works,
    /// Argo CD has the field; Flotilla reads it differently (the note says how).
    Differs,
    /// Argo CD has no such field.
    FlotillaOnly,
    /// Argo CD has the field; Flotilla refuses it by name (the CRD or the controller).
    Refused,
}

impl Parity {
    /// How the reference pages write it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Works => "works",
            Self::Differs => "works differently",
            Self::FlotillaOnly => "Flotilla-only",
            Self::Refused => "refused by name",
        }
    }
}

/// One entry: the field at `path` (dotted, `[]` for a list's items) and every field under it,
/// unless a longer entry says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldParity {
    pub kind: Kind,
    pub path: &'static str,
    pub parity: Parity,
    pub note: &'static str,
}

const fn entry(kind: Kind, path: &'static str, parity: Parity, note: &'static str) -> FieldParity {
    FieldParity {
        kind,
        path,
        parity,
        note,
    }
}

use Kind::{AppProject, Application, ApplicationSet};
use Parity::{Differs, FlotillaOnly, Refused, Works};

/// Argo CD's fields and Flotilla's answer, from the migration guide's table.
pub const FIELDS: &[FieldParity] = &[
    // Application
    entry(Application, "spec.project", Works, ""),
    entry(Application, "spec.destination", Works, ""),
    entry(Application, "spec.source", Works, ""),
    entry(Application, "spec.sources", Works, ""),
    entry(
        Application,
        "spec.source.helm",
        Works,
        "the fields listed here work; any other is refused",
    ),
    entry(
        Application,
        "spec.source.helm.skipSchemaValidation",
        Refused,
        "",
    ),
    entry(
        Application,
        "spec.source.kustomize",
        Works,
        "the fields listed here work; any other is refused",
    ),
    entry(
        Application,
        "spec.source.kustomize.forceCommonLabels",
        Works,
        "without it, a label the kustomization's own `commonLabels` sets is refused",
    ),
    entry(
        Application,
        "spec.source.kustomize.forceCommonAnnotations",
        Works,
        "without it, an annotation the kustomization's own `commonAnnotations` sets is refused",
    ),
    entry(
        Application,
        "spec.source.kustomize.version",
        Refused,
        "Flotilla runs one kustomize and reads no `kustomize.path.<version>` setting",
    ),
    entry(
        Application,
        "spec.source.tagPrefix",
        Refused,
        "no semver ranges of git tags",
    ),
    entry(
        Application,
        "spec.source.plugin",
        Differs,
        "the plugins are `ConfigManagementPlugin` files of the controller's `--plugins-dir`, run by the controller itself",
    ),
    entry(Application, "spec.source.plugin.name", Works, ""),
    entry(Application, "spec.source.plugin.env", Works, ""),
    entry(Application, "spec.source.plugin.parameters", Works, ""),
    entry(Application, "spec.source.name", Refused, ""),
    entry(Application, "spec.sourceHydrator", Refused, "no hydrator"),
    entry(
        Application,
        "spec.syncPolicy.automated",
        Works,
        "`enabled: false` suspends automated sync, as `flotilla app rollback --force` sets it",
    ),
    entry(Application, "spec.syncPolicy.retry", Works, ""),
    entry(
        Application,
        "spec.syncPolicy.retry.limit",
        Works,
        "a negative limit retries forever, as in Argo CD",
    ),
    entry(Application, "spec.syncPolicy.retry.refresh", Refused, ""),
    entry(
        Application,
        "spec.syncPolicy.managedNamespaceMetadata",
        Differs,
        "written at every sync (an existing namespace too), kept by server-side apply; a change of it alone does not make the Application OutOfSync — the next sync writes it",
    ),
    entry(
        Application,
        "spec.syncPolicy.syncOptions",
        Works,
        "Argo CD's options; any other is refused by name (`ServerSideApply=true` is always the case)",
    ),
    entry(Application, "spec.ignoreDifferences", Works, ""),
    entry(
        Application,
        "spec.revisionHistoryLimit",
        Works,
        "default 10",
    ),
    entry(Application, "spec.info", Refused, ""),
    entry(
        Application,
        "spec.operation",
        Differs,
        "Argo CD's top-level `operation`, here under `spec` (`flotilla app sync`); a top-level `operation` is refused",
    ),
    entry(Application, "status.conditions", Works, ""),
    entry(Application, "status.health", Works, ""),
    entry(Application, "status.history", Works, ""),
    entry(Application, "status.operationState", Works, ""),
    entry(Application, "status.reconciledAt", Works, ""),
    entry(Application, "status.resources", Works, ""),
    entry(
        Application,
        "status.resources[].firstDifference",
        FlotillaOnly,
        "",
    ),
    entry(Application, "status.sync", Works, ""),
    // ApplicationSet
    entry(ApplicationSet, "spec.generators", Works, ""),
    entry(
        ApplicationSet,
        "spec.generators[].pullRequest.github.appSecretName",
        Refused,
        "GitHub App authentication is not implemented (the controller and `render` refuse it); use `tokenRef`",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].scmProvider.github.appSecretName",
        Refused,
        "GitHub App authentication is not implemented (the controller and `render` refuse it); use `tokenRef`",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].pullRequest.bitbucket",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].pullRequest.azureDevOps",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].pullRequest.caRef",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].pullRequest.filters[].titleMatch",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].pullRequest.continueOnRepoNotFoundError",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].scmProvider.bitbucket",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].scmProvider.azureDevOps",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].scmProvider.awsCodeCommit",
        Refused,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.generators[].scmProvider.caRef",
        Refused,
        "",
    ),
    entry(ApplicationSet, "spec.template", Works, ""),
    entry(
        ApplicationSet,
        "spec.templatePatch",
        Works,
        "what it writes is read strictly: a field Flotilla does not implement is refused by name",
    ),
    entry(
        ApplicationSet,
        "spec.applyNestedSelectors",
        Works,
        "accepted, no effect: nested generators' selectors are always applied (as in Argo CD 3)",
    ),
    entry(ApplicationSet, "spec.goTemplate", Works, ""),
    entry(ApplicationSet, "spec.goTemplateOptions", Works, ""),
    entry(ApplicationSet, "spec.syncPolicy", Works, ""),
    entry(ApplicationSet, "spec.strategy.type", Works, ""),
    entry(
        ApplicationSet,
        "spec.strategy.deletionOrder",
        Works,
        "`Reverse` without `type: RollingSync` and steps is refused (Argo CD ignores it then)",
    ),
    entry(
        ApplicationSet,
        "spec.strategy.removalOrder",
        FlotillaOnly,
        "`Reverse` by default with RollingSync steps; `AllAtOnce` removes as Argo CD does",
    ),
    entry(ApplicationSet, "spec.strategy.rollingSync.steps", Works, ""),
    entry(
        ApplicationSet,
        "spec.strategy.rollingSync.steps[].dependsOn",
        FlotillaOnly,
        "unset: the step before it, as in Argo CD",
    ),
    entry(
        ApplicationSet,
        "spec.strategy.rollingSync.steps[].name",
        FlotillaOnly,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.strategy.rollingSync.steps[].analysis",
        FlotillaOnly,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.strategy.rollingSync.steps[].approval",
        FlotillaOnly,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.strategy.rollingSync.steps[].bakeTime",
        FlotillaOnly,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.strategy.rollingSync.steps[].progressDeadline",
        FlotillaOnly,
        "",
    ),
    entry(
        ApplicationSet,
        "spec.ignoreApplicationDifferences",
        Works,
        "",
    ),
    entry(ApplicationSet, "spec.preservedFields", Works, ""),
    entry(ApplicationSet, "status.conditions", Works, ""),
    entry(ApplicationSet, "status.applicationStatus", Works, ""),
    entry(ApplicationSet, "status.resources", Works, ""),
    entry(ApplicationSet, "status.resourcesCount", Works, ""),
    // AppProject
    entry(AppProject, "spec.description", Works, ""),
    entry(AppProject, "spec.sourceRepos", Works, ""),
    entry(AppProject, "spec.destinations", Works, ""),
    entry(AppProject, "spec.clusterResourceWhitelist", Works, ""),
    entry(AppProject, "spec.clusterResourceBlacklist", Works, ""),
    entry(AppProject, "spec.namespaceResourceWhitelist", Works, ""),
    entry(AppProject, "spec.namespaceResourceBlacklist", Works, ""),
    entry(AppProject, "spec.sourceNamespaces", Works, ""),
    entry(AppProject, "spec.syncWindows", Works, ""),
    entry(AppProject, "spec.syncWindows[].syncOverrun", Refused, ""),
    entry(
        AppProject,
        "spec.roles",
        Refused,
        "Kubernetes RBAC on the resources governs who may change what",
    ),
    entry(
        AppProject,
        "spec.signatureKeys",
        Refused,
        "no commit signatures are verified",
    ),
    entry(
        AppProject,
        "spec.orphanedResources",
        Refused,
        "no orphaned resources are reported",
    ),
    entry(
        AppProject,
        "spec.destinationServiceAccounts",
        Refused,
        "Flotilla does not impersonate",
    ),
    entry(
        AppProject,
        "spec.permitOnlyProjectScopedClusters",
        Refused,
        "",
    ),
];

/// Objects Argo CD has whose fields are decided one by one (an entry here covers the object
/// itself, not what is under it).
const CONTAINERS: &[(Kind, &str)] = &[
    (Application, "spec"),
    (Application, "spec.syncPolicy"),
    (Application, "status"),
    (ApplicationSet, "spec"),
    (ApplicationSet, "spec.strategy"),
    (ApplicationSet, "spec.strategy.rollingSync"),
    (ApplicationSet, "status"),
    (AppProject, "spec"),
];

/// The standing of `kind`'s field at `path`: the longest entry that is the path or one of its
/// ancestors (`spec.source` covers `spec.source.path`, not `spec.sourceHydrator`), or one of
/// Argo CD's objects itself; without one, Flotilla's own.
#[must_use]
pub fn lookup(kind: Kind, path: &str) -> (Parity, &'static str) {
    if CONTAINERS.contains(&(kind, path)) {
        return (Parity::Works, "");
    }
    FIELDS
        .iter()
        .filter(|entry| entry.kind == kind && covers(entry.path, path))
        .max_by_key(|entry| entry.path.len())
        .map_or((Parity::FlotillaOnly, ""), |entry| {
            (entry.parity, entry.note)
        })
}

/// The entries of `kind` refused by name: Argo CD fields the CRD's schema has no place for.
pub fn refused(kind: Kind) -> impl Iterator<Item = &'static FieldParity> {
    FIELDS
        .iter()
        .filter(move |entry| entry.kind == kind && entry.parity == Parity::Refused)
}

/// Whether the entry at `ancestor` covers the field at `path`.
fn covers(ancestor: &str, path: &str) -> bool {
    path.strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with("[]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_covering_entry_decides() {
        assert_eq!(lookup(Application, "spec.source.path").0, Works);
        assert_eq!(
            lookup(Application, "spec.source.helm.skipSchemaValidation").0,
            Refused
        );
        assert_eq!(lookup(Application, "spec.sourceHydrator.x").0, Refused);
        assert_eq!(
            lookup(
                ApplicationSet,
                "spec.strategy.rollingSync.steps[].maxUpdate"
            )
            .0,
            Works
        );
        assert_eq!(
            lookup(ApplicationSet, "spec.strategy.rollingSync.steps[].bakeTime").0,
            FlotillaOnly
        );
        assert_eq!(
            lookup(ApplicationSet, "status.rolloutSteps").0,
            FlotillaOnly
        );
        assert_eq!(lookup(AppProject, "spec.sourceReposX").0, FlotillaOnly);
        assert_eq!(lookup(ApplicationSet, "spec.strategy.rollingSync").0, Works);
        assert_eq!(
            lookup(ApplicationSet, "spec.strategy.rollingSync.onFailure").0,
            FlotillaOnly
        );
        assert_eq!(
            lookup(
                ApplicationSet,
                "spec.strategy.rollingSync.steps[].dependsOn"
            )
            .0,
            FlotillaOnly
        );
    }

    #[test]
    fn every_path_is_written_once() {
        let mut seen = std::collections::BTreeSet::new();
        for entry in FIELDS {
            assert!(
                seen.insert((entry.kind as u8, entry.path)),
                "{:?} {} twice",
                entry.kind,
                entry.path
            );
        }
    }
}

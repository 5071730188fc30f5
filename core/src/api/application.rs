//! The `Application` resource: one source rendered into one destination, synced by the wave/hook
//! engine. Mirrors the fields of Argo CD's Application that users write.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::application_set_status::SyncStatusCode;
use super::retry_policy::RetryPolicy;
use crate::health::HealthStatus;
use crate::manifest::{DirectoryOptions, JsonnetOptions, JsonnetVariable};
use flotilla_generators::duration::{DurationError, parse_seconds_or_duration};

/// Set by `flotilla app terminate` to the id of the running operation; the controller stops that
/// operation and removes the annotation.
pub const TERMINATE_ANNOTATION: &str = "flotilla.dev/terminate";

/// Argo CD's approval of pruning `Prune=confirm` objects and deleting `Delete=confirm` ones: an
/// RFC 3339 time, set by `flotilla app confirm-prune`. It confirms the prunes of an operation
/// that started at or before it, and the deletion of an Application deleted at or before it.
pub const DELETION_APPROVED_ANNOTATION: &str = "argocd.argoproj.io/deletion-approved";

impl Application {
    /// Its `status.history` (empty without a status).
    #[must_use]
    pub fn history(&self) -> &[RevisionHistory] {
        self.status
            .as_ref()
            .map(|status| status.history.as_slice())
            .unwrap_or_default()
    }

    /// The time of [`DELETION_APPROVED_ANNOTATION`], if it is set and parses (an unreadable
    /// value approves nothing).
    #[must_use]
    pub fn deletion_approved(&self) -> Option<k8s_openapi::jiff::Timestamp> {
        self.metadata
            .annotations
            .as_ref()?
            .get(DELETION_APPROVED_ANNOTATION)?
            .parse()
            .ok()
    }
}

/// What to deploy, where, and how to keep it in sync.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flotilla.dev",
    version = "v1alpha1",
    kind = "Application",
    namespaced,
    status = "ApplicationStatus",
    shortname = "fapp",
    shortname = "fapps",
    category = "flotilla",
    printcolumn = r#"{"name":"Sync","type":"string","jsonPath":".status.sync.status"}"#,
    printcolumn = r#"{"name":"Health","type":"string","jsonPath":".status.health.status"}"#,
    printcolumn = r#"{"name":"Revision","type":"string","jsonPath":".status.sync.revision","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    selectable = ".spec.project"
)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// The project the Application belongs to (kept for Argo CD compatibility).
    pub project: String,
    /// The one source; ignored when `sources` is given (as in Argo CD).
    #[serde(default, skip_serializing_if = "ApplicationSource::is_unset")]
    pub source: ApplicationSource,
    /// Several sources whose manifests are combined into one plan (Argo CD's multi-source
    /// Application); a source with `ref` lends its repository to the others' `$ref/…` values
    /// files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<ApplicationSource>,
    pub destination: ApplicationDestination,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<SyncPolicy>,
    /// Fields of the Application's objects that do not count as differences (owned by an
    /// autoscaler, a webhook, another controller); with the sync option
    /// `RespectIgnoreDifferences=true` a sync keeps their live values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_differences: Vec<ResourceIgnoreDifferences>,
    /// A sync requested by a person (`flotilla app sync`) or by a RollingSync rollout. The
    /// controller runs it and clears it. (Argo CD keeps this at the top level as `operation`;
    /// here it lives in the spec, written by its own field manager.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// How many successful syncs `status.history` keeps (Argo CD's `revisionHistoryLimit`;
    /// default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<u32>,
}

impl ApplicationSpec {
    /// How many entries `status.history` keeps: `revisionHistoryLimit`, else [`HISTORY_LIMIT`].
    #[must_use]
    pub fn history_limit(&self) -> usize {
        self.revision_history_limit
            .map_or(HISTORY_LIMIT, |limit| limit as usize)
    }

    /// The sources as a history entry records them: `source`, or `sources` when given.
    #[must_use]
    pub fn deployed_sources(&self) -> (Option<ApplicationSource>, Vec<ApplicationSource>) {
        if self.sources.is_empty() {
            (Some(self.source.clone()), Vec::new())
        } else {
            (None, self.sources.clone())
        }
    }
}

/// Which fields of which objects do not count as differences (Argo CD's `ignoreDifferences`
/// entry).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIgnoreDifferences {
    /// The API group (empty for the core group, `*` for any).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The kind (`*` for any).
    pub kind: String,
    /// Only the object of this name (any when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Only objects in this namespace (any when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Fields by JSON pointer, e.g. `/spec/replicas`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_pointers: Vec<String>,
    /// Fields by jq path expression, e.g.
    /// `.spec.template.spec.containers[] | select(.name == "istio-proxy")`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jq_path_expressions: Vec<String>,
    /// Every field these field managers own in the live object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_fields_managers: Vec<String>,
}

/// A requested operation on an Application.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    pub sync: SyncOperation,
    pub initiated_by: InitiatedBy,
}

/// A requested sync.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncOperation {
    /// The revision to sync; empty means the source's `targetRevision`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// Delete tracked objects that are no longer in the source.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prune: bool,
    /// Sync options for this operation only, e.g. `Replace=true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// The revision of each source, in order, for an Application with `sources` (Argo CD's
    /// `sync.revisions`); empty means each source's `targetRevision`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// Let the sync prune every object of the Application when its manifests are empty
    /// (refused otherwise; `flotilla app sync --allow-empty`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty: bool,
    /// For a self-heal, how many self-heals in a row it is (Argo CD's
    /// `selfHealAttemptsCount`): the next one waits the longer for it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub self_heal_attempts_count: u32,
}

impl SyncOperation {
    /// The revision asked for as the engine keeps it: `revision`, or for an Application with
    /// `sources` the `revisions` joined ([`crate::api::revisions::join`]).
    #[must_use]
    pub fn requested_revision(&self) -> String {
        if self.revisions.is_empty() {
            self.revision.clone()
        } else {
            crate::api::revisions::join(&self.revisions)
        }
    }

    /// `revision` and `revisions` as Argo CD stores them for the engine's `revision`: a
    /// multi-source Application's joined revisions become `revisions`.
    pub fn set_revision(&mut self, revision: &str) {
        self.revisions = crate::api::revisions::split_revisions(revision);
        self.revision = if self.revisions.is_empty() {
            revision.to_owned()
        } else {
            String::new()
        };
    }
}

/// Who asked for an operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitiatedBy {
    /// A user name, or `rollout/<ApplicationSet>` for syncs triggered by a RollingSync.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// Started by a controller rather than a person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automated: bool,
}

/// Where the manifests come from: a git repository (or local path) at a revision, read as a
/// directory of manifests, a Helm chart, a Kustomize overlay or a Config Management Plugin's output
/// (see `flotilla::source`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSource {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// Branch, tag or commit; empty means `HEAD`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_revision: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// A chart of the Helm chart repository `repoURL` (instead of `path`); `targetRevision` is
    /// then its version or a semver range.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chart: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectorySource>,
    // Boxed, like `kustomize`: most sources have neither, and inline they would more than
    // double the size of every Application (moved many times when thousands are rendered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm: Option<Box<super::helm_source::HelmSource>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<Box<super::kustomize_source::KustomizeSource>>,
    /// A Config Management Plugin renders the source (`plugin: {}` picks it by its discovery
    /// rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<Box<super::plugin_source::PluginSource>>,
    /// In `sources`: the name (`values` for `$values/…`) under which this source's repository
    /// root is available to the other sources' Helm `valueFiles`.
    #[serde(rename = "ref", default, skip_serializing_if = "String::is_empty")]
    pub reference: String,
}

impl ApplicationSource {
    /// The manifest directory options `source.directory` asks for.
    #[must_use]
    pub fn directory_options(&self) -> DirectoryOptions {
        self.directory
            .as_ref()
            .map(|d| DirectoryOptions {
                recurse: d.recurse,
                include: Some(d.include.clone()).filter(|s| !s.is_empty()),
                exclude: Some(d.exclude.clone()).filter(|s| !s.is_empty()),
                jsonnet: d
                    .jsonnet
                    .as_ref()
                    .map(DirectoryJsonnet::options)
                    .unwrap_or_default(),
            })
            .unwrap_or_default()
    }

    /// Whether nothing is set (the `source` of an Application that uses `sources`).
    #[must_use]
    pub fn is_unset(&self) -> bool {
        *self == Self::default()
    }

    /// Whether the source only lends its repository to `$ref` values files: a `ref` with
    /// neither `path` nor `chart` (Argo CD renders no manifests for it).
    #[must_use]
    pub fn is_reference_only(&self) -> bool {
        !self.reference.is_empty() && self.path.is_empty() && self.chart.is_empty()
    }
}

impl ApplicationSpec {
    /// The sources in use: `sources` when given, else the one `source`.
    #[must_use]
    pub fn all_sources(&self) -> &[ApplicationSource] {
        if self.sources.is_empty() {
            std::slice::from_ref(&self.source)
        } else {
            &self.sources
        }
    }

    /// Whether the Application uses `sources` (its revisions are then one per source).
    #[must_use]
    pub fn is_multi_source(&self) -> bool {
        !self.sources.is_empty()
    }
}

/// Options for a plain directory of manifests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirectorySource {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recurse: bool,
    /// Glob (or `{a,b}` list) of files to include, relative to the path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub include: String,
    /// Glob (or `{a,b}` list) of files to leave out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exclude: String,
    /// How the directory's `*.jsonnet` files are evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonnet: Option<DirectoryJsonnet>,
}

/// Argo CD's `directory.jsonnet`: arguments, variables and library paths of `*.jsonnet` files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryJsonnet {
    /// Top-level arguments, given to a file whose value is a function.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tlas: Vec<JsonnetVar>,
    /// External variables (`std.extVar`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ext_vars: Vec<JsonnetVar>,
    /// Directories imports are looked up in, relative to the repository root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libs: Vec<String>,
}

impl DirectoryJsonnet {
    fn options(&self) -> JsonnetOptions {
        let variables = |vars: &[JsonnetVar]| {
            vars.iter()
                .map(|v| JsonnetVariable {
                    name: v.name.clone(),
                    value: v.value.clone(),
                    code: v.code,
                })
                .collect()
        };
        JsonnetOptions {
            tlas: variables(&self.tlas),
            ext_vars: variables(&self.ext_vars),
            libs: self.libs.clone(),
        }
    }
}

/// One Jsonnet top-level argument or external variable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonnetVar {
    pub name: String,
    /// A string, or Jsonnet code when `code` is true.
    pub value: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
}

/// The cluster and namespace to deploy to: `server` or `name` of a registered cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationDestination {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// When and how the Application is synced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automated: Option<AutomatedSync>,
    /// Application-wide sync options, e.g. `CreateNamespace=true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
    /// Labels and annotations of the namespace `CreateNamespace=true` creates, applied at every
    /// sync (also to a namespace that already exists) and kept as written: one removed here is
    /// removed from the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_namespace_metadata: Option<ManagedNamespaceMetadata>,
}

/// Argo CD's `syncPolicy.managedNamespaceMetadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedNamespaceMetadata {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Automatic sync when the Application is OutOfSync.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutomatedSync {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prune: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub self_heal: bool,
    /// Let an automated sync with prune delete every object of the Application when its
    /// manifests are empty (refused otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty: bool,
    /// `false` suspends automated sync while keeping its settings (Argo CD 3's
    /// `automated.enabled`; `flotilla app rollback --force` sets it). Absent or `true`:
    /// enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

impl AutomatedSync {
    /// Whether automated sync runs (`enabled` is not `false`).
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.enabled != Some(false)
    }
}

/// Retries of a failed sync.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryStrategy {
    /// Maximum number of attempts; negative means unlimited (as in Argo CD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
}

/// Exponential backoff between retries, durations like `5s` or `3m`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backoff {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<String>,
}

/// What the controller observed and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationStatus {
    /// Flotilla extension: where this Application is in its ApplicationSet's RollingSync, kept
    /// here instead of in the ApplicationSet's `status.applicationStatus` when the rollout has
    /// more Applications than that list may hold (see its `status.applicationStatusSummary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<crate::api::application_set_status::ApplicationSetApplicationStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthReport>,
    /// Every object of the source (and every tracked object to prune), with its state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    /// The request the current or last operation runs (who asked, prune, options), so a sync
    /// resumed after a restart keeps them. (Argo CD keeps it in `operationState.operation`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// The current or last sync operation, as the engine recorded it; a sync interrupted by a
    /// controller restart resumes from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "flotilla_generators::spec::preserve_unknown_fields")]
    pub operation_state: Option<super::operation_state::OperationState>,
    /// The PostDelete hooks of the source as last compared (`Kind namespace/name`): once its
    /// resources are gone, a deleted Application runs them (reading its source again) only when
    /// this lists some, so one whose source has none is deleted without reading it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_delete_hooks: Vec<String>,
    /// The PreDelete hooks of the source as last compared (`Kind namespace/name`): a deleted
    /// Application runs them (reading its source again) before deleting its resources, only when
    /// this lists some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_delete_hooks: Vec<String>,
    /// The last successful syncs, newest last (at most `spec.revisionHistoryLimit`, default 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<RevisionHistory>,
    /// When sync and health were last computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<Time>,
    /// The `metadata.generation` sync and health were computed for; older means they describe
    /// a previous spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Errors that keep the controller from comparing, syncing or deleting (as in Argo CD:
    /// present while they last, removed once resolved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationCondition>,
}

/// An error the controller reports on an Application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationCondition {
    #[serde(rename = "type")]
    pub type_: ApplicationConditionType,
    pub message: String,
    /// When the condition was first reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// What kind of error an Application condition reports.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum ApplicationConditionType {
    /// The source, the destination or the live objects could not be read.
    ComparisonError,
    /// The Application's project does not exist or does not permit its repository or
    /// destination: it is not compared or synced until that changes.
    InvalidSpecError,
    /// A sync could not be carried out (as opposed to a sync that failed, which
    /// `operationState` records).
    SyncError,
    /// The resources of a deleted Application could not be deleted.
    DeletionError,
}

impl ApplicationConditionType {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 4] = [
        Self::ComparisonError,
        Self::InvalidSpecError,
        Self::SyncError,
        Self::DeletionError,
    ];

    /// The value as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ComparisonError => "ComparisonError",
            Self::InvalidSpecError => "InvalidSpecError",
            Self::SyncError => "SyncError",
            Self::DeletionError => "DeletionError",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::ComparisonError => {
                "The source, the destination or the live objects could not be read."
            }
            Self::InvalidSpecError => {
                "The Application's project does not exist or does not permit its repository, destination or namespace: it is not compared or synced until that changes."
            }
            Self::SyncError => {
                "A sync could not be carried out (as opposed to a sync that failed, which `operationState` records), e.g. an automated sync waiting for a sync window."
            }
            Self::DeletionError => {
                "The resources of a deleted Application could not be deleted, or its PreDelete or PostDelete hooks failed."
            }
        }
    }
}

/// How many successful syncs `status.history` keeps when `spec.revisionHistoryLimit` is not
/// set (Argo CD's default).
pub const HISTORY_LIMIT: usize = 10;

/// One object of an Application and how it compares with its source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    /// `Synced`, `OutOfSync` or `Unknown`.
    #[schemars(with = "String")]
    #[serde(deserialize_with = "sync_status_or_unknown")]
    pub status: SyncStatusCode,
    /// The first field (a JSON pointer, e.g. `/spec/replicas`) where the live object differs
    /// from the desired one; empty when it matches, is missing or is to be pruned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_difference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthReport>,
    /// A hook (not compared; run by syncs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hook: bool,
    /// Tracked but no longer in the source.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_pruning: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sync_wave: i32,
}

/// One successful sync.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionHistory {
    /// Increasing number of the sync.
    pub id: i64,
    /// The commit synced; for an Application with `sources`, their revisions joined by commas.
    pub revision: String,
    /// The revision of each source synced, in order, for an Application with `sources`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_started_at: Option<Time>,
    pub deployed_at: Time,
    #[serde(default)]
    pub initiated_by: InitiatedBy,
    /// The Application's source when it synced (Argo CD's `history.source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
    /// Its sources, for an Application with `sources` (Argo CD's `history.sources`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<ApplicationSource>,
}

/// A stored sync status word; one outside the vocabulary (written by someone else) reads as
/// `Unknown` rather than making the whole Application unreadable.
fn sync_status_or_unknown<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<SyncStatusCode, D::Error> {
    let word = String::deserialize(deserializer)?;
    Ok(word.parse().unwrap_or_default())
}

/// A stored health word; one outside the vocabulary reads as `Unknown`, as for sync.
fn health_status_or_unknown<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<HealthStatus, D::Error> {
    let word = String::deserialize(deserializer)?;
    Ok(word.parse().unwrap_or_default())
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// Whether the live state matches the source, at which revision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncStatus {
    /// `Synced`, `OutOfSync` or `Unknown`.
    #[schemars(with = "String")]
    #[serde(deserialize_with = "sync_status_or_unknown")]
    pub status: SyncStatusCode,
    /// The revision compared (empty for an Application with `sources`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The revision of each source compared, in order, for an Application with `sources`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
}

impl SyncStatus {
    /// `status` at the engine's `revision`: a multi-source Application's joined revisions
    /// become `revisions` (Argo CD's `status.sync.revisions`), its `revision` left empty.
    #[must_use]
    pub fn at(status: SyncStatusCode, revision: Option<&str>) -> Self {
        let mut operation = SyncOperation::default();
        operation.set_revision(revision.unwrap_or_default());
        Self {
            status,
            revision: operation.revision,
            revisions: operation.revisions,
        }
    }

    /// The revision compared as the engine keeps it (see [`SyncOperation::requested_revision`]).
    #[must_use]
    pub fn revision_key(&self) -> String {
        SyncOperation {
            revision: self.revision.clone(),
            revisions: self.revisions.clone(),
            ..SyncOperation::default()
        }
        .requested_revision()
    }
}

/// A recorded health: of the Application (its resources' aggregate) or of one resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthReport {
    /// `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing` or `Unknown`.
    #[schemars(with = "String")]
    #[serde(deserialize_with = "health_status_or_unknown")]
    pub status: HealthStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl SyncPolicy {
    /// `retry` as the executor's policy (Argo CD's defaults for missing fields), if set.
    ///
    /// # Errors
    /// A backoff duration that does not parse.
    pub fn retry_policy(&self) -> Result<Option<RetryPolicy>, DurationError> {
        let Some(retry) = &self.retry else {
            return Ok(None);
        };
        let defaults = RetryPolicy::default();
        let backoff = retry.backoff.as_ref();
        let duration = |text: Option<&String>, default| {
            text.map_or(Ok(default), |t| parse_seconds_or_duration(t))
        };
        Ok(Some(RetryPolicy {
            // A negative limit retries forever, as in Argo CD.
            limit: retry
                .limit
                .map_or(Some(0), |limit| usize::try_from(limit).ok()),
            duration: duration(backoff.and_then(|b| b.duration.as_ref()), defaults.duration)?,
            factor: backoff
                .and_then(|b| b.factor)
                .map_or(defaults.factor, |f| f as f32),
            max_duration: duration(
                backoff.and_then(|b| b.max_duration.as_ref()),
                defaults.max_duration,
            )?,
        }))
    }

    /// The automated sync, when it is set and enabled.
    #[must_use]
    pub fn automated_enabled(&self) -> Option<&AutomatedSync> {
        self.automated.as_ref().filter(|a| a.is_enabled())
    }

    /// Whether `automated.prune` is set.
    #[must_use]
    pub fn automated_prune(&self) -> bool {
        self.automated.as_ref().is_some_and(|a| a.prune)
    }

    /// Whether `automated.allowEmpty` is set.
    #[must_use]
    pub fn automated_allow_empty(&self) -> bool {
        self.automated.as_ref().is_some_and(|a| a.allow_empty)
    }
}

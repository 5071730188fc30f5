//! How an Application becomes everything a sync of it needs — prune, retry, every sync option,
//! the destination namespace, the source's options (directory, Helm, Kustomize), the timeout, the ignored differences — in one
//! pure function,
//! [`sync_settings`]. The controller, `flotilla sync` and `flotilla simulate` call it and nothing
//! else, so a preview and the real sync of one Application cannot disagree.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::source::SourceOptions;
use crate::sync::execute::cluster_api::Propagation;
use crate::sync::execute::{ExecuteSettings, SYNC_TIMEOUT_ANNOTATION};
use flotilla_core::sync::{
    COMPARE_OPTIONS_ANNOTATION, CompareOptions, IgnoreDifferences, IgnoreError, OptionError,
    SyncOptions,
};

use flotilla_core::api::application::{ApplicationSpec, SyncOperation};
use flotilla_core::manifest::DirectoryOptions;
use flotilla_core::project::{ProjectScope, Refusal, admit};
use flotilla_generators::duration::{DurationError, parse_duration};

/// The Application-wide sync option that chooses how pruned objects' dependents go.
const PRUNE_PROPAGATION_POLICY: &str = "PrunePropagationPolicy";

/// The Application-wide sync option that keeps the live values of ignored fields in a sync.
const RESPECT_IGNORE_DIFFERENCES: &str = "RespectIgnoreDifferences";

/// The Application-wide sync option that fails a sync of objects another Application tracks.
const FAIL_ON_SHARED_RESOURCE: &str = "FailOnSharedResource";

/// A field of an Application that does not give usable sync settings.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("syncPolicy.retry.backoff: {0}")]
    Retry(#[source] DurationError),
    #[error("annotation {SYNC_TIMEOUT_ANNOTATION}: {0}")]
    Timeout(#[source] DurationError),
    #[error("annotation {COMPARE_OPTIONS_ANNOTATION}: {0}")]
    CompareOptions(#[source] OptionError),
    #[error("{field}: {error}")]
    SyncOptions {
        field: &'static str,
        #[source]
        error: OptionError,
    },
    #[error(
        "{field}: {PRUNE_PROPAGATION_POLICY}={value:?}: expected foreground, background or orphan"
    )]
    PrunePropagation { field: &'static str, value: String },
    #[error("{field}: {option}={value:?}: expected true or false")]
    Boolean {
        field: &'static str,
        option: &'static str,
        value: String,
    },
    #[error("{0}")]
    IgnoreDifferences(#[source] IgnoreError),
    #[error("{0}")]
    Project(#[source] Refusal),
}

/// What the person running a sync by hand (`flotilla sync`) asks for beyond the Application.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncOverrides {
    /// Prune even when the Application's policy does not (`--prune`).
    pub prune: bool,
    /// Let pruning empty the Application (`--allow-empty`).
    pub allow_empty: bool,
    /// Sync options over the Application's and the operation's (`--sync-option`), in order.
    pub sync_options: Vec<SyncOptions>,
    /// The operation timeout (`--timeout`), over the Application's annotation.
    pub timeout: Option<Duration>,
    /// The destination namespace (`--namespace`), over `destination.namespace`.
    pub namespace: Option<String>,
    /// Directory flags (`--recurse`, `--include`, `--exclude`), over `source.directory`.
    pub directory: DirectoryOptions,
}

/// Everything a sync of one Application needs.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncSettings {
    /// How the executor runs the operation.
    pub execute: ExecuteSettings,
    /// How the source's manifests are generated.
    pub source: SourceOptions,
}

/// The settings of a sync of the Application `metadata`/`spec`.
///
/// `operation` is the sync being run when one was requested (`spec.operation`, `flotilla app
/// sync`, a RollingSync step) or is being resumed; `None` is a sync by `syncPolicy.automated`
/// (and `flotilla sync` of an Application file, which acts as its policy says). Sources, weakest
/// first: `process` (the runner's tunables: polling, concurrency, wave delay), the Application,
/// the operation, `overrides`. The Application's project (looked up in `projects`) must admit
/// it; its admission then judges every object before the first write.
///
/// # Errors
/// An unparsable retry backoff, timeout annotation or sync option, naming the field; a project
/// that refuses the Application.
pub fn sync_settings(
    metadata: &ObjectMeta,
    spec: &ApplicationSpec,
    operation: Option<&SyncOperation>,
    overrides: &SyncOverrides,
    process: &ExecuteSettings,
    projects: ProjectScope<'_>,
) -> Result<SyncSettings, SettingsError> {
    let admission = admit(spec, projects).map_err(SettingsError::Project)?;
    let policy = spec.sync_policy.clone().unwrap_or_default();
    let application = ApplicationOptions::parse(&policy.sync_options, "syncPolicy.syncOptions")?;
    let requested = operation.map_or(&[][..], |op| &op.sync_options[..]);
    let requested = ApplicationOptions::parse(requested, "operation.sync.syncOptions")?;
    let sync_options = overrides
        .sync_options
        .iter()
        .fold(requested.options.over(&application.options), |all, flag| {
            flag.over(&all)
        });
    let timeout = metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(SYNC_TIMEOUT_ANNOTATION))
        .map(|text| parse_duration(text))
        .transpose()
        .map_err(SettingsError::Timeout)?;
    // Argo CD reads ServerSideDiff and IncludeMutationWebhook from the Application too: what
    // Flotilla does not implement is refused there as on an object.
    if let Some(text) = metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(COMPARE_OPTIONS_ANNOTATION))
    {
        text.parse::<CompareOptions>()
            .map_err(SettingsError::CompareOptions)?;
    }
    let prune = operation.map_or(policy.automated_prune(), |op| op.prune) || overrides.prune;
    let allow_empty = operation.map_or(policy.automated_allow_empty(), |op| op.allow_empty)
        || overrides.allow_empty;
    Ok(SyncSettings {
        execute: ExecuteSettings {
            // Zero, as Argo CD's "0", is no timeout.
            timeout: overrides
                .timeout
                .or(timeout)
                .map_or(process.timeout, |timeout| {
                    (!timeout.is_zero()).then_some(timeout)
                }),
            prune,
            allow_empty,
            retry: policy.retry_policy().map_err(SettingsError::Retry)?,
            sync_options,
            prune_propagation: requested
                .propagation
                .or(application.propagation)
                .unwrap_or(Propagation::Foreground),
            destination_namespace: overrides
                .namespace
                .clone()
                .or_else(|| spec.destination.namespace.clone()),
            ignore_differences: ignore_differences(spec, &process.ignore_differences)?,
            respect_ignore_differences: requested
                .respect_ignore_differences
                .or(application.respect_ignore_differences)
                .unwrap_or(false),
            managed_namespace_metadata: policy.managed_namespace_metadata.clone(),
            fail_on_shared_resource: requested
                .fail_on_shared_resource
                .or(application.fail_on_shared_resource)
                .unwrap_or(false),
            admission,
            ..process.clone()
        },
        source: SourceOptions {
            project: spec.project.clone(),
            ..SourceOptions::of(
                &spec.source,
                overrides.directory.over(&spec.source.directory_options()),
                metadata.name.as_deref().unwrap_or_default(),
                overrides
                    .namespace
                    .as_deref()
                    .or(spec.destination.namespace.as_deref()),
            )
        },
    })
}

/// One list of Application-wide sync options (`Key=value` items), parsed.
struct ApplicationOptions {
    options: SyncOptions,
    propagation: Option<Propagation>,
    respect_ignore_differences: Option<bool>,
    fail_on_shared_resource: Option<bool>,
}

impl ApplicationOptions {
    fn parse(items: &[String], field: &'static str) -> Result<Self, SettingsError> {
        let mut propagation = None;
        let mut respect_ignore_differences = None;
        let mut fail_on_shared_resource = None;
        let mut object_options = Vec::new();
        for item in items.iter().map(|item| item.trim()) {
            match item.split_once('=') {
                Some((PRUNE_PROPAGATION_POLICY, value)) => {
                    propagation = Some(match value.trim().to_ascii_lowercase().as_str() {
                        "foreground" => Propagation::Foreground,
                        "background" => Propagation::Background,
                        "orphan" => Propagation::Orphan,
                        _ => {
                            return Err(SettingsError::PrunePropagation {
                                field,
                                value: value.to_owned(),
                            });
                        }
                    });
                }
                Some((RESPECT_IGNORE_DIFFERENCES, value)) => {
                    respect_ignore_differences =
                        Some(boolean(field, RESPECT_IGNORE_DIFFERENCES, value)?);
                }
                Some((FAIL_ON_SHARED_RESOURCE, value)) => {
                    fail_on_shared_resource = Some(boolean(field, FAIL_ON_SHARED_RESOURCE, value)?);
                }
                _ => object_options.push(item),
            }
        }
        let options = SyncOptions::from_items(object_options)
            .map_err(|error| SettingsError::SyncOptions { field, error })?;
        Ok(Self {
            options,
            propagation,
            respect_ignore_differences,
            fail_on_shared_resource,
        })
    }
}

/// The value of a `true`/`false` Application-wide option.
fn boolean(field: &'static str, option: &'static str, value: &str) -> Result<bool, SettingsError> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(SettingsError::Boolean {
            field,
            option,
            value: value.to_owned(),
        }),
    }
}

/// The checked rules of `spec.ignoreDifferences` after the `system` ones, which the compare and
/// every sync use.
///
/// # Errors
/// An entry that cannot be used, naming it.
pub fn ignore_differences(
    spec: &ApplicationSpec,
    system: &IgnoreDifferences,
) -> Result<IgnoreDifferences, SettingsError> {
    IgnoreDifferences::new(
        "ignoreDifferences",
        &spec.ignore_differences,
        system.filters(),
    )
    .map(|own| system.joined(&own))
    .map_err(SettingsError::IgnoreDifferences)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_core::api::app_project::{AppProjectSpec, ProjectDestination};
    use flotilla_core::project::{ClusterIdentity, Projects};
    use flotilla_core::sync::SyncOptionKey;

    /// An Application's metadata and spec from YAML flow mappings.
    fn application(annotations: &str, spec: &str) -> (ObjectMeta, ApplicationSpec) {
        let metadata =
            serde_saphyr::from_str(&format!("{{name: shop, annotations: {annotations}}}")).unwrap();
        let mut spec: serde_json::Value = serde_saphyr::from_str(spec).unwrap();
        spec["project"] = "default".into();
        spec["source"]["repoURL"] = "file:///srv/git/platform.git".into();
        spec["destination"]["server"] = "https://kubernetes.default.svc".into();
        (metadata, serde_json::from_value(spec).unwrap())
    }

    fn settings(
        annotations: &str,
        spec: &str,
        operation: Option<&str>,
        overrides: &SyncOverrides,
    ) -> Result<SyncSettings, SettingsError> {
        let (metadata, spec) = application(annotations, spec);
        let operation: Option<SyncOperation> =
            operation.map(|op| serde_saphyr::from_str(op).unwrap());
        sync_settings(
            &metadata,
            &spec,
            operation.as_ref(),
            overrides,
            &ExecuteSettings::default(),
            unchecked(),
        )
    }

    /// No project checked.
    fn unchecked() -> ProjectScope<'static> {
        static PROJECTS: std::sync::LazyLock<Projects> =
            std::sync::LazyLock::new(Projects::unchecked);
        static CLUSTER: ClusterIdentity = ClusterIdentity {
            server: String::new(),
            name: String::new(),
        };
        ProjectScope {
            projects: &PROJECTS,
            cluster: &CLUSTER,
            namespace: None,
        }
    }

    #[test]
    fn the_project_admits_the_application_and_judges_its_objects() {
        let (metadata, mut spec) = application("{}", "{}");
        spec.project = "team-a".to_owned();
        let team = AppProjectSpec {
            source_repos: vec!["https://git.example.com/*".to_owned()],
            destinations: vec![ProjectDestination {
                server: "*".to_owned(),
                name: String::new(),
                namespace: "*".to_owned(),
            }],
            ..AppProjectSpec::default()
        };
        let projects = Projects::new([("team-a".to_owned(), team.clone())]);
        let cluster = ClusterIdentity::default();
        let scope = ProjectScope {
            projects: &projects,
            cluster: &cluster,
            namespace: None,
        };
        let derive = |spec: &ApplicationSpec| {
            sync_settings(
                &metadata,
                spec,
                None,
                &SyncOverrides::default(),
                &ExecuteSettings::default(),
                scope,
            )
        };
        let refused = derive(&spec).unwrap_err();
        assert!(
            matches!(&refused, SettingsError::Project(Refusal::Source { .. })),
            "{refused}"
        );
        let mut permitted = spec.clone();
        permitted.source.repo_url = "https://git.example.com/shop.git".to_owned();
        let admission = derive(&permitted).unwrap().execute.admission;
        assert_eq!(
            (admission.project.as_str(), &admission.spec),
            ("team-a", &team)
        );
        let mut missing = permitted;
        missing.project = "team-b".to_owned();
        assert_eq!(
            derive(&missing).unwrap_err().to_string(),
            "project \"team-b\" does not exist"
        );
    }

    fn derived(annotations: &str, spec: &str, operation: Option<&str>) -> SyncSettings {
        settings(annotations, spec, operation, &SyncOverrides::default()).unwrap()
    }

    #[test]
    fn prune_from_the_policy_the_operation_or_the_flag() {
        let automated = "{syncPolicy: {automated: {prune: true}}}";
        let cases = [
            (
                "automated without prune",
                "{syncPolicy: {automated: {}}}",
                None,
                false,
                false,
            ),
            ("automated with prune", automated, None, false, true),
            (
                "an operation without prune wins",
                automated,
                Some("{prune: false}"),
                false,
                false,
            ),
            (
                "an operation with prune",
                "{}",
                Some("{prune: true}"),
                false,
                true,
            ),
            ("--prune", "{}", None, true, true),
        ];
        for (case, spec, operation, flag, expected) in cases {
            let overrides = SyncOverrides {
                prune: flag,
                ..SyncOverrides::default()
            };
            let prune = settings("{}", spec, operation, &overrides)
                .unwrap()
                .execute
                .prune;
            assert_eq!(prune, expected, "{case}");
        }
    }

    #[test]
    fn allow_empty_from_the_policy_the_operation_or_the_flag() {
        let allowed = "{syncPolicy: {automated: {prune: true, allowEmpty: true}}}";
        let cases = [
            (
                "automated without allowEmpty",
                "{syncPolicy: {automated: {prune: true}}}",
                None,
                false,
                false,
            ),
            ("automated with allowEmpty", allowed, None, false, true),
            (
                "an operation without allowEmpty wins",
                allowed,
                Some("{prune: true}"),
                false,
                false,
            ),
            (
                "an operation with allowEmpty",
                "{}",
                Some("{prune: true, allowEmpty: true}"),
                false,
                true,
            ),
            ("--allow-empty", "{}", None, true, true),
        ];
        for (case, spec, operation, flag, expected) in cases {
            let overrides = SyncOverrides {
                allow_empty: flag,
                ..SyncOverrides::default()
            };
            let settings = settings("{}", spec, operation, &overrides).unwrap();
            assert_eq!(settings.execute.allow_empty, expected, "{case}");
        }
    }

    #[test]
    fn every_sync_option_from_the_application_then_the_operation_then_the_flags() {
        use SyncOptionKey::*;
        let keys = [
            CreateNamespace,
            ApplyOutOfSyncOnly,
            Replace,
            ServerSideApply,
            Validate,
            PruneLast,
            SkipDryRunOnMissingResource,
        ];
        for key in keys {
            let spec = format!(
                "{{syncPolicy: {{syncOptions: [{key}={}]}}}}",
                !key.default_value()
            );
            let from_app = derived("{}", &spec, None).execute.sync_options;
            assert_eq!(
                from_app.get(key),
                !key.default_value(),
                "{key} from the Application"
            );
            let operation = format!("{{syncOptions: [{key}={}]}}", key.default_value());
            let from_op = derived("{}", &spec, Some(&operation)).execute.sync_options;
            assert_eq!(
                from_op.get(key),
                key.default_value(),
                "{key}: the operation wins"
            );
            let flag: SyncOptions = format!("{key}={}", !key.default_value()).parse().unwrap();
            let overrides = SyncOverrides {
                sync_options: vec![flag],
                ..SyncOverrides::default()
            };
            let from_flag = settings("{}", &spec, Some(&operation), &overrides).unwrap();
            assert_eq!(
                from_flag.execute.sync_options.get(key),
                !key.default_value(),
                "{key}: the flag wins"
            );
        }
        let settings = derived("{}", "{syncPolicy: {syncOptions: [PruneLast=true]}}", None);
        assert!(settings.execute.sync_options.get(SyncOptionKey::PruneLast));
    }

    #[test]
    fn prune_propagation_policy() {
        let cases = [
            ("{}", None, Propagation::Foreground),
            (
                "{syncPolicy: {syncOptions: [PrunePropagationPolicy=background]}}",
                None,
                Propagation::Background,
            ),
            (
                "{syncPolicy: {syncOptions: [PrunePropagationPolicy=orphan]}}",
                None,
                Propagation::Orphan,
            ),
            (
                "{syncPolicy: {syncOptions: [PrunePropagationPolicy=orphan]}}",
                Some("{syncOptions: [PrunePropagationPolicy=foreground]}"),
                Propagation::Foreground,
            ),
        ];
        for (spec, operation, expected) in cases {
            assert_eq!(
                derived("{}", spec, operation).execute.prune_propagation,
                expected,
                "{spec}"
            );
        }
        let error = settings(
            "{}",
            "{syncPolicy: {syncOptions: [PrunePropagationPolicy=sideways]}}",
            None,
            &SyncOverrides::default(),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "syncPolicy.syncOptions: PrunePropagationPolicy=\"sideways\": expected foreground, background or orphan"
        );
    }

    #[test]
    fn application_wide_options_and_bad_ones_name_their_field() {
        let spec = "{syncPolicy: {syncOptions: [FailOnSharedResource=true, CreateNamespace=true], \
                    managedNamespaceMetadata: {labels: {team: shop}}}}";
        let settings = derived("{}", spec, None).execute;
        assert!(settings.fail_on_shared_resource);
        assert_eq!(
            settings
                .managed_namespace_metadata
                .map(|m| m.labels.into_iter().collect::<Vec<_>>()),
            Some(vec![("team".to_owned(), "shop".to_owned())])
        );
        let operation = Some("{syncOptions: [FailOnSharedResource=false]}");
        let overridden = self::settings("{}", spec, operation, &SyncOverrides::default());
        assert!(!overridden.unwrap().execute.fail_on_shared_resource);
        for (policy, expected) in [
            (
                "{syncPolicy: {syncOptions: [ClientSideApplyMigration=false]}}",
                "syncPolicy.syncOptions: unknown sync option \"ClientSideApplyMigration\" (Flotilla does not implement it)",
            ),
            (
                "{syncPolicy: {syncOptions: [FailOnSharedResource=yes]}}",
                "syncPolicy.syncOptions: FailOnSharedResource=\"yes\": expected true or false",
            ),
        ] {
            let error = self::settings("{}", policy, None, &SyncOverrides::default());
            assert_eq!(error.unwrap_err().to_string(), expected);
        }
        let error = self::settings(
            "{}",
            "{}",
            Some("{syncOptions: [Replace=maybe]}"),
            &SyncOverrides::default(),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("operation.sync.syncOptions: sync option Replace"),
            "{error}"
        );
    }

    #[test]
    fn ignore_differences_and_respect_them() {
        let rules =
            "{ignoreDifferences: [{group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}]";
        let cases = [
            ("no option", format!("{rules}}}"), None, false),
            (
                "from the Application",
                format!("{rules}, syncPolicy: {{syncOptions: [RespectIgnoreDifferences=true]}}}}"),
                None,
                true,
            ),
            (
                "the operation wins",
                format!("{rules}, syncPolicy: {{syncOptions: [RespectIgnoreDifferences=true]}}}}"),
                Some("{syncOptions: [RespectIgnoreDifferences=false]}"),
                false,
            ),
        ];
        let deployment = flotilla_core::manifest::ObjectKey {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: None,
            name: "web".into(),
        };
        for (case, spec, operation, respect) in cases {
            let settings = derived("{}", &spec, operation);
            assert_eq!(
                settings.execute.respect_ignore_differences, respect,
                "{case}"
            );
            assert!(
                settings.execute.ignore_differences.applies_to(&deployment),
                "{case}"
            );
        }
        let bad_option = settings(
            "{}",
            "{syncPolicy: {syncOptions: [RespectIgnoreDifferences=yes]}}",
            None,
            &SyncOverrides::default(),
        )
        .unwrap_err();
        assert_eq!(
            bad_option.to_string(),
            "syncPolicy.syncOptions: RespectIgnoreDifferences=\"yes\": expected true or false"
        );
        let jq = settings(
            "{}",
            "{ignoreDifferences: [{kind: Deployment, jqPathExpressions: ['.spec | select(']}]}",
            None,
            &SyncOverrides::default(),
        )
        .unwrap_err();
        assert!(
            jq.to_string()
                .starts_with("ignoreDifferences[0].jqPathExpressions: "),
            "{jq}"
        );
    }

    #[test]
    fn retry_policy_with_argo_cd_defaults() {
        let retry = |text: &str| {
            derived("{}", &format!("{{syncPolicy: {{retry: {text}}}}}"), None)
                .execute
                .retry
        };
        let read = retry("{limit: 3, backoff: {duration: 2s}}").unwrap();
        assert_eq!(
            (read.limit, read.duration, read.max_duration),
            (Some(3), Duration::from_secs(2), Duration::from_secs(180))
        );
        assert_eq!(retry("{limit: -1}").unwrap().limit, None, "forever");
        assert_eq!(derived("{}", "{}", None).execute.retry, None);
        let error = settings(
            "{}",
            "{syncPolicy: {retry: {limit: 1, backoff: {duration: soon}}}}",
            None,
            &SyncOverrides::default(),
        )
        .unwrap_err();
        assert!(
            error.to_string().starts_with("syncPolicy.retry.backoff: "),
            "{error}"
        );
        let bare_seconds = retry("{limit: 3, backoff: {duration: \"30\"}}").unwrap();
        assert_eq!(bare_seconds.duration, Duration::from_secs(30));
    }

    #[test]
    fn timeout_from_the_annotation_or_the_flag() {
        // Argo CD's default: no timeout.
        assert_eq!(ExecuteSettings::default().timeout, None);
        assert_eq!(derived("{}", "{}", None).execute.timeout, None);
        let annotated = "{flotilla.dev/sync-timeout: 90s}";
        assert_eq!(
            derived(annotated, "{}", None).execute.timeout,
            Some(Duration::from_secs(90))
        );
        let overrides = SyncOverrides {
            timeout: Some(Duration::from_secs(5)),
            ..SyncOverrides::default()
        };
        let flagged = settings(annotated, "{}", None, &overrides).unwrap();
        assert_eq!(flagged.execute.timeout, Some(Duration::from_secs(5)));
        // A controller-wide timeout applies unless the annotation says otherwise; "0" is none.
        let (metadata, spec) = application("{flotilla.dev/sync-timeout: \"0\"}", "{}");
        let process = ExecuteSettings {
            timeout: Some(Duration::from_secs(600)),
            ..ExecuteSettings::default()
        };
        let none = |metadata: &ObjectMeta| {
            sync_settings(
                metadata,
                &spec,
                None,
                &SyncOverrides::default(),
                &process,
                unchecked(),
            )
            .unwrap()
            .execute
            .timeout
        };
        assert_eq!(none(&metadata), None);
        assert_eq!(none(&ObjectMeta::default()), Some(Duration::from_secs(600)));
        let error = settings(
            "{flotilla.dev/sync-timeout: soon}",
            "{}",
            None,
            &SyncOverrides::default(),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("annotation flotilla.dev/sync-timeout: "),
            "{error}"
        );
    }

    #[test]
    fn destination_namespace_and_source_options() {
        let spec = "{destination: {namespace: shop}, source: {directory: {recurse: true, include: '*.yaml'}}}";
        let plain = derived("{}", spec, None);
        assert_eq!(plain.execute.destination_namespace.as_deref(), Some("shop"));
        assert_eq!(plain.source.namespace.as_deref(), Some("shop"));
        assert_eq!(plain.source.application, "shop");
        assert!(plain.source.plain, "source.directory is given");
        assert_eq!(
            plain.source.directory,
            DirectoryOptions {
                recurse: true,
                include: Some("*.yaml".into()),
                exclude: None,
                ..DirectoryOptions::default()
            }
        );
        let overrides = SyncOverrides {
            namespace: Some("other".into()),
            directory: DirectoryOptions {
                recurse: false,
                include: Some("app.yaml".into()),
                exclude: Some("test-*".into()),
                ..DirectoryOptions::default()
            },
            ..SyncOverrides::default()
        };
        let flagged = settings("{}", spec, None, &overrides).unwrap();
        assert_eq!(
            flagged.execute.destination_namespace.as_deref(),
            Some("other")
        );
        assert_eq!(flagged.source.namespace.as_deref(), Some("other"));
        assert_eq!(
            flagged.source.directory,
            DirectoryOptions {
                recurse: true,
                include: Some("app.yaml".into()),
                exclude: Some("test-*".into()),
                ..DirectoryOptions::default()
            }
        );
    }

    #[test]
    fn process_tunables_pass_through() {
        let (metadata, spec) = application("{}", "{}");
        let process = ExecuteSettings {
            wave_delay: Duration::from_secs(2),
            concurrency: 4,
            ..ExecuteSettings::default()
        };
        let settings = sync_settings(
            &metadata,
            &spec,
            None,
            &SyncOverrides::default(),
            &process,
            unchecked(),
        )
        .unwrap();
        assert_eq!(
            (settings.execute.wave_delay, settings.execute.concurrency),
            (Duration::from_secs(2), 4)
        );
    }
}

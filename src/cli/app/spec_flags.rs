//! The flags of `flotilla app create|set|unset` that change an Application's spec, as argocd's
//! (a subset: source, destination, project, sync policy, Helm parameters and values files,
//! Kustomize images), and how they change it: pure, on the spec, so `set` can send only what
//! changed and leave every other field as it is.

use flotilla_core::api::application::{
    ApplicationSource, ApplicationSpec, AutomatedSync, SyncPolicy,
};
use flotilla_core::api::helm_source::{HelmParameter, HelmSource};
use flotilla_core::api::kustomize_source::KustomizeSource;

/// A flag that cannot be applied to the spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecFlagError {
    /// `--helm-set` or `--helm-set-string` without `=`.
    #[error("{flag} {text:?}: not NAME=VALUE")]
    NotNameValue { flag: &'static str, text: String },
    /// The Application has `spec.sources`; these flags change `spec.source`.
    #[error(
        "Application {app} has several sources (spec.sources): {flag} changes spec.source only; edit the Application with kubectl"
    )]
    MultiSource { app: String, flag: &'static str },
    /// `--auto-prune`, `--self-heal` or `--allow-empty` without automated sync.
    #[error("{flag} needs automated sync (--sync-policy automated)")]
    NotAutomated { flag: &'static str },
}

/// How the Application syncs (`--sync-policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SyncPolicyFlag {
    /// Only when asked (`app sync`): removes `spec.syncPolicy.automated`.
    #[value(alias = "none")]
    Manual,
    /// Whenever the source or the live objects change.
    #[value(alias = "auto", alias = "automatic")]
    Automated,
}

/// The flags of `create` and `set`; each one given changes its field, the others leave theirs.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct SpecFlags {
    /// The source's repository URL (spec.source.repoURL).
    #[arg(long, value_name = "URL")]
    pub repo: Option<String>,
    /// The directory in the repository (spec.source.path).
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// The Helm chart of a Helm repository (spec.source.chart).
    #[arg(long = "helm-chart", value_name = "CHART")]
    pub chart: Option<String>,
    /// The revision (branch, tag, commit or chart version) to sync (spec.source.targetRevision).
    #[arg(long, value_name = "REVISION")]
    pub revision: Option<String>,
    /// The destination cluster's API server URL (spec.destination.server).
    #[arg(long, value_name = "URL", conflicts_with = "dest_name")]
    pub dest_server: Option<String>,
    /// The destination cluster's name (spec.destination.name).
    #[arg(long, value_name = "NAME")]
    pub dest_name: Option<String>,
    /// The destination namespace (spec.destination.namespace).
    #[arg(long, value_name = "NAMESPACE")]
    pub dest_namespace: Option<String>,
    /// The AppProject (spec.project).
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
    /// manual (or none) or automated (or auto, automatic).
    #[arg(long, value_enum)]
    pub sync_policy: Option<SyncPolicyFlag>,
    /// Automated sync deletes what left the source (spec.syncPolicy.automated.prune).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub auto_prune: Option<bool>,
    /// Automated sync reverts changes made to the live objects (selfHeal).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub self_heal: Option<bool>,
    /// Automated sync may prune every object when the source is empty (allowEmpty).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub allow_empty: Option<bool>,
    /// A sync option such as CreateNamespace=true (repeatable; replaces the one of the same key).
    #[arg(long = "sync-option", value_name = "KEY=VALUE")]
    pub sync_options: Vec<String>,
    /// The Helm release name (spec.source.helm.releaseName).
    #[arg(long, value_name = "NAME")]
    pub release_name: Option<String>,
    /// A Helm values file in the source (repeatable; added after those listed).
    #[arg(long = "values", value_name = "FILE")]
    pub values_files: Vec<String>,
    /// A Helm parameter (repeatable; replaces the one of the same name).
    #[arg(long = "helm-set", value_name = "NAME=VALUE")]
    pub helm_set: Vec<String>,
    /// A Helm parameter kept a string (repeatable).
    #[arg(long = "helm-set-string", value_name = "NAME=VALUE")]
    pub helm_set_string: Vec<String>,
    /// A Kustomize image override such as nginx=nginx:1.27 (repeatable; replaces the one for the
    /// same image).
    #[arg(long = "kustomize-image", value_name = "IMAGE")]
    pub kustomize_images: Vec<String>,
}

/// The flags of `unset`: each removes what it names.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct UnsetFlags {
    /// Remove the Helm parameter NAME (repeatable).
    #[arg(short = 'p', long = "parameter", value_name = "NAME")]
    pub parameters: Vec<String>,
    /// Remove the Helm values file FILE (repeatable).
    #[arg(long = "values", value_name = "FILE")]
    pub values_files: Vec<String>,
    /// Remove the inline Helm values (spec.source.helm.values and valuesObject).
    #[arg(long)]
    pub values_literal: bool,
    /// Remove the Kustomize image override of IMAGE (repeatable).
    #[arg(long = "kustomize-image", value_name = "IMAGE")]
    pub kustomize_images: Vec<String>,
    /// Remove the Kustomize name prefix.
    #[arg(long)]
    pub nameprefix: bool,
    /// Remove the Kustomize name suffix.
    #[arg(long)]
    pub namesuffix: bool,
    /// Remove the sync option of KEY (repeatable).
    #[arg(long = "sync-option", value_name = "KEY")]
    pub sync_options: Vec<String>,
}

impl SpecFlags {
    /// Whether any flag is given.
    #[must_use]
    pub fn any(&self) -> bool {
        self.source_flag().is_some()
            || self.dest_server.is_some()
            || self.dest_name.is_some()
            || self.dest_namespace.is_some()
            || self.project.is_some()
            || self.sync_policy.is_some()
            || self.auto_prune.is_some()
            || self.self_heal.is_some()
            || self.allow_empty.is_some()
            || !self.sync_options.is_empty()
    }

    /// The first given flag that changes `spec.source`, named.
    fn source_flag(&self) -> Option<&'static str> {
        [
            (self.repo.is_some(), "--repo"),
            (self.path.is_some(), "--path"),
            (self.chart.is_some(), "--helm-chart"),
            (self.revision.is_some(), "--revision"),
            (self.release_name.is_some(), "--release-name"),
            (!self.values_files.is_empty(), "--values"),
            (!self.helm_set.is_empty(), "--helm-set"),
            (!self.helm_set_string.is_empty(), "--helm-set-string"),
            (!self.kustomize_images.is_empty(), "--kustomize-image"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// Changes `spec` (of Application `app`) as the flags say.
    ///
    /// # Errors
    /// A malformed `--helm-set`, a source flag on an Application with several sources, or an
    /// automated-sync flag without automated sync.
    pub fn apply(&self, app: &str, spec: &mut ApplicationSpec) -> Result<(), SpecFlagError> {
        if let Some(flag) = self.source_flag() {
            if !spec.sources.is_empty() {
                return Err(SpecFlagError::MultiSource {
                    app: app.to_owned(),
                    flag,
                });
            }
            self.apply_source(&mut spec.source)?;
        }
        let set = |field: &mut String, value: &Option<String>| {
            if let Some(value) = value {
                field.clone_from(value);
            }
        };
        set(&mut spec.project, &self.project);
        let destination = &mut spec.destination;
        if let Some(server) = &self.dest_server {
            destination.server = Some(server.clone());
            destination.name = None;
        }
        if let Some(name) = &self.dest_name {
            destination.name = Some(name.clone());
            destination.server = None;
        }
        if let Some(namespace) = &self.dest_namespace {
            destination.namespace = Some(namespace.clone());
        }
        self.apply_sync_policy(spec)
    }

    fn apply_source(&self, source: &mut ApplicationSource) -> Result<(), SpecFlagError> {
        let set = |field: &mut String, value: &Option<String>| {
            if let Some(value) = value {
                field.clone_from(value);
            }
        };
        set(&mut source.repo_url, &self.repo);
        set(&mut source.path, &self.path);
        set(&mut source.chart, &self.chart);
        set(&mut source.target_revision, &self.revision);
        let helm_flags = self.release_name.is_some()
            || !self.values_files.is_empty()
            || !self.helm_set.is_empty()
            || !self.helm_set_string.is_empty();
        if helm_flags {
            let helm = source.helm.get_or_insert_with(Box::default);
            apply_helm(self, helm)?;
        }
        if !self.kustomize_images.is_empty() {
            let kustomize = source.kustomize.get_or_insert_with(Box::default);
            for image in &self.kustomize_images {
                let name = image_name(image);
                match kustomize
                    .images
                    .iter_mut()
                    .find(|old| image_name(old) == name)
                {
                    Some(old) => old.clone_from(image),
                    None => kustomize.images.push(image.clone()),
                }
            }
        }
        Ok(())
    }

    fn apply_sync_policy(&self, spec: &mut ApplicationSpec) -> Result<(), SpecFlagError> {
        let touched = self.sync_policy.is_some()
            || self.auto_prune.is_some()
            || self.self_heal.is_some()
            || self.allow_empty.is_some()
            || !self.sync_options.is_empty();
        if !touched {
            return Ok(());
        }
        let policy = spec.sync_policy.get_or_insert_with(SyncPolicy::default);
        match self.sync_policy {
            Some(SyncPolicyFlag::Manual) => policy.automated = None,
            Some(SyncPolicyFlag::Automated) => {
                policy.automated.get_or_insert_with(AutomatedSync::default);
            }
            None => {}
        }
        for (value, flag, field) in [
            (self.auto_prune, "--auto-prune", AutomatedField::Prune),
            (self.self_heal, "--self-heal", AutomatedField::SelfHeal),
            (
                self.allow_empty,
                "--allow-empty",
                AutomatedField::AllowEmpty,
            ),
        ] {
            let Some(value) = value else { continue };
            let automated = policy
                .automated
                .as_mut()
                .ok_or(SpecFlagError::NotAutomated { flag })?;
            *field.of(automated) = value;
        }
        for option in &self.sync_options {
            let key = option_key(option);
            policy.sync_options.retain(|old| option_key(old) != key);
            policy.sync_options.push(option.clone());
        }
        Ok(())
    }
}

/// One of the flags of automated sync.
#[derive(Clone, Copy)]
enum AutomatedField {
    Prune,
    SelfHeal,
    AllowEmpty,
}

impl AutomatedField {
    fn of(self, automated: &mut AutomatedSync) -> &mut bool {
        match self {
            Self::Prune => &mut automated.prune,
            Self::SelfHeal => &mut automated.self_heal,
            Self::AllowEmpty => &mut automated.allow_empty,
        }
    }
}

/// The Helm flags of `flags` on `helm`.
fn apply_helm(flags: &SpecFlags, helm: &mut HelmSource) -> Result<(), SpecFlagError> {
    if let Some(name) = &flags.release_name {
        helm.release_name.clone_from(name);
    }
    for file in &flags.values_files {
        if !helm.value_files.contains(file) {
            helm.value_files.push(file.clone());
        }
    }
    let given = flags
        .helm_set
        .iter()
        .map(|text| ("--helm-set", text, false))
        .chain(
            flags
                .helm_set_string
                .iter()
                .map(|text| ("--helm-set-string", text, true)),
        );
    for (flag, text, force_string) in given {
        let (name, value) = text
            .split_once('=')
            .filter(|(name, _)| !name.is_empty())
            .ok_or_else(|| SpecFlagError::NotNameValue {
                flag,
                text: text.clone(),
            })?;
        let parameter = HelmParameter {
            name: name.to_owned(),
            value: value.to_owned(),
            force_string,
        };
        match helm.parameters.iter_mut().find(|old| old.name == name) {
            Some(old) => *old = parameter,
            None => helm.parameters.push(parameter),
        }
    }
    Ok(())
}

impl UnsetFlags {
    /// Whether any flag is given.
    #[must_use]
    pub fn any(&self) -> bool {
        !self.parameters.is_empty()
            || !self.values_files.is_empty()
            || self.values_literal
            || !self.kustomize_images.is_empty()
            || self.nameprefix
            || self.namesuffix
            || !self.sync_options.is_empty()
    }

    /// Removes from `spec` (of Application `app`) what the flags name; a Helm or Kustomize
    /// section left empty goes.
    ///
    /// # Errors
    /// The Application has several sources.
    pub fn apply(&self, app: &str, spec: &mut ApplicationSpec) -> Result<(), SpecFlagError> {
        let source_flag = [
            (!self.parameters.is_empty(), "--parameter"),
            (!self.values_files.is_empty(), "--values"),
            (self.values_literal, "--values-literal"),
            (!self.kustomize_images.is_empty(), "--kustomize-image"),
            (self.nameprefix, "--nameprefix"),
            (self.namesuffix, "--namesuffix"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
        if let Some(flag) = source_flag
            && !spec.sources.is_empty()
        {
            return Err(SpecFlagError::MultiSource {
                app: app.to_owned(),
                flag,
            });
        }
        let source = &mut spec.source;
        if let Some(helm) = source.helm.as_mut() {
            helm.parameters
                .retain(|parameter| !self.parameters.contains(&parameter.name));
            helm.value_files
                .retain(|file| !self.values_files.contains(file));
            if self.values_literal {
                helm.values.clear();
                helm.values_object = None;
            }
            if **helm == HelmSource::default() {
                source.helm = None;
            }
        }
        if let Some(kustomize) = source.kustomize.as_mut() {
            kustomize.images.retain(|image| {
                !self
                    .kustomize_images
                    .iter()
                    .any(|name| image_name(name) == image_name(image))
            });
            if self.nameprefix {
                kustomize.name_prefix.clear();
            }
            if self.namesuffix {
                kustomize.name_suffix.clear();
            }
            if **kustomize == KustomizeSource::default() {
                source.kustomize = None;
            }
        }
        if let Some(policy) = spec.sync_policy.as_mut() {
            policy
                .sync_options
                .retain(|option| !self.sync_options.contains(&option_key(option).to_owned()));
        }
        Ok(())
    }
}

/// The image a Kustomize image override is for: before `=`, else without its tag or digest
/// (`nginx` of `nginx=nginx:1.27`, of `nginx:1.27` and of `nginx@sha256:…`).
fn image_name(image: &str) -> &str {
    if let Some((name, _)) = image.split_once('=') {
        return name;
    }
    let image = image.split_once('@').map_or(image, |(name, _)| name);
    let last_slash = image.rfind('/').map_or(0, |at| at + 1);
    match image[last_slash..].find(':') {
        Some(colon) => &image[..last_slash + colon],
        None => image,
    }
}

/// The key of a sync option (`CreateNamespace` of `CreateNamespace=true`).
fn option_key(option: &str) -> &str {
    option.split_once('=').map_or(option, |(key, _)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ApplicationSpec {
        serde_json::from_value(serde_json::json!({
            "project": "default",
            "source": {
                "repoURL": "https://git.example/shop", "path": "web", "targetRevision": "main",
                "helm": {"parameters": [{"name": "replicas", "value": "1"}], "valueFiles": ["a.yaml"]}
            },
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
            "syncPolicy": {"syncOptions": ["CreateNamespace=true"]}
        }))
        .unwrap()
    }

    #[test]
    fn set_changes_what_is_named_and_keeps_the_rest() {
        let flags = SpecFlags {
            revision: Some("v2".into()),
            dest_name: Some("edge".into()),
            helm_set: vec!["replicas=3".into(), "image.tag=1.2".into()],
            values_files: vec!["b.yaml".into(), "a.yaml".into()],
            sync_policy: Some(SyncPolicyFlag::Automated),
            self_heal: Some(true),
            sync_options: vec!["CreateNamespace=false".into()],
            ..SpecFlags::default()
        };
        let mut changed = spec();
        flags.apply("web", &mut changed).unwrap();
        let mut expected = spec();
        expected.source.target_revision = "v2".into();
        expected.destination.server = None;
        expected.destination.name = Some("edge".into());
        let helm = expected.source.helm.as_mut().unwrap();
        helm.parameters[0].value = "3".into();
        helm.parameters.push(HelmParameter {
            name: "image.tag".into(),
            value: "1.2".into(),
            force_string: false,
        });
        helm.value_files.push("b.yaml".into());
        let policy = expected.sync_policy.as_mut().unwrap();
        policy.automated = Some(AutomatedSync {
            self_heal: true,
            ..AutomatedSync::default()
        });
        policy.sync_options = vec!["CreateNamespace=false".into()];
        assert_eq!(changed, expected);
    }

    #[test]
    fn unset_removes_what_is_named_and_empty_sections() {
        let flags = UnsetFlags {
            parameters: vec!["replicas".into()],
            values_files: vec!["a.yaml".into()],
            sync_options: vec!["CreateNamespace".into()],
            ..UnsetFlags::default()
        };
        let mut changed = spec();
        flags.apply("web", &mut changed).unwrap();
        assert_eq!(changed.source.helm, None);
        assert!(changed.sync_policy.unwrap().sync_options.is_empty());
        assert_eq!(changed.source.path, "web");
    }

    #[test]
    fn refusals_name_the_flag() {
        let bad = SpecFlags {
            helm_set: vec!["novalue".into()],
            ..SpecFlags::default()
        };
        assert_eq!(
            bad.apply("web", &mut spec()).unwrap_err().to_string(),
            "--helm-set \"novalue\": not NAME=VALUE"
        );
        let prune = SpecFlags {
            auto_prune: Some(true),
            ..SpecFlags::default()
        };
        assert_eq!(
            prune.apply("web", &mut spec()),
            Err(SpecFlagError::NotAutomated {
                flag: "--auto-prune"
            })
        );
        let mut several = spec();
        several.sources = vec![several.source.clone()];
        let path = SpecFlags {
            path: Some("x".into()),
            ..SpecFlags::default()
        };
        assert!(matches!(
            path.apply("web", &mut several),
            Err(SpecFlagError::MultiSource { flag: "--path", .. })
        ));
    }

    #[test]
    fn kustomize_images_are_matched_by_image_name() {
        assert_eq!(image_name("nginx=nginx:1.27"), "nginx");
        assert_eq!(
            image_name("registry:5000/team/api:1.2"),
            "registry:5000/team/api"
        );
        assert_eq!(image_name("api@sha256:abc"), "api");
        let flags = SpecFlags {
            kustomize_images: vec!["api:2".into()],
            ..SpecFlags::default()
        };
        let mut changed = spec();
        changed.source.kustomize = Some(Box::new(KustomizeSource {
            images: vec!["api:1".into(), "db:9".into()],
            ..KustomizeSource::default()
        }));
        flags.apply("web", &mut changed).unwrap();
        assert_eq!(changed.source.kustomize.unwrap().images, ["api:2", "db:9"]);
    }
}

//! Kustomize sources: the Application-level overrides of `source.kustomize` go into a private
//! kustomization (in a temporary directory, never the repository) whose one resource is the
//! source's path, and that kustomization is built. Building the overrides ([`overlay`]) and
//! reading image specs ([`image_override`]) are pure. Since the overrides sit in a kustomization
//! of their own, a `namePrefix`/`nameSuffix` is added to the one the source sets (Argo CD's
//! `kustomize edit` replaces it). A `commonLabels`/`commonAnnotations` key the source's
//! kustomization sets itself is refused unless `forceCommonLabels`/`forceCommonAnnotations`
//! (then it wins), as Argo CD's `kustomize edit add label|annotation` without `--force`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use flotilla_core::api::kustomize_source::{KustomizeReplica, KustomizeSource};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::toolchain::Toolchain;
use super::{SourceError, SourceOptions, inside};

/// The file names that make a directory a kustomization, as kustomize looks for them.
pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// One `images` entry of a kustomization from an Argo CD image override: `name=newName:tag`,
/// `name=newName@digest`, `name=newName`, `name:tag` or `name@digest`.
///
/// # Errors
/// An empty name.
pub fn image_override(spec: &str) -> Result<Value, String> {
    let (name, target) = match spec.split_once('=') {
        Some((name, target)) => (Some(name.trim()), target.trim()),
        None => (None, spec.trim()),
    };
    let (target, digest) = match target.split_once('@') {
        Some((image, digest)) => (image, Some(digest)),
        None => (target, None),
    };
    let last_slash = target.rfind('/').map_or(0, |i| i + 1);
    let (image, tag) = match target[last_slash..].rfind(':') {
        Some(colon) => (
            &target[..last_slash + colon],
            Some(&target[last_slash + colon + 1..]),
        ),
        None => (target, None),
    };
    let mut entry = Map::new();
    match name {
        Some(name) => {
            entry.insert("name".into(), name.into());
            if !image.is_empty() && image != name {
                entry.insert("newName".into(), image.into());
            }
        }
        None => {
            entry.insert("name".into(), image.into());
        }
    }
    if entry["name"].as_str().is_none_or(str::is_empty) {
        return Err(format!("{spec:?} names no image"));
    }
    if let Some(tag) = tag {
        entry.insert("newTag".into(), tag.into());
    }
    if let Some(digest) = digest {
        entry.insert("digest".into(), digest.into());
    }
    Ok(Value::Object(entry))
}

/// The private kustomization, to be written in the directory `home`, that applies `overrides`
/// to the kustomization at `root` (both absolute; kustomize takes only relative paths);
/// `application` and `namespace` fill `${ARGOCD_APP_NAME}` and `${ARGOCD_APP_NAMESPACE}` in
/// `commonAnnotations` when `commonAnnotationsEnvsubst` is set. Patches given by `path` are
/// read (inside `root`) and written inline.
///
/// # Errors
/// An override that cannot be used, naming the field.
pub fn overlay(
    root: &Path,
    home: &Path,
    overrides: &KustomizeSource,
    application: &str,
    namespace: Option<&str>,
) -> Result<Value, SourceError> {
    refuse_unforced(root, overrides)?;
    let mut kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative_to(root, home)],
    });
    for (key, value) in [
        ("namePrefix", &overrides.name_prefix),
        ("nameSuffix", &overrides.name_suffix),
        ("namespace", &overrides.namespace),
    ] {
        if !value.is_empty() {
            kustomization[key] = value.as_str().into();
        }
    }
    let lists = [
        (
            "images",
            each(&overrides.images, "images", |spec, field| {
                image_override(spec).map_err(|message| SourceError::Field { field, message })
            })?,
        ),
        ("replicas", each(&overrides.replicas, "replicas", replica)?),
        (
            "components",
            each(&overrides.components, "components", |c, field| {
                component(root, home, c, field)
            })?,
        ),
        (
            "patches",
            each(&overrides.patches, "patches", |patch, field| {
                inline_patch(root, patch, &field)
            })?,
        ),
    ];
    for (key, list) in lists {
        if let Some(list) = list {
            kustomization[key] = list;
        }
    }
    if !overrides.common_labels.is_empty() {
        kustomization["labels"] = json!([{
            "pairs": overrides.common_labels,
            "includeSelectors": !overrides.label_without_selector,
        }]);
    }
    if !overrides.common_annotations.is_empty() {
        let expand = |value: &str| {
            if overrides.common_annotations_envsubst {
                value
                    .replace("${ARGOCD_APP_NAME}", application)
                    .replace("${ARGOCD_APP_NAMESPACE}", namespace.unwrap_or_default())
            } else {
                value.to_owned()
            }
        };
        let annotations: Map<String, Value> = overrides
            .common_annotations
            .iter()
            .map(|(key, value)| (key.clone(), expand(value).into()))
            .collect();
        kustomization["commonAnnotations"] = annotations.into();
    }
    Ok(kustomization)
}

/// Refuses a `commonLabels` or `commonAnnotations` key that the kustomization at `root` sets
/// itself unless its `force` flag is set, as `kustomize edit add label|annotation` (which Argo
/// CD runs, with `--force` only when `forceCommonLabels`/`forceCommonAnnotations`) refuses it.
fn refuse_unforced(root: &Path, overrides: &KustomizeSource) -> Result<(), SourceError> {
    let checks = [
        (
            "commonLabels",
            "forceCommonLabels",
            &overrides.common_labels,
            overrides.force_common_labels,
        ),
        (
            "commonAnnotations",
            "forceCommonAnnotations",
            &overrides.common_annotations,
            overrides.force_common_annotations,
        ),
    ];
    if checks
        .iter()
        .all(|(_, _, keys, force)| *force || keys.is_empty())
    {
        return Ok(());
    }
    let Some(own) = KUSTOMIZATION_FILES
        .iter()
        .map(|name| root.join(name))
        .find(|file| file.is_file())
    else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&own).unwrap_or_default();
    // An unreadable kustomization is kustomize's to report when it builds.
    let Ok(own) = serde_saphyr::from_str::<Value>(&text) else {
        return Ok(());
    };
    for (field, force_field, keys, force) in checks {
        if force {
            continue;
        }
        let set = own.get(field).and_then(Value::as_object);
        if let Some(key) = keys
            .keys()
            .find(|key| set.is_some_and(|set| set.contains_key(*key)))
        {
            return Err(SourceError::Field {
                field: format!("kustomize.{field}"),
                message: format!(
                    "{key:?} is already in the kustomization's {field}; set {force_field}: true to                      replace it (as Argo CD's kustomize edit refuses it without --force)"
                ),
            });
        }
    }
    Ok(())
}

/// The override list `items` (the field `kustomize.<name>`) converted item by item, each told
/// its field (`kustomize.<name>[i]`); None when empty.
fn each<T>(
    items: &[T],
    name: &str,
    convert: impl Fn(&T, String) -> Result<Value, SourceError>,
) -> Result<Option<Value>, SourceError> {
    if items.is_empty() {
        return Ok(None);
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| convert(item, format!("kustomize.{name}[{i}]")))
        .collect::<Result<Vec<_>, _>>()
        .map(|list| Some(list.into()))
}

/// One `replicas` entry, its count a number (or a string of digits).
fn replica(replica: &KustomizeReplica, field: String) -> Result<Value, SourceError> {
    let count = match &replica.count {
        IntOrString::Int(count) => Some(i64::from(*count)),
        IntOrString::String(text) => text.trim().parse().ok(),
    };
    count
        .map(|count| json!({"name": replica.name, "count": count}))
        .ok_or_else(|| SourceError::Field {
            field: format!("{field}.count"),
            message: format!("{:?} is not a number", replica.count),
        })
}

/// One component, relative to the source path. Components are kustomization directories that
/// usually sit beside the overlay (`../../components/x`): kustomize itself reads only those.
fn component(
    root: &Path,
    home: &Path,
    component: &str,
    field: String,
) -> Result<Value, SourceError> {
    if Path::new(component).is_absolute() || component.contains("://") || component.is_empty() {
        return Err(SourceError::Field {
            field,
            message: format!("{component:?} must be a relative path"),
        });
    }
    Ok(json!(relative_to(&root.join(component), home)))
}

/// The absolute `path` relative to the absolute directory `from`.
fn relative_to(path: &Path, from: &Path) -> PathBuf {
    let mut relative = PathBuf::new();
    for _ in from.components().skip(1) {
        relative.push("..");
    }
    relative.push(path.strip_prefix("/").unwrap_or(path));
    relative
}

/// A patch with its `path` (relative to `root`) replaced by its text.
fn inline_patch(root: &Path, patch: &Value, field: &str) -> Result<Value, SourceError> {
    let mut patch = patch.clone();
    let Some(entry) = patch.as_object_mut() else {
        return Err(SourceError::Field {
            field: field.to_owned(),
            message: "not a mapping".into(),
        });
    };
    if let Some(path) = entry.remove("path") {
        let path = path.as_str().unwrap_or_default();
        let file = inside(root, path, &format!("{field}.path"))?;
        let text = std::fs::read_to_string(&file).map_err(|error| SourceError::Field {
            field: format!("{field}.path"),
            message: format!("{path:?}: {error}"),
        })?;
        entry.insert("patch".into(), text.into());
    }
    if !entry.get("patch").is_some_and(Value::is_string) {
        return Err(SourceError::Field {
            field: field.to_owned(),
            message: "needs patch or path".into(),
        });
    }
    Ok(patch)
}

/// The flags that let kustomize inflate the kustomization's `helmCharts` with `helm` (Flotilla's
/// helm, in the run's private HOME and without network like every run), the chart seeing
/// `kubeVersion` as `.Capabilities.KubeVersion` and `apiVersions` in
/// `.Capabilities.APIVersions`, as Argo CD passes them.
#[must_use]
pub fn helm_flags(overrides: &KustomizeSource, helm: &Path) -> Vec<OsString> {
    let mut flags: Vec<OsString> = vec!["--enable-helm".into(), "--helm-command".into()];
    flags.push(helm.into());
    if !overrides.kube_version.is_empty() {
        flags.extend([
            "--helm-kube-version".into(),
            overrides.kube_version.clone().into(),
        ]);
    }
    for api_version in &overrides.api_versions {
        flags.extend(["--helm-api-versions".into(), api_version.into()]);
    }
    flags
}

/// Builds the kustomization at `root` with the overrides of `options`; returns the output.
///
/// # Errors
/// Bad overrides (naming the field), an unusable kustomize, or its own failure with its stderr.
pub fn build(
    root: &Path,
    options: &SourceOptions,
    toolchain: &Toolchain,
) -> Result<String, SourceError> {
    let tools = &toolchain.tools;
    if let (_, Err(error)) = toolchain.versions() {
        return Err(SourceError::Unusable {
            tool: "kustomize",
            error: error.clone(),
        });
    }
    let overrides = options.kustomize.clone().unwrap_or_default();
    let private = super::private_dir()?;
    let kustomization = overlay(
        root,
        private.path(),
        &overrides,
        &options.application,
        options.namespace.as_deref(),
    )?;
    let path = private.path().join("kustomization.yaml");
    let text = serde_json::to_string_pretty(&kustomization).unwrap_or_default();
    std::fs::write(&path, text).map_err(|error| SourceError::Private {
        path: path.clone(),
        error,
    })?;
    let flags = helm_flags(&overrides, &tools.helm);
    tools
        .kustomize_build(private.path().into(), flags)
        .run(tools.timeout)
        .map_err(|error| SourceError::Tool {
            tool: "kustomize",
            error,
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn image_overrides_as_kustomize_edit_set_image() {
        let cases = [
            ("nginx:1.27", json!({"name": "nginx", "newTag": "1.27"})),
            (
                "nginx=registry.local:5000/web/nginx:1.27",
                json!({"name": "nginx", "newName": "registry.local:5000/web/nginx", "newTag": "1.27"}),
            ),
            (
                "app@sha256:abc",
                json!({"name": "app", "digest": "sha256:abc"}),
            ),
            (
                "app=mirror/app",
                json!({"name": "app", "newName": "mirror/app"}),
            ),
            (
                "registry.local:5000/app",
                json!({"name": "registry.local:5000/app"}),
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(image_override(spec).unwrap(), expected, "{spec}");
        }
        assert_eq!(
            image_override("=x:1").unwrap_err(),
            "\"=x:1\" names no image"
        );
    }

    #[test]
    fn overrides_become_a_private_kustomization_over_the_path() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("patch.yaml"), "- op: add\n").unwrap();
        let overrides = KustomizeSource {
            name_prefix: "eu-".into(),
            namespace: "shop".into(),
            images: vec!["api:2.0".into()],
            replicas: vec![KustomizeReplica {
                name: "api".into(),
                count: IntOrString::String("3".into()),
            }],
            common_labels: BTreeMap::from([("tier".into(), "backend".into())]),
            label_without_selector: true,
            common_annotations: BTreeMap::from([("owner".into(), "${ARGOCD_APP_NAME}".into())]),
            common_annotations_envsubst: true,
            components: vec!["/c".into()],
            ..KustomizeSource::default()
        };
        let error = overlay(
            root.path(),
            Path::new("/tmp/p"),
            &overrides,
            "backend",
            Some("shop"),
        )
        .unwrap_err();
        assert!(
            error.to_string().starts_with("kustomize.components[0]"),
            "{error}"
        );
        let overrides = KustomizeSource {
            components: vec!["../components/ha".into()],
            patches: vec![json!({"path": "patch.yaml", "target": {"kind": "Deployment"}})],
            ..overrides
        };
        let overlay = overlay(
            root.path(),
            Path::new("/tmp/p"),
            &overrides,
            "backend",
            Some("shop"),
        )
        .unwrap();
        let up = |path: &Path| Path::new("../..").join(path.strip_prefix("/").unwrap());
        assert_eq!(
            overlay,
            json!({
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [up(root.path())],
                "namePrefix": "eu-",
                "namespace": "shop",
                "images": [{"name": "api", "newTag": "2.0"}],
                "replicas": [{"name": "api", "count": 3}],
                "labels": [{"pairs": {"tier": "backend"}, "includeSelectors": false}],
                "commonAnnotations": {"owner": "backend"},
                "components": [up(&root.path().join("../components/ha"))],
                "patches": [{"patch": "- op: add\n", "target": {"kind": "Deployment"}}],
            })
        );
    }

    #[test]
    fn helm_charts_inflate_with_our_helm_and_the_capabilities_given() {
        let text = |overrides: &KustomizeSource| {
            helm_flags(overrides, Path::new("/tools/helm"))
                .into_iter()
                .map(|f| f.into_string().unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            text(&KustomizeSource::default()),
            "--enable-helm --helm-command /tools/helm"
        );
        let overrides = KustomizeSource {
            kube_version: "1.31.0".into(),
            api_versions: vec!["a.io/v1".into(), "b.io/v2/Thing".into()],
            ..KustomizeSource::default()
        };
        assert_eq!(
            text(&overrides),
            "--enable-helm --helm-command /tools/helm --helm-kube-version 1.31.0 \
             --helm-api-versions a.io/v1 --helm-api-versions b.io/v2/Thing"
        );
    }

    #[test]
    fn a_bad_replica_count_is_named() {
        let overrides = KustomizeSource {
            replicas: vec![KustomizeReplica {
                name: "api".into(),
                count: IntOrString::String("many".into()),
            }],
            ..KustomizeSource::default()
        };
        let error = overlay(Path::new("/r"), Path::new("/p"), &overrides, "a", None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "kustomize.replicas[0].count: String(\"many\") is not a number"
        );
    }
}

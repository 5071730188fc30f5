//! `--resource-customizations-dir DIR` and `--health-status-grace` of the controller and of
//! `flotilla sync`, `simulate` and `diff`: a library of health scripts laid out as Argo CD's
//! `resource_customizations` directory (`GROUP/KIND/health.lua`, `KIND/health.lua` for the core
//! group), so a team mounts the scripts it uses, and how long a custom resource whose CRD
//! declares a status subresource is awaited without status.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use flotilla_core::health::{HealthChecks, HealthDefaults, LibraryScript};
use flotilla_generators::duration::parse_duration;

/// The script file of a kind's directory.
const HEALTH_SCRIPT: &str = "health.lua";

/// The health flags.
#[derive(clap::Args, Debug, Clone)]
pub struct HealthArgs {
    /// A directory of Lua health checks laid out as Argo CD's resource_customizations
    /// (GROUP/KIND/health.lua; KIND/health.lua for the core group), run with the open libraries
    /// as Argo CD runs its library; a settings ConfigMap's check for the same kind wins.
    #[arg(long, value_name = "DIR")]
    pub resource_customizations_dir: Option<PathBuf>,
    /// How long a custom resource whose CRD declares a status subresource is Progressing
    /// without any status before its kind's rule judges it (for controllers that never write
    /// status), e.g. 5m, 90s.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub health_status_grace: Duration,
}

impl Default for HealthArgs {
    fn default() -> Self {
        Self {
            resource_customizations_dir: None,
            health_status_grace: flotilla_core::health::DEFAULT_STATUS_GRACE,
        }
    }
}

impl HealthArgs {
    /// The health defaults the flags set, their scripts compiled.
    ///
    /// # Errors
    /// A directory or script that cannot be read, or a script that does not compile.
    pub fn read(&self) -> anyhow::Result<HealthDefaults> {
        let defaults = HealthDefaults {
            library: self
                .resource_customizations_dir
                .as_deref()
                .map(read_library)
                .transpose()?
                .unwrap_or_default(),
            status_grace: self.health_status_grace,
        };
        HealthChecks::default().with_defaults(&defaults)?;
        Ok(defaults)
    }
}

/// The `health.lua` scripts of `dir`, in path order; other files (Argo CD's `health_test.yaml`,
/// `testdata/`, `actions/`) are not health checks and are left alone.
///
/// # Errors
/// A directory or script that cannot be read, naming it.
pub fn read_library(dir: &Path) -> anyhow::Result<Vec<LibraryScript>> {
    let mut scripts = Vec::new();
    for group in sorted_dirs(dir)? {
        let group_name = file_name(&group);
        if let Some(script) = script_in(&group, "", &group_name)? {
            scripts.push(script);
            continue;
        }
        for kind in sorted_dirs(&group)? {
            if let Some(script) = script_in(&kind, &group_name, &file_name(&kind))? {
                scripts.push(script);
            }
        }
    }
    Ok(scripts)
}

/// The script of `kind` in `kind_dir`, if it has one.
fn script_in(kind_dir: &Path, group: &str, kind: &str) -> anyhow::Result<Option<LibraryScript>> {
    let path = kind_dir.join(HEALTH_SCRIPT);
    if !path.is_file() {
        return Ok(None);
    }
    let source =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(LibraryScript {
        group: group.to_owned(),
        kind: kind.to_owned(),
        path: path.display().to_string(),
        source,
    }))
}

/// The subdirectories of `dir`, sorted.
fn sorted_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading directory {}", dir.display()))?;
    let mut dirs = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("reading directory {}", dir.display()))?
            .path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_argo_cd_s_layout() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "cert-manager.io/Certificate/health.lua",
            "return {status = 'Healthy'}",
        );
        write("cert-manager.io/Certificate/health_test.yaml", "tests: []");
        write(
            "cert-manager.io/Certificate/testdata/ready.yaml",
            "kind: Certificate",
        );
        write("Service/health.lua", "return {status = 'Progressing'}");
        write("apps/Deployment/actions/restart/action.lua", "return obj");
        let scripts = read_library(dir.path()).unwrap();
        let found: Vec<(&str, &str, &str)> = scripts
            .iter()
            .map(|s| (s.group.as_str(), s.kind.as_str(), s.source.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("", "Service", "return {status = 'Progressing'}"),
                (
                    "cert-manager.io",
                    "Certificate",
                    "return {status = 'Healthy'}"
                ),
            ]
        );
        let missing = read_library(&dir.path().join("nope")).unwrap_err();
        assert!(
            format!("{missing:#}").starts_with("reading directory "),
            "{missing:#}"
        );
    }
}

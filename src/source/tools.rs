//! Which generator tools Flotilla runs: `helm` (v3) and kustomize (v5, a standalone `kustomize`
//! or `kubectl kustomize`), from the `--helm`/`--kustomize`/`--kubectl` flags, else the
//! `FLOTILLA_HELM`/`FLOTILLA_KUSTOMIZE`/`FLOTILLA_KUBECTL` variables, else `PATH`; Flotilla's
//! own binary for Jsonnet ([`super::jsonnet`]); the Config Management Plugins of
//! `--plugins-dir` ([`super::plugin`]); how long a run may take and how much memory a
//! Jsonnet evaluation may use. Given by the command line to the process's
//! [`super::Toolchain`], which checks the versions of helm and kustomize when first used.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::run::{ToolCommand, ToolError};

/// How long one tool run (or Jsonnet evaluation) may take: Argo CD's default exec timeout.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(90);

/// The most memory one Jsonnet evaluation may use, in MiB.
pub const DEFAULT_JSONNET_MEMORY_MIB: u64 = 1024;

/// How kustomize is run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kustomize {
    /// A standalone binary: `kustomize build DIR`.
    Standalone(PathBuf),
    /// `kubectl kustomize DIR`.
    Kubectl(PathBuf),
}

impl std::fmt::Display for Kustomize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Standalone(program) => write!(f, "{} build", program.display()),
            Self::Kubectl(program) => write!(f, "{} kustomize", program.display()),
        }
    }
}

/// The tools of this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tools {
    /// The `helm` binary.
    pub helm: PathBuf,
    /// How kustomize is run.
    pub kustomize: Kustomize,
    /// Flotilla's own binary, which evaluates Jsonnet files (`flotilla jsonnet-eval`).
    pub flotilla: PathBuf,
    /// How long one run may take (a Jsonnet evaluation too).
    pub timeout: Duration,
    /// The most memory one Jsonnet evaluation may use, in MiB.
    pub jsonnet_memory_mib: u64,
    /// The Config Management Plugins (`--plugins-dir`), ordered by the name Applications give
    /// them.
    pub plugins: Vec<flotilla_core::cmp::ConfigManagementPlugin>,
}

/// A tool whose version is not one Flotilla runs.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("{0}")]
    Run(#[from] ToolError),
    #[error("{tool} {found:?} is not supported (expected {expected})")]
    Unsupported {
        tool: &'static str,
        found: String,
        expected: &'static str,
    },
}

/// The tools of the variables and `PATH`, with the default limits: what a command given no
/// tool flags runs.
impl Default for Tools {
    fn default() -> Self {
        Self::new(None, None, None)
    }
}

impl Tools {
    /// The tools given as flags, each else from its variable, else from `PATH`; this binary
    /// for Jsonnet, and the default limits.
    #[must_use]
    pub fn new(
        helm: Option<PathBuf>,
        kustomize: Option<PathBuf>,
        kubectl: Option<PathBuf>,
    ) -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let kustomize = match kustomize.or_else(|| var("FLOTILLA_KUSTOMIZE")) {
            Some(path) => Kustomize::Standalone(path),
            None => Kustomize::Kubectl(
                kubectl
                    .or_else(|| var("FLOTILLA_KUBECTL"))
                    .unwrap_or_else(|| "kubectl".into()),
            ),
        };
        Self {
            helm: helm
                .or_else(|| var("FLOTILLA_HELM"))
                .unwrap_or_else(|| "helm".into()),
            kustomize,
            flotilla: std::env::current_exe().unwrap_or_else(|_| "flotilla".into()),
            timeout: DEFAULT_TOOL_TIMEOUT,
            jsonnet_memory_mib: DEFAULT_JSONNET_MEMORY_MIB,
            plugins: Vec::new(),
        }
    }

    /// The helm command with these arguments, without network.
    #[must_use]
    pub fn helm(&self, args: Vec<OsString>) -> ToolCommand {
        ToolCommand {
            program: self.helm.clone(),
            args,
            network: false,
        }
    }

    /// The kustomize build of `dir` with `flags` (which both forms take alike).
    #[must_use]
    pub fn kustomize_build(&self, dir: OsString, flags: Vec<OsString>) -> ToolCommand {
        let (program, verb) = match &self.kustomize {
            Kustomize::Standalone(program) => (program, "build"),
            Kustomize::Kubectl(program) => (program, "kustomize"),
        };
        let mut args = vec![verb.into(), dir];
        args.extend(flags);
        ToolCommand {
            program: program.clone(),
            args,
            network: false,
        }
    }

    /// helm's version (`v3.17.2+gcc0bbbd`).
    ///
    /// # Errors
    /// helm cannot be run, or is not v3.
    pub fn helm_version(&self) -> Result<String, VersionError> {
        let out = self
            .helm(vec!["version".into(), "--short".into()])
            .run(self.timeout)?;
        check("helm", out.trim(), "v3.", "helm v3")
    }

    /// kustomize's version (`v5.5.0`), from `kustomize version` or `kubectl version --client`.
    ///
    /// # Errors
    /// The tool cannot be run, or its kustomize is not v5.
    pub fn kustomize_version(&self) -> Result<String, VersionError> {
        let (command, label) = match &self.kustomize {
            Kustomize::Standalone(program) => (
                ToolCommand {
                    program: program.clone(),
                    args: vec!["version".into()],
                    network: false,
                },
                "kustomize",
            ),
            Kustomize::Kubectl(program) => (
                ToolCommand {
                    program: program.clone(),
                    args: vec!["version".into(), "--client".into()],
                    network: false,
                },
                "kubectl kustomize",
            ),
        };
        let out = command.run(self.timeout)?;
        let version = out
            .lines()
            .find_map(|line| line.strip_prefix("Kustomize Version:"))
            .unwrap_or(&out)
            .trim();
        check(label, version, "v5.", "kustomize v5")
    }
}

fn check(
    tool: &'static str,
    found: &str,
    prefix: &str,
    expected: &'static str,
) -> Result<String, VersionError> {
    if found.starts_with(prefix) {
        Ok(found.to_owned())
    } else {
        Err(VersionError::Unsupported {
            tool,
            found: found.to_owned(),
            expected,
        })
    }
}

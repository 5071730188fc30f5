//! Config Management Plugin sources, as Argo CD's plugin sidecar runs them: the plugins are the
//! `ConfigManagementPlugin` files of a directory ([`load_dir`]: one plugin per `*.yaml`/`*.yml`
//! file, read strictly at start); a source's repository is copied into a private directory
//! (without `.git`; files 0644 and directories 0755 unless the plugin sets `preserveFileMode`),
//! the plugin is chosen there ([`flotilla_core::cmp::choose`]), and its `init` then `generate`
//! run in the copy's source path, each under the exec timeout, with Argo CD's environment
//! ([`flotilla_core::cmp::plugin_environment`]) over a clean one (`PATH`, a private `HOME`).
//! `generate`'s stdout is the manifests. Plugins may reach the network (a secret store, say).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use flotilla_core::api::plugin_source::PluginSource;
use flotilla_core::cmp::{
    ConfigManagementPlugin, Discovery, PluginCommand, PluginFileError, choose, order,
    plugin_environment,
};

use super::run::{RunInput, ToolCommand, ToolError};
use super::tools::Tools;
use super::{SourceError, SourceOptions, private_dir};

/// A plugins directory that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginDirError {
    #[error("cannot read the plugins directory {dir}: {error}")]
    Read {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(transparent)]
    File(#[from] PluginFileError),
}

/// The plugins of `dir`: every `*.yaml` and `*.yml` file in it (hidden ones aside, as a mounted
/// ConfigMap's bookkeeping is), ordered by the name Applications give them.
///
/// # Errors
/// The directory or a file cannot be read; a file is not a valid plugin (naming the file and
/// the field); two plugins have one name.
pub fn load_dir(dir: &Path) -> Result<Vec<ConfigManagementPlugin>, PluginDirError> {
    let read = |error| PluginDirError::Read {
        dir: dir.to_owned(),
        error,
    };
    let mut plugins = Vec::new();
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(read)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(read)?;
    paths.sort();
    for path in paths {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
        if name.starts_with('.') || !yaml || !path.is_file() {
            continue;
        }
        let text = fs::read_to_string(&path).map_err(read)?;
        plugins.push(ConfigManagementPlugin::parse(
            &path.display().to_string(),
            &text,
        )?);
    }
    Ok(order(plugins)?)
}

/// Why a plugin gave no manifests.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("{0}")]
    Select(#[source] Box<flotilla_core::cmp::select::SelectError<ToolError>>),
    #[error("plugin {plugin:?} {step}: {error}")]
    Run {
        plugin: String,
        step: &'static str,
        #[source]
        error: Box<ToolError>,
    },
    #[error("cannot copy the source for the plugin ({path}): {error}")]
    Copy {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// The output of `source.plugin` for the source at `root` (absolute).
///
/// # Errors
/// No plugin renders it; a command fails, runs too long or prints too much; the copy fails.
pub fn render(
    root: &Path,
    options: &SourceOptions,
    plugin: &PluginSource,
    tools: &Tools,
) -> Result<String, SourceError> {
    let work = private_dir()?;
    let repository = super::repository_of(root, &options.path);
    let relative = root.strip_prefix(repository).unwrap_or(Path::new(""));
    let copy = work.path().join("repo");
    let dir = copy.join(relative);
    let environment = plugin_environment(&options.build_environment(), &options.kube, plugin);
    let run = |name: &ConfigManagementPlugin, step: &'static str, command: &PluginCommand| {
        run_command(command, &dir, &environment, tools).map_err(|error| PluginError::Run {
            plugin: name.identity(),
            step,
            error: Box::new(error),
        })
    };
    let output = (|| {
        copy_tree(repository, &copy, false)?;
        let mut listing = None;
        let chosen = choose(&tools.plugins, &plugin.name, |_, rule| match rule {
            Discovery::Command(command) => {
                run_command(command, &dir, &environment, tools).map(|out| !out.trim().is_empty())
            }
            Discovery::Glob(_) => {
                let paths = listing.get_or_insert_with(|| relative_paths(&dir));
                Ok(rule
                    .matches_paths(paths.iter().map(String::as_str))
                    .unwrap_or(false))
            }
        })
        .map_err(|error| PluginError::Select(Box::new(error)))?;
        if chosen.spec.preserve_file_mode {
            fs::remove_dir_all(&copy).map_err(|error| PluginError::Copy {
                path: copy.clone(),
                error,
            })?;
            copy_tree(repository, &copy, true)?;
        }
        if let Some(init) = chosen.spec.init.as_ref().filter(|c| c.is_set()) {
            run(chosen, "init", init)?;
        }
        run(chosen, "generate", &chosen.spec.generate)
    })();
    output.map_err(|error| SourceError::Plugin(Box::new(error)))
}

/// Runs `command` in `dir` with `environment` under the exec timeout; its stdout.
fn run_command(
    command: &PluginCommand,
    dir: &Path,
    environment: &[(String, String)],
    tools: &Tools,
) -> Result<String, ToolError> {
    let (program, args) = command.argv().unwrap_or(("", Vec::new()));
    let command = ToolCommand {
        program: program.into(),
        args: args.into_iter().map(Into::into).collect(),
        network: true,
    };
    let home = command.private_home()?;
    let input = RunInput {
        dir: Some(dir),
        variables: environment,
        ..RunInput::new(home.path())
    };
    command.run_with(tools.timeout, &input)
}

/// Copies the tree at `from` to `to` (which must not exist) without `.git`: files 0644 and
/// directories 0755, or their own modes when `preserve`; symbolic links as they are. The
/// plugin is chosen in the copy with reset modes, and it is made again when the chosen plugin
/// preserves them.
fn copy_tree(from: &Path, to: &Path, preserve: bool) -> Result<(), PluginError> {
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |error| PluginError::Copy { path, error }
    };
    fs::create_dir(to).map_err(failed(to))?;
    let mode = |path: &Path, default: u32| -> Result<u32, PluginError> {
        if preserve {
            let metadata = fs::metadata(path).map_err(failed(path))?;
            Ok(metadata.permissions().mode() & 0o7777)
        } else {
            Ok(default)
        }
    };
    for entry in fs::read_dir(from).map_err(failed(from))? {
        let entry = entry.map_err(failed(from))?;
        if entry.file_name() == ".git" {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(failed(&source))?;
        if kind.is_symlink() {
            let link = fs::read_link(&source).map_err(failed(&source))?;
            std::os::unix::fs::symlink(link, &target).map_err(failed(&target))?;
        } else if kind.is_dir() {
            copy_tree(&source, &target, preserve)?;
            let permissions = fs::Permissions::from_mode(mode(&source, 0o755)?);
            fs::set_permissions(&target, permissions).map_err(failed(&target))?;
        } else if kind.is_file() {
            fs::copy(&source, &target).map_err(failed(&source))?;
            let permissions = fs::Permissions::from_mode(mode(&source, 0o644)?);
            fs::set_permissions(&target, permissions).map_err(failed(&target))?;
        }
    }
    Ok(())
}

/// Every file and directory below `dir`, relative to it and `/`-separated (what discovery
/// globs are matched against); unreadable directories are left out.
fn relative_paths(dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if let Ok(relative) = path.strip_prefix(dir) {
                paths.push(relative.to_string_lossy().into_owned());
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            }
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn the_directory_holds_one_plugin_per_yaml_file() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = |name: &str| {
            format!(
                "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\n\
                 metadata: {{name: {name}}}\nspec: {{generate: {{command: [cat]}}}}\n"
            )
        };
        write(dir.path(), "b.yaml", &plugin("b"));
        write(dir.path(), "a.yml", &plugin("a"));
        write(dir.path(), "README.md", "not a plugin");
        write(dir.path(), "..data/c.yaml", &plugin("c"));
        let plugins = load_dir(dir.path()).unwrap();
        let names: Vec<&str> = plugins.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        write(
            dir.path(),
            "c.yaml",
            &plugin("c").replace("spec: {", "spec: {generat: [x], "),
        );
        let error = load_dir(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("c.yaml: ConfigManagementPlugin \"c\""),
            "{error}"
        );
        assert!(error.contains("spec.generat"), "{error}");
        let missing = load_dir(&dir.path().join("nope")).unwrap_err().to_string();
        assert!(
            missing.starts_with("cannot read the plugins directory"),
            "{missing}"
        );
    }

    #[test]
    fn the_copy_leaves_git_out_and_resets_modes() {
        let from = tempfile::tempdir().unwrap();
        write(from.path(), ".git/HEAD", "ref");
        write(from.path(), "app/run.sh", "echo");
        fs::set_permissions(
            from.path().join("app/run.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let to = tempfile::tempdir().unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        copy_tree(from.path(), &to.path().join("reset"), false).unwrap();
        assert!(!to.path().join("reset/.git").exists());
        assert_eq!(mode(&to.path().join("reset/app/run.sh")), 0o644);
        copy_tree(from.path(), &to.path().join("kept"), true).unwrap();
        assert_eq!(mode(&to.path().join("kept/app/run.sh")), 0o755);
        let mut paths = relative_paths(&to.path().join("kept"));
        paths.sort();
        assert_eq!(paths, ["app", "app/run.sh"]);
    }
}

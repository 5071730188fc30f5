//! Which plugin renders a source, as Argo CD picks it: the plugin the Application names
//! (`<name>` or `<name>-<version>`), which must also match by its discovery rule when it has
//! one; with no name, the first plugin (by that name) whose discovery rule matches. A rule is a
//! glob over the source's files (`fileName`: one directory level per `*`; `find.glob`: `**`
//! crosses directories) or a command (`find.command`) the caller runs.

use globset::{GlobBuilder, GlobMatcher};

use super::config::{ConfigManagementPlugin, PluginCommand, PluginFileError};

/// A plugin's discovery rule.
#[derive(Clone, Debug)]
pub enum Discovery {
    /// Matches when a file or directory of the source matches.
    Glob(GlobMatcher),
    /// Matches when it exits 0 having printed something.
    Command(PluginCommand),
}

impl Discovery {
    /// Whether one of `paths` (relative to the source directory, `/`-separated) matches the
    /// glob; `None` for a command.
    pub fn matches_paths<'p>(&self, paths: impl IntoIterator<Item = &'p str>) -> Option<bool> {
        match self {
            Self::Glob(glob) => Some(paths.into_iter().any(|path| glob.is_match(path))),
            Self::Command(_) => None,
        }
    }
}

impl ConfigManagementPlugin {
    /// Its discovery rule: the first of `fileName`, `find.glob` and `find.command` given, `None`
    /// without one.
    ///
    /// # Errors
    /// The glob does not parse (naming its field).
    pub fn discovery(&self) -> Result<Option<Discovery>, PluginFileError> {
        let Some(discover) = &self.spec.discover else {
            return Ok(None);
        };
        let find = discover.find.clone().unwrap_or_default();
        if !discover.file_name.is_empty() {
            // Go's filepath.Glob: `**` is two `*`s, neither crossing a directory.
            let pattern = discover.file_name.replace("**", "*");
            return self.glob("spec.discover.fileName", &pattern).map(Some);
        }
        if !find.glob.is_empty() {
            return self.glob("spec.discover.find.glob", &find.glob).map(Some);
        }
        let command = PluginCommand {
            command: find.command,
            args: find.args,
        };
        Ok(command.is_set().then_some(Discovery::Command(command)))
    }

    fn glob(&self, field: &'static str, pattern: &str) -> Result<Discovery, PluginFileError> {
        // Joined to the source directory and cleaned, as Argo CD's `filepath.Join` does.
        let cleaned = pattern
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect::<Vec<_>>()
            .join("/");
        GlobBuilder::new(&cleaned)
            .literal_separator(true)
            .build()
            .map(|glob| Discovery::Glob(glob.compile_matcher()))
            .map_err(|error| self.field_error(field, error.to_string()))
    }
}

/// Why no plugin renders a source.
#[derive(Debug, thiserror::Error)]
pub enum SelectError<E: std::error::Error + 'static> {
    #[error(
        "source.plugin: no Config Management Plugins are configured (--plugins-dir, FLOTILLA_PLUGINS_DIR)"
    )]
    NoPlugins,
    #[error("source.plugin.name: no plugin is named {name:?} (the plugins: {known})")]
    Unknown { name: String, known: String },
    #[error("plugin {plugin:?} does not match the source: its discover rule matches nothing")]
    NotMatched { plugin: String },
    #[error("source.plugin: no plugin's discover rule matches the source (tried: {tried})")]
    NoneMatched {
        tried: String,
        #[source]
        last_error: Option<E>,
    },
    #[error("plugin {plugin:?}: its discover command failed: {error}")]
    Discover {
        plugin: String,
        #[source]
        error: E,
    },
    #[error(transparent)]
    File(#[from] PluginFileError),
}

/// The plugin of `plugins` (ordered by identity) that renders a source whose Application names
/// `name` (empty: none), `matches` telling whether a discovery rule matches the source (a glob
/// over its files, or the command run in it).
///
/// # Errors
/// No plugins; an unknown name; the named plugin's rule does not match or its command fails;
/// without a name, no rule matches (with the last command's failure, if any).
pub fn choose<'a, E: std::error::Error + 'static>(
    plugins: &'a [ConfigManagementPlugin],
    name: &str,
    mut matches: impl FnMut(&ConfigManagementPlugin, &Discovery) -> Result<bool, E>,
) -> Result<&'a ConfigManagementPlugin, SelectError<E>> {
    if plugins.is_empty() {
        return Err(SelectError::NoPlugins);
    }
    if !name.is_empty() {
        let Some(plugin) = plugins.iter().find(|p| p.identity() == name) else {
            let known = plugins.iter().map(ConfigManagementPlugin::identity);
            return Err(SelectError::Unknown {
                name: name.to_owned(),
                known: known.collect::<Vec<_>>().join(", "),
            });
        };
        return match plugin.discovery()? {
            None => Ok(plugin),
            Some(rule) => match matches(plugin, &rule) {
                Ok(true) => Ok(plugin),
                Ok(false) => Err(SelectError::NotMatched {
                    plugin: plugin.identity(),
                }),
                Err(error) => Err(SelectError::Discover {
                    plugin: plugin.identity(),
                    error,
                }),
            },
        };
    }
    let mut tried = Vec::new();
    let mut last_error = None;
    for plugin in plugins {
        let Some(rule) = plugin.discovery()? else {
            continue;
        };
        tried.push(plugin.identity());
        match matches(plugin, &rule) {
            Ok(true) => return Ok(plugin),
            Ok(false) => {}
            Err(error) => last_error = Some(error),
        }
    }
    let tried = if tried.is_empty() {
        "none has a discover rule".to_owned()
    } else {
        tried.join(", ")
    };
    Err(SelectError::NoneMatched { tried, last_error })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(name: &str, discover: &str) -> ConfigManagementPlugin {
        let text = format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata: {{name: {name}}}\n\
             spec:\n  generate: {{command: [cat]}}\n{discover}"
        );
        ConfigManagementPlugin::parse(&format!("{name}.yaml"), &text).unwrap()
    }

    const FILES: &[&str] = &[
        "kustomization.yaml",
        "envs",
        "envs/prod.env",
        "envs/a/b.env",
    ];

    fn on_files(_: &ConfigManagementPlugin, rule: &Discovery) -> Result<bool, std::io::Error> {
        rule.matches_paths(FILES.iter().copied())
            .ok_or_else(|| std::io::Error::other("a command"))
    }

    #[test]
    fn globs_match_as_go_and_zglob_do() {
        let matches = |discover: &str| {
            let plugin = plugin("p", discover);
            let rule = plugin.discovery().unwrap().unwrap();
            rule.matches_paths(FILES.iter().copied()).unwrap()
        };
        assert!(matches("  discover: {fileName: ./kustomization.yaml}\n"));
        assert!(matches("  discover: {fileName: 'envs/*.env'}\n"));
        assert!(!matches("  discover: {fileName: '*.env'}\n"), "one level");
        assert!(
            !matches("  discover: {fileName: '**/b.env'}\n"),
            "** is * for fileName"
        );
        assert!(matches("  discover: {find: {glob: '**/b.env'}}\n"));
        assert!(!matches("  discover: {find: {glob: '*/b.env'}}\n"));
        assert!(
            !matches("  discover: {fileName: 'x.yaml', find: {glob: '**/*.env'}}\n"),
            "fileName decides when given"
        );
    }

    #[test]
    fn a_named_plugin_is_used_when_its_rule_matches_or_it_has_none() {
        let plugins = vec![
            plugin("a", "  discover: {fileName: nothing.yaml}\n"),
            plugin("b", ""),
        ];
        let chosen = choose(&plugins, "b", on_files).unwrap();
        assert_eq!(chosen.name, "b");
        let error = choose(&plugins, "a", on_files).unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin \"a\" does not match the source: its discover rule matches nothing"
        );
        let error = choose(&plugins, "c", on_files).unwrap_err();
        assert_eq!(
            error.to_string(),
            "source.plugin.name: no plugin is named \"c\" (the plugins: a, b)"
        );
    }

    #[test]
    fn without_a_name_the_first_matching_rule_wins() {
        let plugins = vec![
            plugin("a", "  discover: {find: {command: [sh, -c, 'true']}}\n"),
            plugin("b", ""),
            plugin("c", "  discover: {find: {glob: '**/*.env'}}\n"),
            plugin("d", "  discover: {fileName: kustomization.yaml}\n"),
        ];
        let chosen = choose(&plugins, "", on_files).unwrap();
        assert_eq!(chosen.name, "c", "a's command failed, b has no rule");
        let error = choose(&plugins[..2], "", on_files).unwrap_err();
        assert_eq!(
            error.to_string(),
            "source.plugin: no plugin's discover rule matches the source (tried: a)"
        );
        assert!(matches!(
            error,
            SelectError::NoneMatched {
                last_error: Some(_),
                ..
            }
        ));
        let error = choose::<std::io::Error>(&[], "", on_files).unwrap_err();
        assert!(matches!(error, SelectError::NoPlugins));
    }
}

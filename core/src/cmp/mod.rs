//! Config Management Plugins as Argo CD has them: the `ConfigManagementPlugin` files read from a
//! plugins directory ([`config`]), which plugin renders a source ([`select`]: by name, else by
//! its discovery rule) and the environment its commands run with ([`environment`]). Pure: the
//! shell (`flotilla::source::plugin`) lists the source's files, runs the commands and parses
//! their output.

pub mod config;
pub mod environment;
pub mod select;

pub use config::{ConfigManagementPlugin, PluginCommand, PluginFileError, order};
pub use environment::{BuildEnvironment, KubeCapabilities, plugin_environment};
pub use select::{Discovery, SelectError, choose};

//! The command-line reference page: every command, its usage and every flag, from clap's
//! definition of the command line (hidden commands left out).

use clap::{Arg, Command, CommandFactory};

use super::markdown::{code, generated_note, table};
use crate::cli::Cli;

/// The page.
#[must_use]
pub fn page() -> String {
    let mut root = Cli::command();
    root.build();
    let mut out = format!("# Command line\n\n{}", generated_note());
    out.push_str(&format!("{}\n\n", text_of(root.get_about())));
    out.push_str(
        "Exit codes, output formats and durations are the same for every command: \
         [Command-line conventions](cli-conventions.md).\n\n## Global options\n\n\
         Accepted by every command.\n\n",
    );
    let globals: Vec<&Arg> = root
        .get_arguments()
        .filter(|a| a.is_global_set() || is_builtin(a))
        .collect();
    out.push_str(&arguments_table(globals.into_iter()));
    for sub in documented(&root) {
        section(sub, &mut out);
    }
    out
}

/// The section of one command and, after it, of each of its subcommands.
fn section(command: &Command, out: &mut String) {
    let name = command
        .get_bin_name()
        .map_or_else(|| command.get_name().to_owned(), str::to_owned);
    out.push_str(&format!("\n## `{name}`\n\n"));
    let about = command.get_long_about().or_else(|| command.get_about());
    out.push_str(&format!("{}\n\n", text_of(about)));
    let aliases: Vec<&str> = command.get_visible_aliases().collect();
    if !aliases.is_empty() {
        out.push_str(&format!("Alias: {}.\n\n", aliases.join(", ")));
    }
    let usage = command.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    out.push_str(&format!("```text\n{usage}\n```\n\n"));
    let own: Vec<&Arg> = command
        .get_arguments()
        .filter(|a| !a.is_global_set() && !is_builtin(a) && !a.is_hide_set())
        .collect();
    if !own.is_empty() {
        out.push_str(&arguments_table(own.into_iter()));
    }
    for sub in documented(command) {
        section(sub, out);
    }
}

/// The subcommands of `command` a user types: not hidden, not clap's own `help`.
fn documented(command: &Command) -> impl Iterator<Item = &Command> {
    command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// `--help` and `--version`, which clap adds to every command.
fn is_builtin(arg: &Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

/// The table of `args`: how each is written, its value, default, environment variable and help.
fn arguments_table<'a>(args: impl Iterator<Item = &'a Arg>) -> String {
    let rows: Vec<Vec<String>> = args
        .map(|arg| {
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_owned())
                .collect();
            let takes_values = arg.get_action().takes_values();
            let value = if !takes_values || arg.is_positional() {
                String::new()
            } else if values.is_empty() {
                arg.get_value_names()
                    .map(|names| names.iter().map(ToString::to_string).collect::<Vec<_>>())
                    .unwrap_or_else(|| vec![arg.get_id().as_str().to_uppercase()])
                    .join(" ")
            } else {
                values.join(" | ")
            };
            let default: Vec<String> = arg
                .get_default_values()
                .iter()
                .filter(|_| takes_values)
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            let help = arg.get_long_help().or_else(|| arg.get_help());
            vec![
                code(&written(arg)),
                code(&value),
                code(&default.join(",")),
                arg.get_env()
                    .map(|env| code(&env.to_string_lossy()))
                    .unwrap_or_default(),
                text_of(help),
            ]
        })
        .collect();
    table(
        &["Argument", "Value", "Default", "Environment", "Description"],
        &rows,
    )
}

/// How an argument is written: `-o, --output`, or `PATH` for a positional one.
fn written(arg: &Arg) -> String {
    if arg.is_positional() {
        return arg
            .get_value_names()
            .and_then(|names| names.first())
            .map_or_else(|| arg.get_id().as_str().to_uppercase(), ToString::to_string);
    }
    let mut forms = Vec::new();
    if let Some(short) = arg.get_short() {
        forms.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        forms.push(format!("--{long}"));
    }
    forms.extend(
        arg.get_visible_aliases()
            .into_iter()
            .flatten()
            .map(|alias| format!("--{alias}")),
    );
    forms.join(", ")
}

/// A help text as plain text.
fn text_of(text: Option<&clap::builder::StyledStr>) -> String {
    text.map(ToString::to_string).unwrap_or_default()
}

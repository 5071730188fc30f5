//! The documentation is tested like code: the reference pages under `docs/src/reference/` are what
//! the code generates now; every relative link, `{{#include}}` and repository path cited in the
//! book and the root documents resolves; every YAML example of the book is read as Flotilla reads
//! it (an included example ApplicationSet is rendered and compared with the expected Applications
//! shown beside it). `mdbook build docs` itself runs in `tests/run-all.sh`.
//! Regenerate the reference pages with `cargo run -- docs docs/src/reference` (or
//! `UPDATE_GOLDEN=1 cargo test --test docs`) and review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flotilla::cli::docs::{REGENERATE, reference_pages};
use flotilla::cli::render::{AppSetArgs, render_from_args};
use flotilla_core::api::document::{parse_app_project, parse_application, parse_application_set};
use flotilla_core::cmp::ConfigManagementPlugin;
use flotilla_core::notify::argo::config::NotificationsConfig;
use flotilla_core::notify::config::NotificationConfig;
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The book's pages and the root documents, each with its text.
fn documents() -> Vec<(PathBuf, String)> {
    let mut files = vec![
        root().join("README.md"),
        root().join("CONTRIBUTING.md"),
        root().join("SECURITY.md"),
        root().join("CHANGELOG.md"),
    ];
    markdown_files(&root().join("docs/src"), &mut files);
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

fn markdown_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("reads the directory").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            into.push(path);
        }
    }
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn reference_pages_are_what_the_code_generates() {
    let dir = root().join("docs/src/reference");
    let mut stale = Vec::new();
    for page in reference_pages() {
        let path = dir.join(&page.path);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all(path.parent().expect("has a parent")).expect("creates");
            std::fs::write(&path, &page.text).expect("writes");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != page.text {
            stale.push(shown(&path));
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from what the code generates now; regenerate with `{REGENERATE}` (or \
         `UPDATE_GOLDEN=1 cargo test --test docs`) and review the diff",
        stale.join(", ")
    );
}

/// The `](target)` links of a Markdown text, outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            found.push(after[..end].trim().to_owned());
            rest = &after[end..];
        }
    }
    found
}

/// Each line of `text` with whether it is inside a fenced code block (fences left out).
fn fenced_lines(text: &str) -> Vec<(bool, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else {
            lines.push((fenced, line));
        }
    }
    lines
}

/// The lines of `text` outside fenced code blocks, with code spans removed.
fn prose_lines(text: &str) -> Vec<String> {
    fenced_lines(text)
        .into_iter()
        .filter(|(fenced, _)| !fenced)
        .map(|(_, line)| line.split('`').step_by(2).collect())
        .collect()
}

/// The anchors of a Markdown file's headings, as mdBook makes them: lower case, spaces as
/// dashes, other punctuation dropped.
fn anchors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (fenced, line) in fenced_lines(text) {
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let anchor: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        found.push(anchor);
    }
    found
}

/// The `{{#include PATH[:ANCHOR]}}` directives of a text.
fn includes(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("{{#include ") {
        let after = &rest[at + "{{#include ".len()..];
        let end = after.find("}}").expect("an include is closed");
        let target = after[..end].trim();
        let (path, anchor) = match target.split_once(':') {
            Some((path, anchor)) => (path, Some(anchor.to_owned())),
            None => (target, None),
        };
        found.push((path.to_owned(), anchor));
        rest = &after[end..];
    }
    found
}

/// The repository paths cited in code spans and code blocks: words starting with one of the
/// repository's top-level directories that name a file (with an extension) or a directory (with
/// a trailing slash).
fn cited_paths(text: &str) -> Vec<String> {
    const ROOTS: [&str; 8] = [
        "src/",
        "core/",
        "generators/",
        "tests/",
        "deploy/",
        "examples/",
        "benches/",
        "docs/",
    ];
    let mut found = Vec::new();
    for (fenced, line) in fenced_lines(text) {
        let code: Vec<&str> = if fenced {
            vec![line]
        } else {
            line.split('`').skip(1).step_by(2).collect()
        };
        for span in code {
            for word in span.split(|c: char| {
                c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';' | '"' | '\'' | '=' | '`')
            }) {
                let word = word.trim_end_matches(['.', ':']);
                let word = word.split('#').next().unwrap_or(word);
                // A file has an extension, a directory is written with its trailing slash;
                // anything else (`deploy/flotilla-controller`) is no path.
                let last = word.rsplit('/').next().unwrap_or_default();
                if ROOTS.iter().any(|root| word.starts_with(root))
                    && (word.ends_with('/') || last.contains('.'))
                    && !word.contains(['*', '<', '{', '…', '$'])
                {
                    found.push(word.to_owned());
                }
            }
        }
    }
    found
}

#[test]
fn links_includes_and_cited_paths_resolve() {
    let mut broken = Vec::new();
    let docs = documents();
    let texts: BTreeMap<PathBuf, &String> = docs
        .iter()
        .map(|(path, text)| (path.clone(), text))
        .collect();
    for (path, text) in &docs {
        let dir = path.parent().expect("has a parent");
        for link in links(text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link.as_str(), ""));
            let target = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: link {link}: no such file", shown(path)));
                continue;
            }
            if !anchor.is_empty() {
                let canonical = target.canonicalize().expect("exists");
                let target_text = texts
                    .iter()
                    .find(|(p, _)| p.canonicalize().ok().as_ref() == Some(&canonical))
                    .map(|(_, t)| (*t).clone())
                    .unwrap_or_else(|| std::fs::read_to_string(&target).unwrap_or_default());
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    broken.push(format!(
                        "{}: link {link}: no heading #{anchor}",
                        shown(path)
                    ));
                }
            }
        }
        for (file, anchor) in includes(text) {
            let target = dir.join(&file);
            match std::fs::read_to_string(&target) {
                Err(e) => broken.push(format!("{}: include {file}: {e}", shown(path))),
                Ok(included) => {
                    if let Some(anchor) = anchor
                        && !included.contains(&format!("ANCHOR: {anchor}"))
                    {
                        broken.push(format!(
                            "{}: include {file}:{anchor}: no ANCHOR: {anchor} in the file",
                            shown(path)
                        ));
                    }
                }
            }
        }
        for cited in cited_paths(text) {
            // The book's build output (`mdbook build docs`) exists only once it is built.
            if cited.starts_with("docs/book/") {
                continue;
            }
            if !root().join(&cited).exists() {
                broken.push(format!(
                    "{}: cites {cited}, which does not exist",
                    shown(path)
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken references:\n{}",
        broken.join("\n")
    );
}

/// The YAML blocks of a page: their text with includes resolved, and the included files.
fn yaml_blocks(path: &Path, text: &str) -> Vec<(String, Vec<PathBuf>)> {
    let dir = path.parent().expect("has a parent");
    let mut blocks = Vec::new();
    let mut current: Option<(String, Vec<PathBuf>)> = None;
    let mut indent = 0;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut current {
            None if trimmed.starts_with("```yaml") => {
                indent = line.len() - trimmed.len();
                current = Some((String::new(), Vec::new()));
            }
            None => {}
            Some(_) if trimmed.starts_with("```") => {
                blocks.push(current.take().expect("in a block"));
            }
            Some((body, files)) => {
                if let [(file, anchor)] = includes(trimmed).as_slice() {
                    let included = dir.join(file);
                    let whole = std::fs::read_to_string(&included)
                        .unwrap_or_else(|e| panic!("{}: {e}", included.display()));
                    body.push_str(&match anchor {
                        Some(anchor) => anchored(&whole, anchor),
                        None => whole,
                    });
                    if anchor.is_none() {
                        files.push(included.canonicalize().expect("exists"));
                    }
                } else {
                    body.push_str(line.get(indent..).unwrap_or(trimmed));
                    body.push('\n');
                }
            }
        }
    }
    blocks
}

/// The lines of `text` between `ANCHOR: name` and `ANCHOR_END: name`.
fn anchored(text: &str, name: &str) -> String {
    text.lines()
        .skip_while(|l| !l.contains(&format!("ANCHOR: {name}")))
        .skip(1)
        .take_while(|l| !l.contains(&format!("ANCHOR_END: {name}")))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// An ApplicationSet around a fragment: `spec` over a minimal spec, a `strategy`, or a step's
/// `analysis`.
fn application_set_around(fragment: &Value) -> Value {
    let mut appset = json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "docs-example"},
        "spec": {
            "generators": [{"list": {"elements": [{"name": "a"}]}}],
            "template": {
                "metadata": {"name": "{{name}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "https://git.example.com/a.git", "path": "."},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "a"}
                }
            }
        }
    });
    if let Some(spec) = fragment.get("spec").and_then(Value::as_object) {
        for (key, value) in spec {
            appset["spec"][key] = value.clone();
        }
    }
    if let Some(strategy) = fragment.get("strategy") {
        appset["spec"]["strategy"] = strategy.clone();
    }
    if let Some(analysis) = fragment.get("analysis") {
        appset["spec"]["strategy"] = json!({
            "type": "RollingSync",
            "rollingSync": {"steps": [{
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}],
                "analysis": analysis
            }]}
        });
    }
    appset
}

/// Reads one YAML example as Flotilla reads it; an error names what is wrong.
fn check_yaml(page: &str, body: &str) -> Result<(), String> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(body).map_err(|e| format!("does not parse: {e}"))?;
    for document in documents {
        let text = |value: &Value| serde_json::to_string(value).expect("serializes");
        let kind = document.get("kind").and_then(Value::as_str);
        let result = match kind {
            Some("ApplicationSet") => parse_application_set(page, &text(&document)).map(drop),
            Some("Application") => parse_application(page, &text(&document)).map(drop),
            Some("AppProject") => parse_app_project(page, &text(&document)).map(drop),
            Some("ConfigManagementPlugin") => {
                ConfigManagementPlugin::parse(page, &text(&document)).map_err(|e| e.to_string())?;
                Ok(())
            }
            Some("ConfigMap")
                if document.pointer("/metadata/name") == Some(&json!("flotilla-notifications")) =>
            {
                let data: BTreeMap<String, String> =
                    serde_json::from_value(document["data"].clone())
                        .map_err(|e| format!("data: {e}"))?;
                NotificationConfig::parse(&data)
                    .map(drop)
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
            Some("ConfigMap")
                if document.pointer("/metadata/name")
                    == Some(&json!("argocd-notifications-cm")) =>
            {
                let data: BTreeMap<String, String> =
                    serde_json::from_value(document["data"].clone())
                        .map_err(|e| format!("data: {e}"))?;
                // Every `$key` the example names stands for a value of the Secret.
                let secret: BTreeMap<String, String> = data
                    .values()
                    .flat_map(|text| text.split('$').skip(1))
                    .map(|rest| {
                        let end = rest
                            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
                            .unwrap_or(rest.len());
                        (rest[..end].trim_end_matches('.').to_owned(), "x".to_owned())
                    })
                    .collect();
                NotificationsConfig::parse(&data, &secret)
                    .map(drop)
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
            Some(_) => Ok(()),
            None if ["spec", "strategy", "analysis"]
                .iter()
                .any(|key| document.get(key).is_some()) =>
            {
                parse_application_set(page, &text(&application_set_around(&document))).map(drop)
            }
            None => Ok(()),
        };
        result.map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn yaml_examples_are_read_as_flotilla_reads_them() {
    let examples = root().join("examples").canonicalize().expect("exists");
    let expected_dir = examples.join("expected");
    let mut failures = Vec::new();
    let mut rendered = 0;
    for (path, text) in documents() {
        if !path.starts_with(root().join("docs")) {
            continue;
        }
        let page = shown(&path);
        let blocks = yaml_blocks(&path, &text);
        for (body, _) in &blocks {
            if let Err(e) = check_yaml(&page, body) {
                failures.push(format!("{page}: a YAML example {e}:\n{body}"));
            }
        }
        // Every example ApplicationSet shown renders; shown with its expected Applications, it
        // renders to them.
        let included: Vec<&PathBuf> = blocks.iter().flat_map(|(_, files)| files).collect();
        for expected in included.iter().filter(|f| f.starts_with(&expected_dir)) {
            let appset = examples.join(expected.file_name().expect("a file"));
            if !included.contains(&&appset) {
                failures.push(format!(
                    "{page}: shows {} without the ApplicationSet it comes from",
                    shown(expected)
                ));
            }
        }
        let appsets = included.iter().filter(|f| {
            f.parent() == Some(examples.as_path())
                && std::fs::read_to_string(f).is_ok_and(|t| t.contains("\nkind: ApplicationSet"))
        });
        for appset in appsets {
            let args = AppSetArgs {
                appset: (*appset).clone(),
                repos: vec![],
                clusters: Some(examples.join("clusters.yaml")),
                project: flotilla::cli::project_args::ProjectArgs::default(),
            };
            let applications = match render_from_args(&args, &Default::default()) {
                Ok(applications) => applications,
                Err(e) => {
                    failures.push(format!("{page}: {} does not render: {e:#}", shown(appset)));
                    continue;
                }
            };
            rendered += 1;
            let expected = expected_dir.join(appset.file_name().expect("a file"));
            if included.contains(&&expected) {
                let actual = serde_saphyr::to_string(&applications).expect("serializes");
                if actual != std::fs::read_to_string(&expected).expect("reads") {
                    failures.push(format!(
                        "{page}: {} is not what {} renders to",
                        shown(&expected),
                        shown(appset)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        rendered > 0,
        "no page shows an example with its Applications"
    );
}

/// The shell commands of a Markdown text's `sh`, `bash`, `shell` and `console` blocks, with their
/// line numbers: continuation lines joined, prompts and comments left out.
fn shell_commands(text: &str) -> Vec<(usize, String)> {
    let mut shell = None;
    let mut commands: Vec<(usize, String)> = Vec::new();
    let mut continued = false;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(tag) = trimmed.strip_prefix("```") {
            shell = match shell {
                Some(_) => None,
                None => Some(matches!(tag.trim(), "sh" | "bash" | "shell" | "console")),
            };
            continued = false;
            continue;
        }
        if shell != Some(true) {
            continue;
        }
        let command = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        let command = command.split(" #").next().unwrap_or_default();
        let (command, continues) = match command.trim_end().strip_suffix('\\') {
            Some(head) => (head, true),
            None => (command, false),
        };
        if continued && let Some((_, last)) = commands.last_mut() {
            last.push(' ');
            last.push_str(command.trim());
        } else if !command.trim().is_empty() && !command.starts_with('#') {
            commands.push((number + 1, command.trim().to_owned()));
        }
        continued = continues;
    }
    commands
}

/// The words of one shell command, quotes removed (no expansion).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}

/// The arguments `flotilla` is given in a shell command line: for each simple command (split at
/// `|`, `;`, `&`, `&&`, `||` and command substitutions) run as `flotilla`, `…/flotilla` or
/// `cargo run … --`, its words after leading variable assignments, redirections left out.
fn flotilla_invocations(line: &str) -> Vec<Vec<String>> {
    let separated = line
        .replace(">&", ">")
        .replace("&&", ";")
        .replace("||", ";")
        .replace(['|', '(', ')', '&'], ";");
    separated
        .split(';')
        .filter_map(|command| {
            let words: Vec<String> = shell_words(command)
                .into_iter()
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .filter(|w| !w.contains('>') && !w.starts_with('<'))
                .collect();
            let program = words.first()?;
            if program == "cargo" && words.get(1).is_some_and(|w| w == "run") {
                let args = words.iter().position(|w| w == "--")?;
                let mut argv = vec!["flotilla".to_owned()];
                argv.extend(words[args + 1..].iter().cloned());
                return Some(argv);
            }
            (Path::new(program).file_name()? == "flotilla").then_some(words)
        })
        .collect()
}

#[test]
fn flotilla_commands_shown_parse() {
    use clap::Parser;
    let mut failures = Vec::new();
    let mut parsed = 0;
    for (path, text) in documents() {
        let page = shown(&path);
        for (number, line) in shell_commands(&text) {
            for argv in flotilla_invocations(&line) {
                match flotilla::cli::Cli::try_parse_from(&argv) {
                    Ok(_) => parsed += 1,
                    // `--help` and `--version` are the parser's own answers.
                    Err(e) if !e.use_stderr() => parsed += 1,
                    Err(e) => failures.push(format!("{page}:{number}: `{line}`: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        parsed > 10,
        "only {parsed} flotilla commands found in the docs"
    );
}

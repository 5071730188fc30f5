//! The layers of the three crates, checked by reading their sources: every `crate::…` path (and every
//! `super::…` path that climbs to the crate root) in a module names a top-level module of a
//! lower layer, and no top-level modules import each other in a cycle. Test code counts too; only
//! a crate's `#[cfg(test)]` fixture module (generators' `testing`) may be used by any test. The
//! layers are written in the book's Architecture page (docs/src/architecture.md); a new top-level
//! module needs a layer here. Each crate names the crates below it (`flotilla_core::…`,
//! `flotilla_generators::…`): none re-exports another, so a `crate::…` path always stays in its
//! own crate. And the core stays pure outside its tests: it names no `std::fs`, `std::process` or
//! `std::net`, and keeps no global state (no `thread_local!` or `task_local!`, no `static` with
//! interior mutability); what it reads and remembers is passed in. The shell keeps global state
//! only for what is one per process by nature (metrics, what a signal handler needs) or scoped
//! to one call (a task-local), each listed with its reason; a memo is a value its owner passes
//! in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `flotilla-core` crate's top-level modules, bottom layer first: a module may use only
/// modules of layers below its own.
const CORE_LAYERS: &[&[&str]] = &[
    // Text and formats: no knowledge of Kubernetes objects beyond their keys; the bounded memo
    // of parse outcomes.
    &[
        "hex",
        "html",
        "manifest",
        "memo",
        "stable_hash",
        "table",
        "yaml",
    ],
    // Judgements of single objects, Argo CD's declarative Secrets, and how a simulated pod
    // behaves (the node simulator's and `flotilla simulate`'s annotations).
    &["health", "secrets", "simulated_pod"],
    // The CRD types and the records stored in them.
    &["api"],
    // An Application's objects and what they own, with their health.
    &["resource_tree"],
    // Projects: what an Application may deploy where, and when; Config Management Plugins:
    // which renders a source, with what environment.
    &["project", "cmp"],
    // Pure decisions over the types: RollingSync, and the sync engine's plan and steps.
    &["rollout", "sync"],
    // The controllers' decisions: what to write, compare, sync, record and publish; who leads;
    // which notifications are due.
    &["controller", "notify"],
    // What `flotilla import` writes for Argo CD's objects (reads the controllers' finalizers).
    &["import"],
];

/// The `flotilla` crate's top-level modules, bottom layer first. The crates below it
/// (flotilla-core, flotilla-generators) are named by their own names; the compiler keeps them
/// from using anything of this crate.
const FLOTILLA_LAYERS: &[&[&str]] = &[
    // Text and formats: the HTTP server.
    &["httpd"],
    // How a source becomes manifests.
    &["source"],
    // The sync engine (with the cluster port it uses) and the repositories.
    &["sync", "repo"],
    // What a settings ConfigMap configures (health checks and ignore rules).
    &["customizations"],
    // The Kubernetes API: the engine's port implemented with kube, watches, destinations.
    &["cluster"],
    // ApplicationSet rendering.
    &["render"],
    // The controllers.
    &["controller"],
    // The simulator: the controllers' pure decisions on an embedded cluster; the operators'
    // actions (the command line's and the web view's).
    &["actions", "simulate"],
    // The web view and the git webhook receiver.
    &["notifier", "web", "webhook"],
    // The command line.
    &["cli"],
];

/// The `flotilla-generators` crate's top-level modules, bottom layer first.
const GENERATORS_LAYERS: &[&[&str]] = &[
    &["cause", "duration", "selector", "strict"],
    &["params", "spec", "source"],
    &["template", "scm_api"],
    &["generator"],
    &[
        "clusters", "git", "list", "matrix", "merge", "plugin", "scm",
    ],
    &["cluster_decision"],
];

/// The `flotilla-node-sim` crate's (the test tool's) top-level modules, bottom layer first.
const NODESIM_LAYERS: &[&[&str]] = &[
    &["container_log", "error", "placement", "pod_status"],
    &["log_book", "node", "plan"],
    &["kubelet", "log_server"],
];

/// One lexical token of Rust source that matters for paths, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    /// Any other character (`#`, `[`, `(`, `;`, `'`, `!`, …).
    Other(char),
}

/// The tokens of `text` with their lines: comments, strings and character literals dropped.
fn tokens(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Skips from `i` (just past an opening quote) to past the closing quote followed by `hashes`
    // `#`s; escapes count only in non-raw strings.
    let skip_string = |mut i: usize, hashes: usize, raw: bool, line: &mut usize| -> usize {
        while i < chars.len() {
            match chars[i] {
                '\\' if !raw => i += 2,
                '"' if (1..=hashes).all(|k| at(i + k) == '#') => return i + 1 + hashes,
                c => {
                    if c == '\n' {
                        *line += 1;
                    }
                    i += 1;
                }
            }
        }
        i
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if chars[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => i = skip_string(i + 1, 0, false, &mut line),
            '\'' if at(i + 1) == '\\' => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            '\'' if at(i + 2) == '\'' => i += 3,
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while at(i).is_alphanumeric() || at(i) == '_' {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let raw = matches!(word.as_str(), "r" | "br");
                if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                    i = skip_string(i + 1, 0, false, &mut line);
                } else if raw && (at(i) == '"' || at(i) == '#') {
                    let mut hashes = 0;
                    while at(i + hashes) == '#' {
                        hashes += 1;
                    }
                    if at(i + hashes) == '"' {
                        i = skip_string(i + hashes + 1, hashes, true, &mut line);
                    } else {
                        out.push((Token::Ident(word), line));
                    }
                } else {
                    out.push((Token::Ident(word), line));
                }
            }
            ':' if at(i + 1) == ':' => {
                out.push((Token::PathSep, line));
                i += 2;
            }
            '{' | '}' | ',' => {
                let token = match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    _ => Token::Comma,
                };
                out.push((token, line));
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            _ => {
                out.push((Token::Other(c), line));
                i += 1;
            }
        }
    }
    out
}

fn is_ident(token: Option<&(Token, usize)>, name: &str) -> bool {
    matches!(token, Some((Token::Ident(word), _)) if word == name)
}

fn is(token: Option<&(Token, usize)>, kind: &Token) -> bool {
    token.is_some_and(|(t, _)| t == kind)
}

/// The crate-root names (with their lines) that the source of the module at `module` (its path
/// from the crate root, e.g. `["sync", "execute", "write"]`) refers to: the first segment after
/// `crate::`, every first segment of a `crate::{…}` group, and the same after a `super::` chain
/// that climbs to the root, inline `mod name { … }` blocks counted.
fn root_references(text: &str, module: &[String]) -> Vec<(String, usize)> {
    let tokens = tokens(text);
    let mut found = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let previous_is_sep = i > 0 && tokens[i - 1].0 == Token::PathSep;
        match &tokens[i].0 {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if inline.last().is_some_and(|(_, at)| *at == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some((Token::Ident(name), _)), true) =
                    (tokens.get(i + 1), is(tokens.get(i + 2), &Token::Open))
                {
                    inline.push((name.clone(), depth));
                }
            }
            Token::Ident(word)
                if !previous_is_sep
                    && (word == "crate" || word == "super")
                    && is(tokens.get(i + 1), &Token::PathSep) =>
            {
                let mut next = i + 2;
                let at_root = if word == "crate" {
                    true
                } else {
                    let mut climbs = 1;
                    while is_ident(tokens.get(next), "super")
                        && is(tokens.get(next + 1), &Token::PathSep)
                    {
                        climbs += 1;
                        next += 2;
                    }
                    climbs == module.len() + inline.len()
                };
                if at_root {
                    found.extend(first_segments(&tokens, next));
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The first segment of the path at `start`, or of every item of the group opening there.
fn first_segments(tokens: &[(Token, usize)], start: usize) -> Vec<(String, usize)> {
    match tokens.get(start) {
        Some((Token::Ident(name), line)) => vec![(name.clone(), *line)],
        Some((Token::Open, _)) => {
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect_item = true;
            for (token, line) in &tokens[start..] {
                match token {
                    Token::Open => {
                        depth += 1;
                        expect_item = depth == 1;
                    }
                    Token::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Token::Comma if depth == 1 => expect_item = true,
                    Token::Ident(name) if expect_item => {
                        if name != "self" {
                            names.push((name.clone(), *line));
                        }
                        expect_item = false;
                    }
                    _ => expect_item = false,
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

/// A crate's top-level modules as its root file declares them: every `mod name` (the ones under
/// `#[cfg(test)]` apart, as test fixtures) and every `pub use …::name` re-export.
struct Roots {
    modules: BTreeSet<String>,
    test_fixtures: BTreeSet<String>,
}

fn roots(lib: &str) -> Roots {
    let mut modules = BTreeSet::new();
    let mut test_fixtures = BTreeSet::new();
    let mut cfg_test = false;
    // A braced re-export list may span lines: read it as one.
    let mut depth = 0;
    let lib: String = lib
        .chars()
        .map(|c| {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if c == '\n' && depth > 0 { ' ' } else { c }
        })
        .collect();
    for line in lib.lines().map(str::trim) {
        let declared = line
            .strip_prefix("pub ")
            .unwrap_or(line)
            .strip_prefix("mod ")
            .or_else(|| {
                line.strip_prefix("pub use ")
                    .map(|path| path.rsplit("::").next().unwrap_or(path))
            });
        // `pub use other::{a, b};` re-exports several modules.
        let names = declared.map(|names| {
            names
                .trim_end_matches(';')
                .trim_matches(|c| c == '{' || c == '}')
                .split(',')
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
                .collect::<Vec<_>>()
        });
        for name in names.unwrap_or_default() {
            if cfg_test {
                test_fixtures.insert(name);
            } else {
                modules.insert(name);
            }
        }
        cfg_test = line == "#[cfg(test)]";
    }
    Roots {
        modules,
        test_fixtures,
    }
}

/// `(from, to) -> ["file:line", …]` for every reference between two top-level modules.
type Edges = BTreeMap<(String, String), Vec<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The references between the top-level modules of the crate whose sources are in `src`.
fn edges(src: &Path, roots: &Roots) -> Edges {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = Edges::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("under src");
        let mut module: Vec<String> = relative
            .iter()
            .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
            .collect();
        if module.last().is_some_and(|last| last == "mod") {
            module.pop();
        }
        if module == ["lib"] || module == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable source");
        let from = module[0].clone();
        for (to, line) in root_references(&text, &module) {
            let known = roots.modules.contains(&to) || roots.test_fixtures.contains(&to);
            if known && to != from {
                edges
                    .entry((from.clone(), to))
                    .or_default()
                    .push(format!("{}:{line}", file.display()));
            }
        }
    }
    edges
}

/// Every way the crate at `src` breaks `layers`, one line each.
fn violations(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let roots = roots(&lib);
    let rank: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(rank, layer)| layer.iter().map(move |name| (*name, rank)))
        .collect();
    let mut found = Vec::new();
    for module in &roots.modules {
        if !rank.contains_key(module.as_str()) {
            found.push(format!("module {module} has no layer"));
        }
    }
    for name in rank.keys() {
        if !roots.modules.contains(*name) {
            found.push(format!("layer entry {name} is not a module of the crate"));
        }
    }
    let edges = edges(src, &roots);
    let graph: BTreeMap<(String, String), &Vec<String>> = edges
        .iter()
        .filter(|((from, to), _)| {
            !roots.test_fixtures.contains(from) && !roots.test_fixtures.contains(to)
        })
        .map(|(key, places)| (key.clone(), places))
        .collect();
    for ((from, to), places) in &graph {
        if let (Some(a), Some(b)) = (rank.get(from.as_str()), rank.get(to.as_str()))
            && b >= a
        {
            found.push(format!(
                "{from} (layer {a}) uses {to} (layer {b}): {}",
                places.join(", ")
            ));
        }
    }
    for cycle in cycles(graph.keys()) {
        found.push(format!("cycle among {}", cycle.join(", ")));
    }
    found
}

/// The crates of the workspace, as paths name them: a crate built on them names them itself.
const WORKSPACE_CRATES: &[&str] = &["flotilla", "flotilla_core", "flotilla_generators"];

/// The lines of `text` where a `pub use` (or `pub(…) use`) re-exports a crate of the workspace:
/// a glob, a group or one name, with or without a leading `::`.
fn re_export_lines(text: &str) -> Vec<usize> {
    let tokens = tokens(text);
    let mut lines = Vec::new();
    for (i, (token, line)) in tokens.iter().enumerate() {
        if !matches!(token, Token::Ident(word) if word == "pub") {
            continue;
        }
        let mut next = i + 1;
        // `pub(crate)`, `pub(super)`, `pub(in path)`: skip to the closing parenthesis.
        if is(tokens.get(next), &Token::Other('(')) {
            next += 1;
            while matches!(
                tokens.get(next),
                Some((Token::Ident(_) | Token::PathSep, _))
            ) {
                next += 1;
            }
            next += 1;
        }
        if !is_ident(tokens.get(next), "use") {
            continue;
        }
        next += 1;
        if is(tokens.get(next), &Token::PathSep) {
            next += 1;
        }
        if WORKSPACE_CRATES
            .iter()
            .any(|name| is_ident(tokens.get(next), name))
        {
            lines.push(*line);
        }
    }
    lines
}

/// Every re-export of a crate of the workspace in the sources under `src`, as `file:line`.
fn re_exports(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        for line in re_export_lines(&text) {
            found.push(format!("{}:{line}", file.display()));
        }
    }
    found
}

/// The groups of modules that reach each other through `edges` (each listed once, sorted).
fn cycles<'a>(edges: impl Iterator<Item = &'a (String, String)>) -> Vec<Vec<String>> {
    let edges: Vec<&(String, String)> = edges.collect();
    let names: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let mut reach: BTreeSet<(&String, &String)> = edges.iter().map(|(a, b)| (a, b)).collect();
    for k in &names {
        for i in &names {
            for j in &names {
                if reach.contains(&(*i, *k)) && reach.contains(&(*k, *j)) {
                    reach.insert((*i, *j));
                }
            }
        }
    }
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for a in &names {
        let group: Vec<String> = names
            .iter()
            .filter(|b| reach.contains(&(*a, **b)) && reach.contains(&(**b, *a)))
            .map(|b| (*b).clone())
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn flotilla_modules_use_only_lower_layers() {
    let found = violations(&root().join("src"), FLOTILLA_LAYERS);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn core_modules_use_only_lower_layers() {
    let found = violations(&root().join("core/src"), CORE_LAYERS);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn generators_modules_use_only_lower_layers() {
    let found = violations(&root().join("generators/src"), GENERATORS_LAYERS);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn no_crate_re_exports_another() {
    let found: Vec<String> = ["src", "core/src", "generators/src", "nodesim/src"]
        .iter()
        .flat_map(|src| re_exports(&root().join(src)))
        .collect();
    assert!(
        found.is_empty(),
        "re-exports of a crate of the workspace (name it instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn re_exports_are_found_as_globs_groups_and_names() {
    let text = r##"
pub use flotilla_core::sync::*;
pub use flotilla_core::{api, health};
pub(crate) use ::flotilla_generators::duration;
pub(in crate::sync) use flotilla_core::manifest::Resource;
use flotilla_core::api::Application;
pub use crate::sync::load_plan;
// pub use flotilla_core::yaml;
const TEXT: &str = "pub use flotilla_core::yaml;";
pub fn f() {}
"##;
    assert_eq!(re_export_lines(text), [2, 3, 4, 5]);
}

#[test]
fn node_simulator_modules_use_only_lower_layers() {
    let found = violations(&root().join("nodesim/src"), NODESIM_LAYERS);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn references_are_read_from_paths_groups_and_super_chains() {
    let text = r##"
//! See crate::ignored_in_comments.
use crate::{api::Application, sync::{plan, self}, self};
use super::sibling;
const TEXT: &str = "crate::ignored_in_strings";
const RAW: &str = r#"crate::ignored_in_raw "strings""#;
fn f(c: char) -> bool { c == '{' }
pub(crate) fn g() { crate::health::assess(); }
#[cfg(test)]
mod tests {
    use super::super::super::cluster::Thing;
    use super::super::super::super::too_far;
    use super::super::local;
}
"##;
    let module = ["sync".to_owned(), "execute".to_owned()];
    let names: Vec<(String, usize)> = root_references(text, &module);
    assert_eq!(
        names,
        [
            ("api".to_owned(), 3),
            ("sync".to_owned(), 3),
            ("health".to_owned(), 8),
            ("cluster".to_owned(), 11),
        ]
    );
    let top = ["git".to_owned()];
    assert_eq!(
        root_references("use super::{params, spec::Spec};", &top),
        [("params".to_owned(), 1), ("spec".to_owned(), 1)]
    );
}

#[test]
fn cycles_are_found_through_any_path() {
    let edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "d")]
        .map(|(a, b)| (a.to_owned(), b.to_owned()));
    assert_eq!(cycles(edges.iter()), [["a", "b", "c"]]);
}

/// What the pure core's code outside its tests must not name under `std::`: the file system,
/// processes and the network (the shell does I/O and passes the core what it read).
const CORE_FORBIDDEN_STD: &[&str] = &["fs", "process", "net"];

/// Types that make a `static` hidden mutable state (a global memo or cache) rather than a
/// constant: the core's memos are values their owner passes in.
const INTERIOR_MUTABILITY: &[&str] = &[
    "Cell",
    "LazyCell",
    "LazyLock",
    "Memo",
    "Mutex",
    "OnceCell",
    "OnceLock",
    "RefCell",
    "RwLock",
    "UnsafeCell",
];

/// Whether `#[cfg(test)]` starts at `i`.
fn is_cfg_test(tokens: &[(Token, usize)], i: usize) -> bool {
    is(tokens.get(i), &Token::Other('#'))
        && is(tokens.get(i + 1), &Token::Other('['))
        && is_ident(tokens.get(i + 2), "cfg")
        && is(tokens.get(i + 3), &Token::Other('('))
        && is_ident(tokens.get(i + 4), "test")
        && is(tokens.get(i + 5), &Token::Other(')'))
        && is(tokens.get(i + 6), &Token::Other(']'))
}

/// The tokens outside `#[cfg(test)]` items, and the names of the test-only modules declared as
/// files (`#[cfg(test)] mod name;`).
fn without_test_items(tokens: Vec<(Token, usize)>) -> (Vec<(Token, usize)>, Vec<String>) {
    let mut kept = Vec::new();
    let mut test_modules = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_cfg_test(&tokens, i) {
            kept.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // The item: up to its `;`, or to the brace closing its body.
        let mut depth = 0;
        let mut module = None;
        i += 7;
        while i < tokens.len() {
            match &tokens[i].0 {
                Token::Open => depth += 1,
                Token::Close => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Token::Other(';') if depth == 0 => {
                    test_modules.extend(module.take());
                    break;
                }
                Token::Ident(word) if word == "mod" && depth == 0 => {
                    if let Some((Token::Ident(name), _)) = tokens.get(i + 1) {
                        module = Some(name.clone());
                    }
                }
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    (kept, test_modules)
}

/// What `text` does outside its tests that the core must not (`(line, what)`), and the
/// test-only modules it declares as files.
fn impurities(text: &str) -> (Vec<(usize, String)>, Vec<String>) {
    let (tokens, test_modules) = without_test_items(tokens(text));
    let mut found = Vec::new();
    // The end of the `thread_local!`/`task_local!` block being read: its statics are reported
    // as the macro, not again as statics.
    let mut local_block_end = 0;
    for (i, (token, line)) in tokens.iter().enumerate() {
        let Token::Ident(word) = token else {
            continue;
        };
        let after_quote = i > 0 && tokens[i - 1].0 == Token::Other('\'');
        match word.as_str() {
            "std" if is(tokens.get(i + 1), &Token::PathSep) => {
                // `std::{a, b::c}`: the first segments; `std::a::b::c`: every segment.
                let mut names = first_segments(&tokens, i + 2);
                let mut next = i + 3;
                while is(tokens.get(next), &Token::PathSep) {
                    names.extend(first_segments(&tokens, next + 1));
                    next += 2;
                }
                for (name, line) in names {
                    if CORE_FORBIDDEN_STD.contains(&name.as_str()) {
                        found.push((line, format!("std::{name}")));
                    }
                }
            }
            "thread_local" | "task_local" if is(tokens.get(i + 1), &Token::Other('!')) => {
                found.push((*line, format!("{word}!")));
                local_block_end = block_end(&tokens, i + 2);
            }
            "static" if !after_quote && i > local_block_end => {
                let mutable = tokens[i..]
                    .iter()
                    .take_while(|(token, _)| *token != Token::Other(';'))
                    .find_map(|(token, _)| match token {
                        Token::Ident(name)
                            if INTERIOR_MUTABILITY.contains(&name.as_str())
                                || name.starts_with("Atomic") =>
                        {
                            Some(name.clone())
                        }
                        _ => None,
                    });
                if let Some(kind) = mutable {
                    found.push((*line, format!("a static with interior mutability ({kind})")));
                }
            }
            _ => {}
        }
    }
    (found, test_modules)
}

/// The index of the `}` closing the first `{` at or after `start` (the last token if none).
fn block_end(tokens: &[(Token, usize)], start: usize) -> usize {
    let mut depth = 0_usize;
    for (i, (token, _)) in tokens.iter().enumerate().skip(start) {
        match token {
            Token::Open => depth += 1,
            Token::Close if depth == 1 => return i,
            Token::Close => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    tokens.len().saturating_sub(1)
}

/// What [`impurities`] finds in the non-test code of the crate whose sources are under `src`,
/// each with its file (as a path below the repository root) and line.
fn impurities_under(src: &Path) -> Vec<(String, usize, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).expect("readable source");
            (file, text)
        })
        .collect();
    // Modules declared `#[cfg(test)] mod name;` are test code: their files are not checked.
    let mut test_only = BTreeSet::new();
    for (file, text) in &texts {
        let directory = match file.file_stem().and_then(|stem| stem.to_str()) {
            Some("mod" | "lib") => file.parent().expect("in a directory").to_owned(),
            _ => file.with_extension(""),
        };
        for module in impurities(text).1 {
            test_only.insert(directory.join(format!("{module}.rs")));
            test_only.insert(directory.join(&module).join("mod.rs"));
        }
    }
    texts
        .iter()
        .filter(|(file, _)| !test_only.contains(file))
        .flat_map(|(file, text)| {
            let file = file
                .strip_prefix(root())
                .unwrap_or(file)
                .display()
                .to_string();
            impurities(text)
                .0
                .into_iter()
                .map(move |(line, what)| (file.clone(), line, what))
        })
        .collect()
}

#[test]
fn core_does_no_io_and_keeps_no_hidden_state() {
    let found: Vec<String> = impurities_under(&root().join("core/src"))
        .into_iter()
        .map(|(file, line, what)| format!("{file}:{line}: {what}"))
        .collect();
    assert!(
        found.is_empty(),
        "the core must do no I/O and keep no global state (pass it in from the shell):\n{}",
        found.join("\n")
    );
}

/// The shell's process-wide state, by file, each with why there is one per process. Anything
/// else a shell module remembers (a memo of tools, versions or generations) is a value its
/// owner passes in, so two controllers in one process keep apart.
const SHELL_GLOBALS: &[(&str, &str)] = &[
    (
        "src/source/run.rs",
        "the tool runs counted: a metric of the process",
    ),
    (
        "src/repo/git_requests.rs",
        "git requests counted and timed: metrics of the process",
    ),
    (
        "src/cluster/api_server/k8s_requests.rs",
        "API requests counted: a metric of the process",
    ),
    (
        "src/cluster/api_server/throttled_retry.rs",
        "retries counted: a metric of the process",
    ),
    (
        "src/repo/temporary.rs",
        "the temporary directories the Ctrl-C handler removes",
    ),
    (
        "src/cli/interrupt.rs",
        "whether the command handles Ctrl-C itself, read by the signal thread",
    ),
    (
        "src/controller/http_clients/plugin_tls.rs",
        "the system's trust roots, read once and never changed",
    ),
    (
        "src/controller/runtime/cpu_time.rs",
        "a task_local: the CPU time counted by the `measured` call a task runs in, set for \
         that call only",
    ),
];

#[test]
fn the_shell_keeps_no_global_state_but_metrics_and_what_signals_need() {
    let allowed: BTreeSet<&str> = SHELL_GLOBALS.iter().map(|(file, _)| *file).collect();
    let found: Vec<String> = impurities_under(&root().join("src"))
        .into_iter()
        .filter(|(_, _, what)| !what.starts_with("std::"))
        .filter(|(file, _, _)| !allowed.contains(file.as_str()))
        .map(|(file, line, what)| format!("{file}:{line}: {what}"))
        .collect();
    assert!(
        found.is_empty(),
        "a shell module keeps global state: pass it in as a value (or, for process-wide \
         metrics, add it to SHELL_GLOBALS with its reason):\n{}",
        found.join("\n")
    );
}

#[test]
fn impurities_are_found_outside_tests_only() {
    let text = r##"
use std::fs;
use std::{collections::BTreeMap, process::Command};
use std::io::Read;
static CACHE: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static NAMES: &[&str] = &["a"];
fn f(x: &'static str) -> &'static str { std::net::TcpStream::connect(x); "std::fs" }
thread_local! { static X: u8 = 1; }
fn g() { let _ = std::os::unix::fs::symlink("a", "b"); }
static SEEN: AtomicUsize = AtomicUsize::new(0);
// std::process::exit(1);
#[cfg(test)]
mod tests {
    use std::fs;
    static M: OnceLock<u8> = OnceLock::new();
}
#[cfg(test)]
pub mod fixtures;
static KEPT: LazyLock<u8> = LazyLock::new(|| 1);
tokio::task_local! {
    static SPENT: Arc<AtomicU64>;
}
static AFTER: AtomicU8 = AtomicU8::new(0);
"##;
    let (found, test_modules) = impurities(text);
    let expected = [
        (2, "std::fs"),
        (3, "std::process"),
        (5, "a static with interior mutability (Mutex)"),
        (7, "std::net"),
        (8, "thread_local!"),
        (9, "std::fs"),
        (10, "a static with interior mutability (AtomicUsize)"),
        (19, "a static with interior mutability (LazyLock)"),
        (20, "task_local!"),
        (23, "a static with interior mutability (AtomicU8)"),
    ]
    .map(|(line, what)| (line, what.to_owned()));
    assert_eq!(found, expected);
    assert_eq!(test_modules, ["fixtures"]);
}

//! sprig's path functions on slash-separated paths, as Go's `path` package computes them
//! (`base`, `dir`, `clean`, `ext`, `isAbs`), and their `os*` twins, the same on Linux.

use minijinja::value::Value;
use minijinja::{Environment, Error};

use super::string_arg;

/// A path function: the path to its result.
type PathFunction = fn(&str) -> Value;

pub(super) fn register(env: &mut Environment<'static>) {
    let functions: [(&'static str, &'static str, PathFunction); 5] = [
        ("base", "osBase", |p| Value::from(base(p))),
        ("dir", "osDir", |p| Value::from(dir(p))),
        ("clean", "osClean", |p| Value::from(clean(p))),
        ("ext", "osExt", |p| Value::from(ext(p))),
        ("isAbs", "osIsAbs", |p| Value::from(p.starts_with('/'))),
    ];
    for (name, os_name, f) in functions {
        for registered in [name, os_name] {
            env.add_function(registered, move |value: Value| {
                Ok::<_, Error>(f(&string_arg(registered, &value)?))
            });
        }
    }
}

/// Go's `path.Clean`: the shortest equivalent path, `.` for an empty one.
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`: the last element, `/` for the root, `.` for an empty path.
fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".to_string();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go's `path.Dir`: everything but the last element, cleaned.
fn dir(path: &str) -> String {
    let cut = path.rfind('/').map_or(0, |slash| slash + 1);
    clean(&path[..cut])
}

/// Go's `path.Ext`: the last element's suffix from its last dot.
fn ext(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or(path);
    last.rfind('.')
        .map_or_else(String::new, |dot| last[dot..].to_string())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;

    #[test]
    fn paths_match_go() {
        check(&[
            (
                "{{ base \"foo/bar/baz\" }} {{ base \"/\" }} {{ base \"\" }} {{ base \"a/b/\" }}",
                "baz / . b",
            ),
            (
                "{{ dir \"foo/bar/baz\" }} {{ dir \"baz\" }} {{ dir \"/a\" }}",
                "foo/bar . /",
            ),
            (
                "{{ clean \"foo/bar/../baz\" }} {{ clean \"/../a//b/./c/\" }} {{ clean \"\" }} {{ clean \"../../x\" }}",
                "foo/baz /a/b/c . ../../x",
            ),
            ("{{ ext \"foo.bar.yaml\" }} {{ ext \"a.b/c\" }}", ".yaml "),
            (
                "{{ isAbs \"/a\" }} {{ isAbs \"a\" }} {{ osBase \"a/b\" }} {{ osDir \"a/b\" }} {{ osClean \"a//b\" }} {{ osExt \"x.y\" }} {{ osIsAbs \"/\" }}",
                "true false b a a/b .y true",
            ),
        ]);
    }
}

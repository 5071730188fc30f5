//! Loading a source directory: which files are manifests (`*.yaml`, `*.yml`, `*.json`, optional
//! recursion, include/exclude globs) and collecting every object and every error from them.

use std::fs;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};

use super::document::parse_documents;
use super::error::ValidationError;
use super::resource::Resource;

/// Argo CD's `source.directory` options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryOptions {
    /// Descend into subdirectories (`directory.recurse`).
    pub recurse: bool,
    /// Only files whose path relative to the root matches this glob (`directory.include`,
    /// e.g. `{app.yaml,*.json}`); `*` also matches `/`.
    pub include: Option<String>,
    /// Skip files whose relative path matches this glob (`directory.exclude`).
    pub exclude: Option<String>,
}

impl DirectoryOptions {
    /// These options (flags given by hand) over `base` (an Application's): recursion when
    /// either asks for it, a glob given here wins.
    #[must_use]
    pub fn over(&self, base: &Self) -> Self {
        Self {
            recurse: base.recurse || self.recurse,
            include: self.include.clone().or_else(|| base.include.clone()),
            exclude: self.exclude.clone().or_else(|| base.exclude.clone()),
        }
    }
}

/// Loads every manifest under `root` (or the single file `root`), in path order.
///
/// Returns the valid resources and all errors: unreadable files, bad globs, invalid YAML/JSON
/// and invalid objects. File paths in resources and errors are relative to `root`.
#[must_use]
pub fn load_directory(
    root: &Path,
    options: &DirectoryOptions,
) -> (Vec<Resource>, Vec<ValidationError>) {
    let mut errors = Vec::new();
    let include = compile(options.include.as_deref(), "directory.include", &mut errors);
    let exclude = compile(options.exclude.as_deref(), "directory.exclude", &mut errors);
    if !errors.is_empty() {
        return (Vec::new(), errors);
    }
    let mut files = Vec::new();
    if root.is_file() {
        files.push(PathBuf::new());
    } else {
        collect_files(
            root,
            Path::new(""),
            options.recurse,
            &mut files,
            &mut errors,
        );
    }
    files.sort();
    let mut resources = Vec::new();
    for relative in files {
        let selected = include.as_ref().is_none_or(|glob| glob.is_match(&relative))
            && !exclude
                .as_ref()
                .is_some_and(|glob| glob.is_match(&relative));
        if !selected {
            continue;
        }
        let (path, label) = if relative.as_os_str().is_empty() {
            (
                root.to_owned(),
                PathBuf::from(root.file_name().unwrap_or(root.as_os_str())),
            )
        } else {
            (root.join(&relative), relative)
        };
        match fs::read_to_string(&path) {
            Ok(text) => {
                let (found, problems) = parse_documents(&label, &text);
                resources.extend(found);
                errors.extend(problems);
            }
            Err(error) => errors.push(file_error(label, format!("cannot read: {error}"))),
        }
    }
    (resources, errors)
}

fn compile(
    glob: Option<&str>,
    option: &str,
    errors: &mut Vec<ValidationError>,
) -> Option<GlobMatcher> {
    let glob = glob.filter(|g| !g.is_empty())?;
    match Glob::new(glob) {
        Ok(glob) => Some(glob.compile_matcher()),
        Err(error) => {
            errors.push(file_error(
                PathBuf::from(option),
                format!("invalid glob {glob:?}: {error}"),
            ));
            None
        }
    }
}

fn collect_files(
    root: &Path,
    relative: &Path,
    recurse: bool,
    files: &mut Vec<PathBuf>,
    errors: &mut Vec<ValidationError>,
) {
    let entries = match fs::read_dir(root.join(relative)) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(file_error(
                relative.to_owned(),
                format!("cannot list directory: {error}"),
            ));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = relative.join(entry.file_name());
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            if recurse {
                collect_files(root, &path, recurse, files, errors);
            }
        } else if is_manifest(&path) {
            files.push(path);
        }
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| {
            ["yaml", "yml", "json"]
                .iter()
                .any(|m| ext.eq_ignore_ascii_case(m))
        })
}

fn file_error(file: PathBuf, message: String) -> ValidationError {
    ValidationError {
        file,
        document: None,
        object: None,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, name: &str| {
            let full = dir.path().join(path);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n");
            fs::write(full, text).unwrap();
        };
        write("a.yaml", "a");
        write("b.yml", "b");
        write("notes.txt", "not-a-manifest");
        write("sub/c.yaml", "c");
        write("sub/deep/d.yaml", "d");
        fs::write(
            dir.path().join("e.json"),
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"e"}}"#,
        )
        .unwrap();
        dir
    }

    fn load(
        root: &Path,
        recurse: bool,
        include: Option<&str>,
        exclude: Option<&str>,
    ) -> Vec<String> {
        let options = DirectoryOptions {
            recurse,
            include: include.map(str::to_owned),
            exclude: exclude.map(str::to_owned),
        };
        let (resources, errors) = load_directory(root, &options);
        assert_eq!(errors, vec![]);
        resources
            .iter()
            .map(|r| format!("{}:{}", r.source.file.display(), r.name.as_str()))
            .collect()
    }

    #[test]
    fn selects_files() {
        let dir = tree();
        let root = dir.path();
        type Case<'a> = (bool, Option<&'a str>, Option<&'a str>, &'a [&'a str]);
        let cases: [Case<'_>; 5] = [
            (false, None, None, &["a.yaml:a", "b.yml:b", "e.json:e"]),
            (
                true,
                None,
                None,
                &[
                    "a.yaml:a",
                    "b.yml:b",
                    "e.json:e",
                    "sub/c.yaml:c",
                    "sub/deep/d.yaml:d",
                ],
            ),
            (
                true,
                Some("*.yaml"),
                None,
                &["a.yaml:a", "sub/c.yaml:c", "sub/deep/d.yaml:d"],
            ),
            (
                true,
                None,
                Some("sub/deep/*"),
                &["a.yaml:a", "b.yml:b", "e.json:e", "sub/c.yaml:c"],
            ),
            (
                true,
                Some("{a.yaml,e.json}"),
                None,
                &["a.yaml:a", "e.json:e"],
            ),
        ];
        for (recurse, include, exclude, expected) in cases {
            assert_eq!(
                load(root, recurse, include, exclude),
                expected,
                "{include:?} {exclude:?}"
            );
        }
    }

    #[test]
    fn a_single_file_is_a_source() {
        let dir = tree();
        assert_eq!(
            load(&dir.path().join("a.yaml"), false, None, None),
            ["a.yaml:a"]
        );
    }

    #[test]
    fn bad_globs_and_files_are_errors() {
        let dir = tree();
        fs::write(dir.path().join("bad.yaml"), "a: [").unwrap();
        let options = DirectoryOptions {
            include: Some("a[".into()),
            ..DirectoryOptions::default()
        };
        let (_, errors) = load_directory(dir.path(), &options);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, Path::new("directory.include"));
        let (resources, errors) = load_directory(dir.path(), &DirectoryOptions::default());
        assert_eq!(resources.len(), 3);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, Path::new("bad.yaml"));
    }
}

//! Loading a source directory: which files are manifests (`*.yaml`, `*.yml`, `*.json`, and
//! `*.jsonnet` evaluated by the caller's [`JsonnetEvaluator`]; optional recursion, include/exclude globs) and
//! collecting every object and every error from them,
//! within the limits of one Application ([`super::limits`]): the files are counted before any is
//! read, each file's size is checked before it is read, and only regular files are read (a FIFO
//! would block, a device never end). The files are read through the caller's [`SourceTree`].

use std::io::Read;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};

use super::document::{parse_documents, resources_of};
use super::error::ValidationError;
use super::jsonnet::{JsonnetEvaluator, JsonnetOptions, JsonnetRequest};
use super::limits::{
    MAX_APPLICATION_BYTES, MAX_APPLICATION_FILES, MAX_APPLICATION_OBJECTS, MAX_MANIFEST_FILE_BYTES,
};
use super::resource::Resource;
use super::source_tree::{FileKind, SourceTree};

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
    /// How `*.jsonnet` files are evaluated (`directory.jsonnet`).
    pub jsonnet: JsonnetOptions,
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
            jsonnet: base.jsonnet.clone(),
        }
    }
}

/// Which files are read.
struct Selection {
    include: Option<GlobMatcher>,
    exclude: Option<GlobMatcher>,
    recurse: bool,
}

impl Selection {
    fn selects(&self, relative: &Path) -> bool {
        is_manifest(relative)
            && self
                .include
                .as_ref()
                .is_none_or(|glob| glob.is_match(relative))
            && !self
                .exclude
                .as_ref()
                .is_some_and(|glob| glob.is_match(relative))
    }
}

/// Loads every manifest under `root` (or the single file `root`) of `tree`, in path order, as
/// [`load_directory_of`] with `root` as its own repository and Jsonnet evaluated in this process.
#[cfg(test)]
#[must_use]
pub fn load_directory(
    tree: &dyn SourceTree,
    root: &Path,
    options: &DirectoryOptions,
) -> (Vec<Resource>, Vec<ValidationError>) {
    let jsonnet = super::jsonnet::InProcess { tree };
    load_directory_of(tree, root, root, options, &jsonnet)
}

/// Loads every manifest under `root` (or the single file `root`) of the repository checked out
/// at `repository` in `tree`, in path order: Jsonnet files are evaluated by `jsonnet`, their
/// imports must stay inside `repository`, and its `libs` are relative to it.
///
/// Returns the valid resources and all errors: a missing root, unreadable or non-regular files,
/// bad globs, invalid YAML/JSON, Jsonnet errors, invalid objects, and a source over the limits
/// (reading stops there). File paths in resources and errors are relative to `root` (a missing
/// root is named as given).
#[must_use]
pub fn load_directory_of(
    tree: &dyn SourceTree,
    root: &Path,
    repository: &Path,
    options: &DirectoryOptions,
    jsonnet: &dyn JsonnetEvaluator,
) -> (Vec<Resource>, Vec<ValidationError>) {
    let mut errors = Vec::new();
    let include = compile(options.include.as_deref(), "directory.include", &mut errors);
    let exclude = compile(options.exclude.as_deref(), "directory.exclude", &mut errors);
    if !errors.is_empty() {
        return (Vec::new(), errors);
    }
    let selection = Selection {
        include,
        exclude,
        recurse: options.recurse,
    };
    let mut files = Vec::new();
    match tree.info(root) {
        Ok(info) if info.kind == FileKind::Directory => {
            let walk = Walk {
                tree,
                root,
                selection: &selection,
            };
            walk.collect_files(Path::new(""), &mut files, &mut errors);
        }
        Ok(_) => files.push(PathBuf::new()),
        Err(error) => {
            let error = file_error(root.to_owned(), format!("cannot read: {error}"));
            return (Vec::new(), vec![error]);
        }
    }
    if files.len() > MAX_APPLICATION_FILES {
        let error = file_error(
            root.to_owned(),
            format!(
                "more than {MAX_APPLICATION_FILES} manifest files (the limit of an Application); none was read"
            ),
        );
        return (Vec::new(), vec![error]);
    }
    files.sort();
    let source = if files.first().is_some_and(|f| f.as_os_str().is_empty()) {
        root.parent().unwrap_or(root)
    } else {
        root
    };
    let mut resources = Vec::new();
    let mut bytes = 0;
    for relative in files {
        let (path, label) = if relative.as_os_str().is_empty() {
            (
                root.to_owned(),
                PathBuf::from(root.file_name().unwrap_or(root.as_os_str())),
            )
        } else {
            (root.join(&relative), relative)
        };
        let text = match read_manifest(tree, &path, MAX_APPLICATION_BYTES - bytes) {
            Ok(text) => text,
            Err(Unread::File(message)) => {
                errors.push(file_error(label, message));
                continue;
            }
            Err(Unread::Total(message)) => {
                errors.push(file_error(label, message));
                break;
            }
        };
        bytes += text.len() as u64;
        let (found, problems) = if is_jsonnet(&label) {
            let request = JsonnetRequest {
                path,
                label: label.clone(),
                text,
                repository: repository.to_owned(),
                source: source.to_owned(),
                options: options.jsonnet.clone(),
            };
            match jsonnet.evaluate(&request) {
                Ok(documents) => resources_of(&label, documents),
                Err(message) => (Vec::new(), vec![file_error(label.clone(), message)]),
            }
        } else {
            parse_documents(&label, &text)
        };
        resources.extend(found);
        errors.extend(problems);
        if resources.len() > MAX_APPLICATION_OBJECTS {
            errors.push(file_error(
                label,
                format!(
                    "more than {MAX_APPLICATION_OBJECTS} objects (the limit of an Application); the files after this one were not read"
                ),
            ));
            break;
        }
    }
    (resources, errors)
}

/// Why a manifest file was not read.
enum Unread {
    /// The file itself (the others are still read).
    File(String),
    /// It would take the Application over its byte limit (nothing more is read).
    Total(String),
}

/// The text of the regular file `path` of `tree`, at most [`MAX_MANIFEST_FILE_BYTES`] and `left`
/// bytes (what the Application may still read). Opened without blocking, so a FIFO is refused
/// rather than waited on.
fn read_manifest(tree: &dyn SourceTree, path: &Path, left: u64) -> Result<String, Unread> {
    let unreadable = |error: std::io::Error| Unread::File(format!("cannot read: {error}"));
    let (info, file) = tree.open(path).map_err(unreadable)?;
    if info.kind != FileKind::File {
        return Err(Unread::File("not a regular file".to_owned()));
    }
    let size = info.len;
    if size > MAX_MANIFEST_FILE_BYTES {
        return Err(Unread::File(format!(
            "{size} bytes, more than the limit of {MAX_MANIFEST_FILE_BYTES} per manifest file; not read"
        )));
    }
    if size > left {
        return Err(Unread::Total(format!(
            "the manifests would hold more than {MAX_APPLICATION_BYTES} bytes (the limit of an Application); this file and the files after it were not read"
        )));
    }
    let mut text = String::new();
    file.take(size.min(left) + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    if text.len() as u64 > size.min(left) {
        return Err(Unread::File("grew while it was read; not read".to_owned()));
    }
    Ok(text)
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

/// The walk of one source directory.
struct Walk<'a> {
    tree: &'a dyn SourceTree,
    root: &'a Path,
    selection: &'a Selection,
}

impl Walk<'_> {
    /// Adds the selected files below `root/relative` to `files`, stopping once there are more
    /// than an Application may read.
    fn collect_files(
        &self,
        relative: &Path,
        files: &mut Vec<PathBuf>,
        errors: &mut Vec<ValidationError>,
    ) {
        let entries = match self.tree.list(&self.root.join(relative)) {
            Ok(entries) => entries,
            Err(error) => {
                errors.push(file_error(
                    relative.to_owned(),
                    format!("cannot list directory: {error}"),
                ));
                return;
            }
        };
        for entry in entries {
            if files.len() > MAX_APPLICATION_FILES {
                return;
            }
            let path = relative.join(entry.name);
            if entry.kind == FileKind::Directory {
                if self.selection.recurse {
                    self.collect_files(&path, files, errors);
                }
            } else if self.selection.selects(&path) {
                files.push(path);
            }
        }
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| {
            ["yaml", "yml", "json", "jsonnet"]
                .iter()
                .any(|m| ext.eq_ignore_ascii_case(m))
        })
}

/// A Jsonnet file (`.jsonnet`; `.libsonnet` files are only imported, as in Argo CD).
fn is_jsonnet(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "jsonnet")
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
    use super::super::memory_tree::MemoryTree;
    use super::*;

    /// A source under `/src` (what depends on a real file system — FIFOs, sizes on disk, the
    /// system's messages — is tested on the shell's tree).
    fn tree() -> MemoryTree {
        let mut tree = MemoryTree::default();
        for (path, name) in [
            ("a.yaml", "a"),
            ("b.yml", "b"),
            ("notes.txt", "not-a-manifest"),
            ("sub/c.yaml", "c"),
            ("sub/deep/d.yaml", "d"),
        ] {
            let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n");
            tree.write(&format!("/src/{path}"), text);
        }
        tree.write(
            "/src/e.json",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"e"}}"#,
        );
        tree
    }

    fn load(
        tree: &MemoryTree,
        root: &Path,
        recurse: bool,
        include: Option<&str>,
        exclude: Option<&str>,
    ) -> Vec<String> {
        let options = DirectoryOptions {
            recurse,
            include: include.map(str::to_owned),
            exclude: exclude.map(str::to_owned),
            ..DirectoryOptions::default()
        };
        let (resources, errors) = load_directory(tree, root, &options);
        assert_eq!(errors, vec![]);
        resources
            .iter()
            .map(|r| format!("{}:{}", r.source.file.display(), r.name.as_str()))
            .collect()
    }

    #[test]
    fn selects_files() {
        let tree = tree();
        let root = Path::new("/src");
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
                load(&tree, root, recurse, include, exclude),
                expected,
                "{include:?} {exclude:?}"
            );
        }
    }

    #[test]
    fn a_single_file_is_a_source() {
        assert_eq!(
            load(&tree(), Path::new("/src/a.yaml"), false, None, None),
            ["a.yaml:a"]
        );
    }

    #[test]
    fn bad_globs_and_files_are_errors() {
        let mut tree = tree();
        tree.write("/src/bad.yaml", "a: [");
        let root = Path::new("/src");
        let options = DirectoryOptions {
            include: Some("a[".into()),
            ..DirectoryOptions::default()
        };
        let (_, errors) = load_directory(&tree, root, &options);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, Path::new("directory.include"));
        let (resources, errors) = load_directory(&tree, root, &DirectoryOptions::default());
        assert_eq!(resources.len(), 3);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, Path::new("bad.yaml"));
    }

    #[test]
    fn objects_and_bytes_over_the_limits_of_an_application_stop_reading() {
        let mut tree = MemoryTree::default();
        let half = MAX_APPLICATION_OBJECTS / 2 + 1;
        for file in ["a.yaml", "b.yaml", "c.yaml"] {
            let text: String = (0..half)
                .map(|i| {
                    format!(
                        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {file}-{i}}}\n"
                    )
                })
                .collect();
            tree.write(&format!("/src/{file}"), text);
        }
        let (_, errors) = load_directory(&tree, Path::new("/src"), &DirectoryOptions::default());
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!(
                "b.yaml: more than {MAX_APPLICATION_OBJECTS} objects (the limit of an Application); the files after this one were not read"
            )]
        );

        // What an Application may still read bounds every file.
        let file = Path::new("/src/a.yaml");
        let size = tree.info(file).unwrap().len;
        assert!(read_manifest(&tree, file, size).is_ok());
        assert!(matches!(
            read_manifest(&tree, file, size - 1),
            Err(Unread::Total(message)) if message.contains(&MAX_APPLICATION_BYTES.to_string())
        ));
    }
}

//! Loading a source directory: which files are manifests (`*.yaml`, `*.yml`, `*.json`, and
//! `*.jsonnet` evaluated by the caller's [`JsonnetEvaluator`]; optional recursion, include/exclude globs) and
//! collecting every object and every error from them,
//! within the limits of one Application ([`super::limits`]): the files are counted before any is
//! read, each file's size is checked before it is read, and only regular files are read (a FIFO
//! would block, a device never end).

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};

use super::document::{parse_documents, resources_of};
use super::error::ValidationError;
use super::jsonnet::{JsonnetEvaluator, JsonnetOptions, JsonnetRequest};
use super::limits::{
    MAX_APPLICATION_BYTES, MAX_APPLICATION_FILES, MAX_APPLICATION_OBJECTS, MAX_MANIFEST_FILE_BYTES,
};
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

/// Loads every manifest under `root` (or the single file `root`), in path order, as
/// [`load_directory_of`] with `root` as its own repository and Jsonnet evaluated in this process.
#[cfg(test)]
#[must_use]
pub fn load_directory(
    root: &Path,
    options: &DirectoryOptions,
) -> (Vec<Resource>, Vec<ValidationError>) {
    load_directory_of(root, root, options, &super::jsonnet::InProcess)
}

/// Loads every manifest under `root` (or the single file `root`) of the repository checked out
/// at `repository`, in path order: Jsonnet files are evaluated by `jsonnet`, their imports must
/// stay inside `repository`, and its `libs` are relative to it.
///
/// Returns the valid resources and all errors: a missing root, unreadable or non-regular files,
/// bad globs, invalid YAML/JSON, Jsonnet errors, invalid objects, and a source over the limits
/// (reading stops there). File paths in resources and errors are relative to `root` (a missing
/// root is named as given).
#[must_use]
pub fn load_directory_of(
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
    match fs::metadata(root) {
        Ok(metadata) if metadata.is_dir() => {
            collect_files(root, Path::new(""), &selection, &mut files, &mut errors);
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
        let text = match read_manifest(&path, MAX_APPLICATION_BYTES - bytes) {
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

/// The text of the regular file `path`, at most [`MAX_MANIFEST_FILE_BYTES`] and `left` bytes
/// (what the Application may still read). Opened without blocking, so a FIFO is refused rather
/// than waited on.
fn read_manifest(path: &Path, left: u64) -> Result<String, Unread> {
    let unreadable = |error: std::io::Error| Unread::File(format!("cannot read: {error}"));
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(unreadable)?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(Unread::File("not a regular file".to_owned()));
    }
    let size = metadata.len();
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

/// Adds the selected files below `root/relative` to `files`, stopping once there are more than
/// an Application may read.
fn collect_files(
    root: &Path,
    relative: &Path,
    selection: &Selection,
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
        if files.len() > MAX_APPLICATION_FILES {
            return;
        }
        let path = relative.join(entry.file_name());
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            if selection.recurse {
                collect_files(root, &path, selection, files, errors);
            }
        } else if selection.selects(&path) {
            files.push(path);
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
            ..DirectoryOptions::default()
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

    fn errors_of(root: &Path) -> Vec<String> {
        let (_, errors) = load_directory(root, &DirectoryOptions::default());
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_missing_root_and_files_that_are_not_regular_are_named() {
        let dir = tree();
        let missing = dir.path().join("app");
        assert_eq!(
            errors_of(&missing),
            [format!(
                "{}: cannot read: No such file or directory (os error 2)",
                missing.display()
            )]
        );
        let fifo = dir.path().join("pipe.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(errors_of(dir.path()), ["pipe.yaml: not a regular file"]);
    }

    #[test]
    fn files_over_the_limits_are_errors_naming_them() {
        let dir = tree();
        let big = fs::File::create(dir.path().join("big.yaml")).unwrap();
        big.set_len(MAX_MANIFEST_FILE_BYTES + 1).unwrap();
        let (resources, errors) = load_directory(dir.path(), &DirectoryOptions::default());
        assert_eq!(resources.len(), 3, "the other files are read");
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!(
                "big.yaml: {} bytes, more than the limit of {MAX_MANIFEST_FILE_BYTES} per manifest file; not read",
                MAX_MANIFEST_FILE_BYTES + 1
            )]
        );

        let many = tempfile::tempdir().unwrap();
        for i in 0..=MAX_APPLICATION_FILES {
            fs::write(many.path().join(format!("f{i}.yaml")), "").unwrap();
        }
        assert_eq!(
            errors_of(many.path()),
            [format!(
                "{}: more than {MAX_APPLICATION_FILES} manifest files (the limit of an Application); none was read",
                many.path().display()
            )]
        );
    }

    #[test]
    fn objects_and_bytes_over_the_limits_of_an_application_stop_reading() {
        let dir = tempfile::tempdir().unwrap();
        let half = MAX_APPLICATION_OBJECTS / 2 + 1;
        for file in ["a.yaml", "b.yaml", "c.yaml"] {
            let text: String = (0..half)
                .map(|i| {
                    format!(
                        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {file}-{i}}}\n"
                    )
                })
                .collect();
            fs::write(dir.path().join(file), text).unwrap();
        }
        assert_eq!(
            errors_of(dir.path()),
            [format!(
                "b.yaml: more than {MAX_APPLICATION_OBJECTS} objects (the limit of an Application); the files after this one were not read"
            )]
        );

        // What an Application may still read bounds every file.
        let file = dir.path().join("a.yaml");
        let size = fs::metadata(&file).unwrap().len();
        assert!(read_manifest(&file, size).is_ok());
        assert!(matches!(
            read_manifest(&file, size - 1),
            Err(Unread::Total(message)) if message.contains(&MAX_APPLICATION_BYTES.to_string())
        ));
    }
}

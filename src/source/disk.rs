//! The [`SourceTree`] of this machine's file system, which the manifest loaders of the core
//! read sources and Jsonnet imports through: files are opened without blocking (a FIFO is
//! opened and found not to be a regular file rather than waited on), a directory's entries are
//! read without following symbolic links, and paths are canonicalized by the system.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use flotilla_core::manifest::{Entries, Entry, FileInfo, FileKind, Opened, SourceTree};

/// This machine's file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

fn kind_of(file_type: fs::FileType) -> FileKind {
    if file_type.is_file() {
        FileKind::File
    } else if file_type.is_dir() {
        FileKind::Directory
    } else {
        FileKind::Other
    }
}

fn info_of(metadata: &fs::Metadata) -> FileInfo {
    FileInfo {
        kind: kind_of(metadata.file_type()),
        len: metadata.len(),
    }
}

impl SourceTree for Disk {
    fn info(&self, path: &Path) -> io::Result<FileInfo> {
        fs::metadata(path).map(|metadata| info_of(&metadata))
    }

    fn list(&self, path: &Path) -> io::Result<Entries<'_>> {
        let entries = fs::read_dir(path)?.flatten().filter_map(|entry| {
            let kind = kind_of(entry.file_type().ok()?);
            Some(Entry {
                name: entry.file_name(),
                kind,
            })
        });
        Ok(Box::new(entries))
    }

    fn open(&self, path: &Path) -> io::Result<Opened<'_>> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        let info = info_of(&file.metadata()?);
        Ok((info, Box::new(file)))
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        fs::canonicalize(path)
    }
}

#[cfg(test)]
mod tests {
    //! The loaders of the core on a real file system: what an in-memory tree cannot show
    //! (FIFOs, sparse files, the system's messages, imports escaping by absolute paths).

    use flotilla_core::manifest::limits::{MAX_APPLICATION_FILES, MAX_MANIFEST_FILE_BYTES};
    use flotilla_core::manifest::{
        DirectoryOptions, InProcess, JsonnetOptions, Resource, ValidationError, load_directory_of,
    };

    use super::*;

    fn load_directory(
        root: &Path,
        options: &DirectoryOptions,
    ) -> (Vec<Resource>, Vec<ValidationError>) {
        load_directory_of(&Disk, root, root, options, &InProcess { tree: &Disk })
    }

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
        fs::write(
            dir.path().join("e.json"),
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"e"}}"#,
        )
        .unwrap();
        dir
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
        let options = DirectoryOptions {
            recurse: true,
            ..DirectoryOptions::default()
        };
        let (resources, _) = load_directory(dir.path(), &options);
        let names: Vec<_> = resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["a", "b", "e", "c"],
            "the walk reads the disk in path order"
        );
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
    fn jsonnet_imports_outside_the_repository_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("outside.libsonnet"), "{ secret: 1 }").unwrap();
        let repository = dir.path().join("repo");
        fs::create_dir_all(repository.join("app")).unwrap();
        for (file, text) in [
            ("a.jsonnet", "(import '../../outside.libsonnet') + {}\n"),
            ("b.jsonnet", "importstr '/etc/passwd'\n"),
            ("c.jsonnet", "import 'absent.libsonnet'\n"),
            ("d.jsonnet", "import 'linked.libsonnet'\n"),
        ] {
            fs::write(repository.join("app").join(file), text).unwrap();
        }
        std::os::unix::fs::symlink(
            dir.path().join("outside.libsonnet"),
            repository.join("app/linked.libsonnet"),
        )
        .unwrap();
        let load = |jsonnet: JsonnetOptions| {
            let options = DirectoryOptions {
                jsonnet,
                ..DirectoryOptions::default()
            };
            let jsonnet = InProcess { tree: &Disk };
            let (_, errors) = load_directory_of(
                &Disk,
                &repository.join("app"),
                &repository,
                &options,
                &jsonnet,
            );
            errors.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        assert_eq!(
            load(JsonnetOptions::default()),
            [
                r#"a.jsonnet: a.jsonnet:1: import "../../outside.libsonnet" is outside the repository; refused"#,
                r#"b.jsonnet: b.jsonnet:1: import "/etc/passwd" is outside the repository; refused"#,
                r#"c.jsonnet: c.jsonnet:1: import "absent.libsonnet": no such file"#,
                r#"d.jsonnet: d.jsonnet:1: import "linked.libsonnet" is outside the repository; refused"#,
            ]
        );
        let libs = JsonnetOptions {
            libs: vec!["../".into()],
            ..JsonnetOptions::default()
        };
        assert_eq!(
            load(libs)[0],
            r#"a.jsonnet: directory.jsonnet.libs: "../" is outside the repository"#
        );
    }
}

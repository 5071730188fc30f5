//! A [`SourceTree`] held in memory, for the core's tests: files by absolute path, directories
//! implied by the files below them. No symbolic links, FIFOs or permissions: what depends on
//! those is tested on the shell's tree of the real file system.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Cursor};
use std::path::{Component, Path, PathBuf};

use super::source_tree::{Entries, Entry, FileInfo, FileKind, Opened, SourceTree};

/// Files by absolute path, with their text.
#[derive(Clone, Debug, Default)]
pub struct MemoryTree {
    files: BTreeMap<PathBuf, String>,
}

impl MemoryTree {
    /// A tree of `files` (absolute path, text).
    #[must_use]
    pub fn new<'a>(files: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        Self {
            files: files
                .into_iter()
                .map(|(path, text)| (PathBuf::from(path), text))
                .collect(),
        }
    }

    /// Writes the file `path` (its directories are implied).
    pub fn write(&mut self, path: &str, text: impl Into<String>) {
        self.files.insert(PathBuf::from(path), text.into());
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        if self.files.contains_key(path) {
            Some(FileKind::File)
        } else if path == Path::new("/") || self.files.keys().any(|file| file.starts_with(path)) {
            Some(FileKind::Directory)
        } else {
            None
        }
    }
}

fn missing() -> io::Error {
    io::Error::from(io::ErrorKind::NotFound)
}

impl SourceTree for MemoryTree {
    fn info(&self, path: &Path) -> io::Result<FileInfo> {
        let path = self.canonicalize(path)?;
        let len = self.files.get(&path).map_or(0, |text| text.len() as u64);
        let kind = self.kind(&path).ok_or_else(missing)?;
        Ok(FileInfo { kind, len })
    }

    fn list(&self, path: &Path) -> io::Result<Entries<'_>> {
        let path = self.canonicalize(path)?;
        if self.kind(&path) != Some(FileKind::Directory) {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
        let mut names: BTreeMap<OsString, FileKind> = BTreeMap::new();
        for file in self.files.keys() {
            let Ok(rest) = file.strip_prefix(&path) else {
                continue;
            };
            let mut parts = rest.components();
            if let Some(first) = parts.next() {
                let kind = if parts.next().is_some() {
                    FileKind::Directory
                } else {
                    FileKind::File
                };
                names.insert(first.as_os_str().to_owned(), kind);
            }
        }
        Ok(Box::new(
            names.into_iter().map(|(name, kind)| Entry { name, kind }),
        ))
    }

    fn open(&self, path: &Path) -> io::Result<Opened<'_>> {
        let info = self.info(path)?;
        let text = self
            .files
            .get(&self.canonicalize(path)?)
            .map_or(&[][..], String::as_bytes);
        Ok((info, Box::new(Cursor::new(text))))
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let mut canonical = PathBuf::from("/");
        for component in path.components() {
            match component {
                Component::ParentDir => {
                    canonical.pop();
                }
                Component::Normal(part) => canonical.push(part),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        self.kind(&canonical).map(|_| canonical).ok_or_else(missing)
    }
}

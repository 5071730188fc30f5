//! What the manifest loaders read a source through: the walk of a source directory
//! ([`super::load_directory_of`]) and the Jsonnet importer ([`super::evaluate`]) ask a
//! [`SourceTree`] what a path is, what a directory holds, for a file's bytes and for a path's
//! canonical form. The core holds no file system: the shell's implementation reads this
//! machine's, and the core's tests use a tree held in memory.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// Anything else: a FIFO, a device, a socket (or, for a directory's entry, a symbolic link).
    Other,
}

/// A path's kind and size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub kind: FileKind,
    pub len: u64,
}

/// One entry of a directory: its name and its own kind (a symbolic link is not followed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: FileKind,
}

/// The entries of a directory, in the order the tree lists them.
pub type Entries<'t> = Box<dyn Iterator<Item = Entry> + 't>;

/// A file opened for reading, with what it was when opened.
pub type Opened<'t> = (FileInfo, Box<dyn Read + 't>);

/// A tree of files the manifest loaders read.
pub trait SourceTree {
    /// What `path` is, following symbolic links.
    ///
    /// # Errors
    /// The path cannot be read (missing, forbidden).
    fn info(&self, path: &Path) -> io::Result<FileInfo>;

    /// The entries of the directory `path` (those whose kind cannot be read are left out).
    ///
    /// # Errors
    /// The directory cannot be listed.
    fn list(&self, path: &Path) -> io::Result<Entries<'_>>;

    /// Opens `path` for reading without waiting on it (a FIFO is opened, not waited on), with
    /// what it is once open.
    ///
    /// # Errors
    /// The path cannot be opened.
    fn open(&self, path: &Path) -> io::Result<Opened<'_>>;

    /// `path` absolute, with every symbolic link and `..` resolved.
    ///
    /// # Errors
    /// The path, or a directory on the way, does not exist.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// Whether `path` is a regular file (following symbolic links); false when it cannot be read.
    fn is_file(&self, path: &Path) -> bool {
        self.info(path)
            .is_ok_and(|info| info.kind == FileKind::File)
    }
}

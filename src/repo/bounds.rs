//! Keeping a source inside its root (a checked-out commit, or a plain directory read in place):
//! every symbolic link below the root must resolve — through any chain of links, at any depth,
//! to a file or a directory, existing or not — to a place inside it, and a source's `path` must
//! name an existing place inside it. Links are resolved component by component as the kernel
//! does (so `dir/..` after a link climbs from where the link leads, not lexically), and checked
//! on the files on disk before any of them is parsed.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use flotilla_core::manifest::limits::{
    MAX_LINK_HOPS, MAX_MANIFEST_FILE_BYTES, MAX_REPOSITORY_FILES,
};

/// A source that reaches outside its root, or cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BoundsError {
    #[error("symbolic link {link} points outside the repository: {target}")]
    LinkOutside { link: PathBuf, target: PathBuf },
    #[error(
        "symbolic link {link} ({target}) does not resolve: more than {MAX_LINK_HOPS} links in a row"
    )]
    LinkLoop { link: PathBuf, target: PathBuf },
    #[error("path {path:?} is outside the repository")]
    PathOutside { path: String },
    #[error("path {path:?} does not exist")]
    PathMissing { path: String },
    #[error(
        "more than {MAX_REPOSITORY_FILES} files (the limit of a repository or source directory)"
    )]
    TooManyFiles,
    #[error("{path} is {size} bytes, more than the limit of {MAX_MANIFEST_FILE_BYTES}")]
    FileTooLarge { path: PathBuf, size: u64 },
    #[error("{path} is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("cannot read {path}: {error}")]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// Why a path does not resolve inside the root.
#[derive(Debug, PartialEq, Eq)]
enum Escape {
    Outside,
    Loop,
}

/// Checks every symbolic link below `root` (`.git` directories aside; a directory's own entries
/// in name order, then its subdirectories), and that `root` holds at most
/// [`MAX_REPOSITORY_FILES`] files.
///
/// # Errors
/// The first link that leads outside or loops, too many files, or an unreadable directory.
pub fn check_links(root: &Path) -> Result<(), BoundsError> {
    let mut files = 0;
    let mut directories = vec![PathBuf::new()];
    while let Some(directory) = directories.pop() {
        let io = |error| BoundsError::Io {
            path: root.join(&directory),
            error,
        };
        let mut entries = std::fs::read_dir(root.join(&directory))
            .map_err(io)?
            .map(|entry| entry.map(|e| (e.file_name(), e.file_type())))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io)?;
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut subdirectories = Vec::new();
        for (name, file_type) in entries {
            let relative = directory.join(&name);
            let file_type = file_type.map_err(|error| BoundsError::Io {
                path: root.join(&relative),
                error,
            })?;
            if file_type.is_dir() {
                if name != ".git" {
                    subdirectories.push(relative);
                }
                continue;
            }
            files += 1;
            if files > MAX_REPOSITORY_FILES {
                return Err(BoundsError::TooManyFiles);
            }
            if file_type.is_symlink() {
                check_link(root, &relative)?;
            }
        }
        directories.extend(subdirectories.into_iter().rev());
    }
    Ok(())
}

/// Checks that the link at `link` (relative to `root`) resolves inside `root`.
fn check_link(root: &Path, link: &Path) -> Result<(), BoundsError> {
    let target = std::fs::read_link(root.join(link)).map_err(|error| BoundsError::Io {
        path: root.join(link),
        error,
    })?;
    match resolve(root, link) {
        Ok(_) => Ok(()),
        Err(Escape::Outside) => Err(BoundsError::LinkOutside {
            link: link.to_owned(),
            target,
        }),
        Err(Escape::Loop) => Err(BoundsError::LinkLoop {
            link: link.to_owned(),
            target,
        }),
    }
}

/// The existing file or directory `path` (relative, `/`-separated; empty or `.` for the root
/// itself) names below `root`, with every link on the way resolved.
///
/// # Errors
/// `path` is absolute or leads outside `root` (by `..` or a link), or names nothing.
pub fn source_path(root: &Path, path: &str) -> Result<PathBuf, BoundsError> {
    let outside = || BoundsError::PathOutside {
        path: path.to_owned(),
    };
    if Path::new(path).is_absolute() {
        return Err(outside());
    }
    let resolved = root.join(resolve(root, Path::new(path)).map_err(|_| outside())?);
    if std::fs::symlink_metadata(&resolved).is_err() {
        return Err(BoundsError::PathMissing {
            path: path.to_owned(),
        });
    }
    Ok(resolved)
}

/// The content of the regular file `path` below `root` (resolved as [`source_path`] does), at
/// most [`MAX_MANIFEST_FILE_BYTES`].
///
/// # Errors
/// See [`source_path`]; not a regular file, too large, or unreadable.
pub fn read_file(root: &Path, path: &str) -> Result<Vec<u8>, BoundsError> {
    let file = source_path(root, path)?;
    let io = |error| BoundsError::Io {
        path: PathBuf::from(path),
        error,
    };
    let metadata = std::fs::metadata(&file).map_err(io)?;
    if !metadata.is_file() {
        return Err(BoundsError::NotAFile {
            path: PathBuf::from(path),
        });
    }
    if metadata.len() > MAX_MANIFEST_FILE_BYTES {
        return Err(BoundsError::FileTooLarge {
            path: PathBuf::from(path),
            size: metadata.len(),
        });
    }
    std::fs::read(&file).map_err(io)
}

/// Resolves `relative` below `root` as the kernel would, one component at a time, replacing
/// each link by its target (a missing component ends nothing: what follows is taken as
/// written, since a missing name cannot be a link). Returns the resolved path relative to
/// `root`, or why it cannot stay inside.
fn resolve(root: &Path, relative: &Path) -> Result<PathBuf, Escape> {
    // Absolute link targets count as inside only when they lead into the root itself.
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let mut resolved = PathBuf::new();
    let mut pending: Vec<Part> = parts(relative)?;
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        match part {
            Part::Parent => {
                if !resolved.pop() {
                    return Err(Escape::Outside);
                }
            }
            Part::Name(name) => {
                resolved.push(&name);
                let full = root.join(&resolved);
                let is_link = std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_symlink());
                if !is_link {
                    continue;
                }
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(Escape::Loop);
                }
                let target = std::fs::read_link(&full).map_err(|_| Escape::Outside)?;
                resolved.pop();
                let target = if target.is_absolute() {
                    resolved = PathBuf::new();
                    target
                        .strip_prefix(&canonical_root)
                        .map_err(|_| Escape::Outside)?
                        .to_owned()
                } else {
                    target
                };
                pending.extend(parts(&target)?);
            }
        }
    }
    Ok(resolved)
}

/// One step of a relative path.
enum Part {
    Parent,
    Name(OsString),
}

/// The steps of a relative path, last first (a stack); an absolute one leads outside.
fn parts(path: &Path) -> Result<Vec<Part>, Escape> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => parts.push(Part::Parent),
            Component::Normal(name) => parts.push(Part::Name(name.to_owned())),
            Component::RootDir | Component::Prefix(_) => return Err(Escape::Outside),
        }
    }
    parts.reverse();
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A repository root inside a directory that also holds `outside/secret.yaml`.
    fn layout() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        for sub in ["repo/app/deep", "repo/common", "outside/dir"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("outside/secret.yaml"), "s").unwrap();
        std::fs::write(root.join("common/base.yaml"), "b").unwrap();
        (dir, root)
    }

    fn link(root: &Path, at: &str, target: &str) {
        symlink(target, root.join(at)).unwrap();
    }

    /// Why a layout with `links` (path, target) is refused.
    fn refused(links: &[(&str, &str)]) -> String {
        let (_dir, root) = layout();
        for (at, target) in links {
            link(&root, at, target);
        }
        check_links(&root).unwrap_err().to_string()
    }

    #[test]
    fn links_inside_the_root_are_allowed() {
        let (_dir, root) = layout();
        link(&root, "app/base.yaml", "../common/base.yaml");
        link(&root, "app/deep/common", "../../common");
        link(&root, "app/deep/chain.yaml", "common/base.yaml");
        link(&root, "app/dangling.yaml", "../nowhere.yaml");
        link(&root, "app/self", ".");
        check_links(&root).unwrap();
        assert_eq!(
            source_path(&root, "app/deep/common").unwrap(),
            root.join("common")
        );
        assert_eq!(read_file(&root, "app/deep/chain.yaml").unwrap(), b"b");
    }

    #[test]
    fn links_leading_outside_are_refused_naming_link_and_target() {
        let cases = [
            ("app/secret.yaml", "../../outside/secret.yaml"),
            ("app/deep/dir", "../../../outside/dir"),
            ("app/absolute.yaml", "/etc/hostname"),
            ("app/missing.yaml", "../../outside/missing.yaml"),
        ];
        for (at, target) in cases {
            assert_eq!(
                refused(&[(at, target)]),
                format!("symbolic link {at} points outside the repository: {target}")
            );
        }
    }

    #[test]
    fn chains_are_followed_where_they_lead() {
        // The first link of a chain that ends outside is named.
        let chain = refused(&[
            ("app/a.yaml", "b.yaml"),
            ("app/b.yaml", "deep/up"),
            ("app/deep/up", "../../../outside/secret.yaml"),
        ]);
        assert_eq!(
            chain,
            "symbolic link app/a.yaml points outside the repository: b.yaml"
        );
        // `self/..` climbs from where `self` leads (the root), so it leaves the root, although
        // the text `self/../outside` reads as inside.
        let climbing = refused(&[
            ("self", "."),
            ("escape.yaml", "self/../outside/secret.yaml"),
        ]);
        assert_eq!(
            climbing,
            "symbolic link escape.yaml points outside the repository: self/../outside/secret.yaml"
        );
        let looping = refused(&[("loop-a", "loop-b"), ("loop-b", "loop-a")]);
        assert!(looping.contains("links in a row"), "{looping}");
    }

    #[test]
    fn a_source_path_stays_inside_and_exists() {
        let (_dir, root) = layout();
        for path in ["../outside", "/etc", "app/../../outside", "app/../.."] {
            assert_eq!(
                source_path(&root, path).unwrap_err().to_string(),
                format!("path {path:?} is outside the repository")
            );
        }
        assert_eq!(
            source_path(&root, "apps").unwrap_err().to_string(),
            "path \"apps\" does not exist"
        );
        assert_eq!(source_path(&root, "").unwrap(), root);
        assert_eq!(source_path(&root, ".").unwrap(), root);
        assert_eq!(source_path(&root, "app/").unwrap(), root.join("app"));
    }

    #[test]
    fn files_read_are_regular_and_bounded() {
        let (_dir, root) = layout();
        assert!(matches!(
            read_file(&root, "app"),
            Err(BoundsError::NotAFile { .. })
        ));
        let big = std::fs::File::create(root.join("big.yaml")).unwrap();
        big.set_len(MAX_MANIFEST_FILE_BYTES + 1).unwrap();
        assert!(matches!(
            read_file(&root, "big.yaml"),
            Err(BoundsError::FileTooLarge { .. })
        ));
    }
}

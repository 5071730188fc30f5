//! `flotilla docs [DIR]` (hidden): writes the book's reference pages from the code — every CRD
//! field with its Argo CD parity, every command and flag, every metric, every condition and Event
//! reason — so they cannot go stale. `tests/docs.rs` fails when the committed pages under
//! `docs/src/reference/` differ from what [`reference_pages`] makes now.

mod commands;
mod crd_fields;
mod markdown;
mod metrics;
mod reasons;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

/// Arguments of `flotilla docs`.
#[derive(Debug, clap::Args)]
pub struct DocsArgs {
    /// The book's reference directory, where the pages are written.
    #[arg(default_value = "docs/src/reference")]
    pub dir: PathBuf,
}

/// One generated page: its path under the reference directory and its Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub path: String,
    pub text: String,
}

/// The command that writes the pages again, named on each page and in the test's message.
pub const REGENERATE: &str = "cargo run -- docs docs/src/reference";

/// Every reference page, as the code makes it now.
#[must_use]
pub fn reference_pages() -> Vec<Page> {
    let mut pages = crd_fields::pages();
    pages.push(Page {
        path: "cli.md".to_owned(),
        text: commands::page(),
    });
    pages.push(Page {
        path: "metrics.md".to_owned(),
        text: metrics::page(),
    });
    pages.push(Page {
        path: "reasons.md".to_owned(),
        text: reasons::page(),
    });
    pages
}

/// Writes every page under `args.dir`.
///
/// # Errors
/// A directory or file that cannot be written.
pub fn run(args: &DocsArgs) -> anyhow::Result<ExitCode> {
    for page in reference_pages() {
        let path = args.dir.join(&page.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, &page.text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

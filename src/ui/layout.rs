//! The page shell: a [`Page`]'s title and content inside the document every page shares, with
//! the stylesheet and the live-update script embedded in the binary (no build step, no CDN).

use crate::html::escape;

const STYLE: &str = include_str!("assets/ui.css");
const SCRIPT: &str = include_str!("assets/ui.js");

/// One rendered page: its title (text) and the content of `<main>` (HTML), which is also what
/// a live update replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub title: String,
    pub main: String,
}

/// The whole document of `page` for `namespace`.
#[must_use]
pub fn document(namespace: &str, page: &Page) -> String {
    format!(
        concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width\">",
            "<title>{title} · Flotilla</title><style>{STYLE}</style></head>\n<body>",
            "<header><a href=\"/\">Flotilla</a><span>namespace {namespace}</span>",
            "<span id=\"live\" hidden>live</span></header>\n",
            "<main id=\"page\">{main}</main>\n<script>{SCRIPT}</script></body></html>\n"
        ),
        title = escape(&page.title),
        namespace = escape(namespace),
        main = page.main,
        STYLE = STYLE,
        SCRIPT = SCRIPT,
    )
}

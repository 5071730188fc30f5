//! The page shell: a [`Page`]'s title and content inside the document every page shares, with
//! the stylesheet and the script (live updates; the viewer's bearer token, kept in the tab's
//! `sessionStorage`, and the actions) embedded in the binary (no build step, no CDN), and the
//! page's CSRF token ([`super::csrf`]).

use flotilla_core::html::escape;

const STYLE: &str = include_str!("assets/ui.css");
const SCRIPT: &str = include_str!("assets/ui.js");

/// One rendered page: its title (text) and the content of `<main>` (HTML), which is also what
/// a live update replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub title: String,
    pub main: String,
}

/// The whole document of `page` for `namespace`, carrying `csrf_token` for its actions.
#[must_use]
pub fn document(namespace: &str, page: &Page, csrf_token: &str) -> String {
    format!(
        concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width\">",
            "<meta name=\"flotilla-csrf\" content=\"{csrf}\">",
            "<title>{title} · Flotilla</title><style>{STYLE}</style></head>\n<body>",
            "<header><a href=\"/\">Flotilla</a><span>namespace {namespace}</span>",
            "<span id=\"live\" hidden>live</span>",
            "<form id=\"viewer\"><input id=\"token\" type=\"password\" autocomplete=\"off\" ",
            "placeholder=\"Kubernetes bearer token, to act\" aria-label=\"Kubernetes bearer token\">",
            "<button id=\"token-use\" type=\"submit\">Act with this token</button>",
            "<button id=\"token-forget\" type=\"button\" hidden>Forget the token</button></form>",
            "</header>\n<p id=\"action-result\" role=\"status\" hidden></p>\n",
            "<main id=\"page\">{main}</main>\n<script>{SCRIPT}</script></body></html>\n"
        ),
        title = escape(&page.title),
        namespace = escape(namespace),
        csrf = escape(csrf_token),
        main = page.main,
        STYLE = STYLE,
        SCRIPT = SCRIPT,
    )
}

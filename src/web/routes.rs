//! Which page an address asks for: `/` (the Fleet) and `/applicationsets/NAME`, their
//! Applications filtered by the query ([`super::application_query`]), and
//! `/applications/NAME`. Pure: the page is rendered from the
//! snapshot it is given; `None` means 404.

use super::application_query::ApplicationQuery;
use super::layout::Page;
use super::snapshot::Snapshot;
use super::{application, application_set, fleet};

/// The page at `path` with `query` (without the `?`), rendered from `snapshot`.
#[must_use]
pub fn page(path: &str, query: Option<&str>, snapshot: &Snapshot) -> Option<Page> {
    let filters = || ApplicationQuery::parse(query);
    if path == "/" {
        return Some(fleet::render(snapshot, &filters()));
    }
    if let Some(name) = path.strip_prefix("/applicationsets/") {
        return application_set::render(snapshot, &percent_decode(name), &filters());
    }
    let name = path.strip_prefix("/applications/")?;
    application::render(snapshot, &percent_decode(name))
}

/// What an address that names nothing (or something since deleted) shows.
#[must_use]
pub fn not_found() -> Page {
    Page {
        title: "Not found".to_owned(),
        main: r#"<h1>Not found</h1><p>Nothing here (any more). <a href="/">Fleet</a></p>"#
            .to_owned(),
    }
}

/// The value of `key` in a form-encoded `query`.
pub(super) fn parameter(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == key).then(|| percent_decode(v))
    })
}

/// `text` with `+` as a space and `%XX` escapes decoded (invalid escapes kept as written,
/// invalid UTF-8 replaced).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_form_encoded_parameters() {
        assert_eq!(
            parameter("x=1&label=team%3Dpay+ments%2Ctier", "label").as_deref(),
            Some("team=pay ments,tier")
        );
        assert_eq!(parameter("label", "label").as_deref(), Some(""));
        assert_eq!(parameter("x=1", "label"), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}

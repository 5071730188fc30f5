//! Writing HTML safely: [`escape`] for every string that comes from a user or the cluster, and
//! the small pieces every page is built from (tables, status badges, links).

use std::fmt::Write as _;

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by entities: safe as element content and as
/// a quoted attribute value.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A table with `headers` (plain text) and rows of cells that are already HTML; `None.` when
/// there are no rows.
#[must_use]
pub fn table(headers: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut rows = rows.into_iter().peekable();
    if rows.peek().is_none() {
        return r#"<p class="none">None.</p>"#.to_owned();
    }
    let mut out = String::from("<table><thead><tr>");
    for header in headers {
        let _ = write!(out, "<th>{}</th>", escape(header));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// A status word as a badge whose colour follows the word (`Healthy`, `OutOfSync`, …).
#[must_use]
pub fn badge(status: &str) -> String {
    let class: String = status.chars().filter(char::is_ascii_alphanumeric).collect();
    format!(r#"<span class="badge s-{class}">{}</span>"#, escape(status))
}

/// A link to `href` (a path the view builds from Kubernetes names) showing `text`.
#[must_use]
pub fn link(href: &str, text: &str) -> String {
    format!(r#"<a href="{}">{}</a>"#, escape(href), escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_in_text_attributes_and_badges() {
        assert_eq!(
            escape(r#"<script>alert('x')</script> & "q""#),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(
            link("/applications/<b>", "<b>"),
            r#"<a href="/applications/&lt;b&gt;">&lt;b&gt;</a>"#
        );
        assert_eq!(
            badge("Out<Of>Sync"),
            r#"<span class="badge s-OutOfSync">Out&lt;Of&gt;Sync</span>"#
        );
    }
}

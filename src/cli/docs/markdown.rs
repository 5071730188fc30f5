//! Markdown for the generated pages: tables whose cells cannot break the table.

/// The note under each generated page's title.
#[must_use]
pub fn generated_note() -> String {
    format!(
        "<!-- Generated from the code by `{}`; do not edit. -->\n\n",
        super::REGENERATE
    )
}

/// A table with `headers`, one row per entry of `rows`, each cell made one [`cell`].
#[must_use]
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", headers.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(headers.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// `text` as one table cell: whitespace (line breaks included) collapsed, pipes escaped.
#[must_use]
pub fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// `text` as inline code, or nothing for empty text.
#[must_use]
pub fn code(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("`{text}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_stay_in_their_row_and_column() {
        assert_eq!(cell("a |\n  b"), "a \\| b");
        assert_eq!(
            table(&["x", "y"], &[vec!["1".into(), "2|3".into()]]),
            "| x | y |\n| --- | --- |\n| 1 | 2\\|3 |\n"
        );
    }
}

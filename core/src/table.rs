//! Plain-text tables for terminal output: a header and rows, columns padded to their widest cell.

/// A table being built row by row.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column headers.
    #[must_use]
    pub fn new(headers: &[&str]) -> Self {
        Self {
            rows: vec![headers.iter().map(ToString::to_string).collect()],
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Puts a column with `header` and `cells` (one per row, in order) before the others.
    pub fn prepend_column(&mut self, header: &str, cells: impl IntoIterator<Item = String>) {
        let column = std::iter::once(header.to_owned()).chain(cells);
        for (row, cell) in self.rows.iter_mut().zip(column) {
            row.insert(0, cell);
        }
    }

    /// The table as text: columns separated by two spaces, no trailing spaces.
    #[must_use]
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (cell, width) in row.iter().zip(&widths) {
                line.push_str(&format!("{cell:<width$}  "));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prepended_column_comes_first_on_every_row() {
        let mut table = Table::new(&["NAME"]);
        table.row(vec!["web".into()]);
        table.prepend_column("NAMESPACE", ["shop".to_owned()]);
        assert_eq!(table.render(), "NAMESPACE  NAME\nshop       web\n");
    }

    #[test]
    fn pads_columns_to_the_widest_cell() {
        let mut table = Table::new(&["NAME", "PATH"]);
        table.row(vec!["platform-database".into(), "database".into()]);
        table.row(vec!["x".into(), String::new()]);
        assert_eq!(
            table.render(),
            "NAME               PATH\nplatform-database  database\nx\n"
        );
    }
}

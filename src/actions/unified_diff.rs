//! A unified diff of two texts, line by line (longest common subsequence), with three lines of
//! context around each change, as `diff -u` and `kubectl diff` print it. Pure.

use std::fmt::Write as _;

/// Lines of context around a change.
const CONTEXT: usize = 3;

/// One line of the edit script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line<'t> {
    Same(&'t str),
    Removed(&'t str),
    Added(&'t str),
}

/// The unified diff of `old` (named `old_name`) and `new`; empty when they are equal.
#[must_use]
pub fn unified(old_name: &str, new_name: &str, old: &str, new: &str) -> String {
    let script = edit_script(
        &old.lines().collect::<Vec<_>>(),
        &new.lines().collect::<Vec<_>>(),
    );
    if script.iter().all(|line| matches!(line, Line::Same(_))) {
        return String::new();
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let changed: Vec<usize> = (0..script.len())
        .filter(|&i| !matches!(script[i], Line::Same(_)))
        .collect();
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &index in &changed {
        let start = index.saturating_sub(CONTEXT);
        let end = (index + CONTEXT + 1).min(script.len());
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => hunks.push((start, end)),
        }
    }
    for (start, end) in hunks {
        let old_before = script[..start]
            .iter()
            .filter(|l| !matches!(l, Line::Added(_)))
            .count();
        let new_before = script[..start]
            .iter()
            .filter(|l| !matches!(l, Line::Removed(_)))
            .count();
        let hunk = &script[start..end];
        let old_len = hunk.iter().filter(|l| !matches!(l, Line::Added(_))).count();
        let new_len = hunk
            .iter()
            .filter(|l| !matches!(l, Line::Removed(_)))
            .count();
        let _ = writeln!(
            out,
            "@@ -{},{old_len} +{},{new_len} @@",
            old_before + usize::from(old_len > 0),
            new_before + usize::from(new_len > 0)
        );
        for line in hunk {
            let _ = match line {
                Line::Same(text) => writeln!(out, " {text}"),
                Line::Removed(text) => writeln!(out, "-{text}"),
                Line::Added(text) => writeln!(out, "+{text}"),
            };
        }
    }
    out
}

/// The shortest edit from `old` to `new` by a longest common subsequence.
fn edit_script<'t>(old: &[&'t str], new: &[&'t str]) -> Vec<Line<'t>> {
    let (n, m) = (old.len(), new.len());
    let mut common = vec![vec![0_usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] = if old[i] == new[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut script = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            script.push(Line::Same(old[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || common[i + 1][j] >= common[i][j + 1]) {
            script.push(Line::Removed(old[i]));
            i += 1;
        } else {
            script.push(Line::Added(new[j]));
            j += 1;
        }
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
        let cases = [
            ("equal", old, old, ""),
            (
                "a change and an addition",
                old,
                new,
                "--- live\n+++ desired\n@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n j\n+k\n",
            ),
            (
                "from nothing",
                "",
                "x\ny\n",
                "--- live\n+++ desired\n@@ -0,0 +1,2 @@\n+x\n+y\n",
            ),
        ];
        for (case, old, new, expected) in cases {
            assert_eq!(unified("live", "desired", old, new), expected, "{case}");
        }
    }
}

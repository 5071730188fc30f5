//! `branch_slug`: a branch name made fit for a DNS label, as Argo CD makes it with gosimple/slug
//! (`_` becomes `-`, at most 50 characters, cut at a dash when there is one).

/// The longest slug, leaving room in a 63-character label for a prefix or suffix.
pub const MAX_SLUG: usize = 50;

/// `text` in lower case, every run of characters other than ASCII letters, digits and `-`
/// replaced by one `-`, without leading or trailing dashes, and cut to [`MAX_SLUG`] characters
/// at the last dash before the limit (or at the limit when there is none). `&` reads `and` and
/// `@` reads `at`, as in gosimple/slug's English substitutions; other non-ASCII characters
/// become dashes (gosimple transliterates them).
#[must_use]
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        let piece = match c {
            '&' => "and".to_string(),
            '@' => "at".to_string(),
            c if c.is_ascii_alphanumeric() => c.to_ascii_lowercase().to_string(),
            _ => "-".to_string(),
        };
        if piece == "-" && out.ends_with('-') {
            continue;
        }
        out.push_str(&piece);
    }
    let out = out.trim_matches('-');
    if out.len() <= MAX_SLUG {
        return out.to_string();
    }
    match out[..=MAX_SLUG].rfind('-') {
        Some(dash) => out[..dash].to_string(),
        None => out[..MAX_SLUG].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_as_argo_cd() {
        let cases = [
            ("branch1", "branch1"),
            ("feat/new_UI", "feat-new-ui"),
            ("--fix--it__", "fix-it"),
            ("a&b@c", "aandbatc"),
            ("héllo wörld", "h-llo-w-rld"),
            // Argo CD's own test of a long branch.
            (
                "feat/areally+long_pull_request_name_to_test_argo_slugification_and_branch_name_shortening_feature",
                "feat-areally-long-pull-request-name-to-test-argo",
            ),
        ];
        for (branch, expected) in cases {
            assert_eq!(slug(branch), expected, "{branch}");
        }
        assert_eq!(slug(&"x".repeat(60)), "x".repeat(50));
    }
}

//! Checks on generated Applications before anything is created: names must be valid DNS-1123
//! subdomains and unique, and a destination names exactly one cluster.

/// Why a generated Application name is not valid, or `None` when it is.
#[must_use]
pub fn invalid_name_reason(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".to_string());
    }
    if name.len() > 253 {
        return Some(format!(
            "the name is {} characters long (at most 253)",
            name.len()
        ));
    }
    let valid_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    if let Some(bad) = name.chars().find(|c| !valid_char(*c)) {
        return Some(format!(
            "{bad:?} is not allowed: a name (DNS-1123 subdomain) has lower-case letters, digits, '-' and '.'"
        ));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !alnum(name.chars().next()) || !alnum(name.chars().last()) {
        return Some(
            "a name (DNS-1123 subdomain) starts and ends with a letter or digit".to_string(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_1123_subdomains() {
        for ok in ["a", "platform-database", "web.eu-1", "0abc"] {
            assert_eq!(invalid_name_reason(ok), None, "{ok}");
        }
        for bad in [
            "",
            "Platform",
            "a_b",
            "-a",
            "a-",
            "a.",
            &"a".repeat(254),
            "{{name}}",
        ] {
            assert!(invalid_name_reason(bad).is_some(), "{bad}");
        }
    }
}

//! Labels as the Kubernetes API server validates them: a key is a name of at most 63
//! characters (letters, digits, `-`, `_`, `.`, a letter or digit at both ends) with an optional
//! DNS-1123 subdomain prefix and `/`; a value is empty or such a name.

use super::name::NameRule;

/// The longest label name or value.
const LABEL_VALUE_MAX: usize = 63;

/// Checks one label.
///
/// # Errors
/// What is wrong with its key or value, naming the key.
pub fn check_label(key: &str, value: &str) -> Result<(), String> {
    let (prefix, name) = key
        .rsplit_once('/')
        .map_or((None, key), |(p, n)| (Some(p), n));
    if let Some(prefix) = prefix {
        NameRule::Subdomain
            .check(prefix)
            .map_err(|reason| format!("label key {key:?}: its prefix: {reason}"))?;
    }
    if name.is_empty() {
        return Err(format!("label key {key:?}: the name is empty"));
    }
    label_name(name).map_err(|reason| format!("label key {key:?}: {reason}"))?;
    if value.is_empty() {
        return Ok(());
    }
    label_name(value).map_err(|reason| format!("label {key:?}: value {value:?}: {reason}"))
}

/// A label name or non-empty value.
fn label_name(text: &str) -> Result<(), String> {
    let length = text.chars().count();
    if length > LABEL_VALUE_MAX {
        return Err(format!("{length} characters, more than {LABEL_VALUE_MAX}"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if let Some(c) = text.chars().find(|&c| !allowed(c)) {
        return Err(format!(
            "{c:?} is not allowed (letters, digits, '-', '_' and '.')"
        ));
    }
    let ends = [text.chars().next(), text.chars().last()];
    if ends.iter().flatten().any(|c| !c.is_ascii_alphanumeric()) {
        return Err("must start and end with a letter or digit".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_as_the_api_server_checks_them() {
        let long = "a".repeat(64);
        for (key, value, expected) in [
            ("app", "web", Ok(())),
            ("app.kubernetes.io/name", "", Ok(())),
            ("team", &"a".repeat(63)[..], Ok(())),
            (
                "team",
                &long[..],
                Err(format!("label \"team\": value {long:?}: 64 characters, more than 63")),
            ),
            (
                "team",
                "a b",
                Err(
                    "label \"team\": value \"a b\": ' ' is not allowed (letters, digits, '-', '_' and '.')"
                        .to_owned(),
                ),
            ),
            (
                "team",
                "-a",
                Err("label \"team\": value \"-a\": must start and end with a letter or digit".to_owned()),
            ),
            (
                "Bad_Prefix/x",
                "v",
                Err("label key \"Bad_Prefix/x\": its prefix: ".to_owned()),
            ),
            ("x/", "v", Err("label key \"x/\": the name is empty".to_owned())),
        ] {
            let found = check_label(key, value);
            match (&found, &expected) {
                (Err(found), Err(expected)) => assert!(found.starts_with(expected), "{found}"),
                _ => assert_eq!(found, expected, "{key}={value}"),
            }
        }
    }
}

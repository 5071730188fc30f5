//! Object names as the Kubernetes API server validates them, per kind: a DNS-1123 subdomain for
//! most kinds, a DNS-1123 label for a Namespace, a DNS-1035 label for a Service, a path segment
//! for RBAC kinds. Checked when manifests are loaded, so `flotilla plan` reports every invalid
//! name before anything is written; and a name derived from free text (a directory's name).

use std::fmt;

/// The longest DNS-1123 subdomain.
const SUBDOMAIN_MAX: usize = 253;
/// The longest DNS-1123 or DNS-1035 label.
const LABEL_MAX: usize = 63;

/// Which names a kind accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Lower-case letters, digits, `-` and `.`, at most 253, a letter or digit at both ends of
    /// each dot-separated part (`web.eu-1`).
    Subdomain,
    /// Lower-case letters, digits and `-`, at most 63, a letter or digit at both ends (`my-ns`).
    Label,
    /// A [`NameRule::Label`] that starts with a letter (`web-1`).
    Dns1035Label,
    /// Anything but `.` and `..`, without `/` or `%` (`system:controller:web`).
    PathSegment,
}

impl NameRule {
    /// The rule the API server applies to names of `kind` in API group `group`.
    #[must_use]
    pub fn of(group: &str, kind: &str) -> Self {
        match (group, kind) {
            ("", "Namespace") => Self::Label,
            ("", "Service") => Self::Dns1035Label,
            (
                "rbac.authorization.k8s.io",
                "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
            )
            | ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration")
            | ("certificates.k8s.io", "CertificateSigningRequest") => Self::PathSegment,
            _ => Self::Subdomain,
        }
    }

    /// Checks a `metadata.name`.
    ///
    /// # Errors
    /// What is wrong with it, e.g. `'_' is not allowed`.
    pub fn check(self, name: &str) -> Result<(), String> {
        match self {
            Self::Subdomain => subdomain(name),
            Self::Label => label(name, false),
            Self::Dns1035Label => label(name, true),
            Self::PathSegment => path_segment(name),
        }
    }

    /// Checks a `metadata.generateName` prefix, which may end with `-` (the server appends
    /// letters and digits to it), as the API server does.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn check_prefix(self, prefix: &str) -> Result<(), String> {
        match prefix.strip_suffix('-') {
            Some(stem) if !stem.is_empty() => self.check(&format!("{stem}a")),
            _ => self.check(prefix),
        }
    }
}

impl fmt::Display for NameRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Subdomain => {
                "a DNS-1123 subdomain: at most 253 characters, lower-case letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit (e.g. web.eu-1)"
            }
            Self::Label => {
                "a DNS-1123 label: at most 63 characters, lower-case letters, digits and '-', starting and ending with a letter or digit (e.g. my-name)"
            }
            Self::Dns1035Label => {
                "a DNS-1035 label: at most 63 characters, lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. web-1)"
            }
            Self::PathSegment => "a path segment: not '.' or '..', without '/' or '%'",
        })
    }
}

/// A valid name (a DNS-1123 label) made of `text`: lower case, every run of other characters
/// than letters and digits turned into one `-`, `-` trimmed from both ends, at most 63
/// characters. `None` when nothing is left.
#[must_use]
pub fn derive_name(text: &str) -> Option<String> {
    let mut name = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    name.truncate(LABEL_MAX);
    let name = name.trim_end_matches('-');
    (!name.is_empty()).then(|| name.to_owned())
}

fn too_long(name: &str, max: usize) -> Result<(), String> {
    match name.chars().count() {
        n if n > max => Err(format!("it is {n} characters long")),
        _ => Ok(()),
    }
}

fn only(name: &str, allowed: impl Fn(char) -> bool) -> Result<(), String> {
    match name.chars().find(|c| !allowed(*c)) {
        Some(c) if c.is_uppercase() => Err(format!("upper-case {c:?} is not allowed")),
        Some(c) => Err(format!("{c:?} is not allowed")),
        None => Ok(()),
    }
}

fn is_letter_or_digit(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn ends(part: &str, first: impl Fn(char) -> bool, what_first: &str) -> Result<(), String> {
    match (part.chars().next(), part.chars().last()) {
        (None, _) => Err("it is empty".to_owned()),
        (Some(c), _) if !first(c) => Err(format!("{part:?} starts with {c:?}, not {what_first}")),
        (_, Some(c)) if !is_letter_or_digit(c) => {
            Err(format!("{part:?} ends with {c:?}, not a letter or digit"))
        }
        _ => Ok(()),
    }
}

fn subdomain(name: &str) -> Result<(), String> {
    too_long(name, SUBDOMAIN_MAX)?;
    only(name, |c| is_letter_or_digit(c) || c == '-' || c == '.')?;
    if name.is_empty() {
        return Err("it is empty".to_owned());
    }
    name.split('.').try_for_each(|part| match part {
        "" => Err("it has an empty part between dots".to_owned()),
        part => ends(part, is_letter_or_digit, "a letter or digit"),
    })
}

fn label(name: &str, letter_first: bool) -> Result<(), String> {
    too_long(name, LABEL_MAX)?;
    only(name, |c| is_letter_or_digit(c) || c == '-')?;
    if letter_first {
        ends(name, |c| c.is_ascii_lowercase(), "a letter")
    } else {
        ends(name, is_letter_or_digit, "a letter or digit")
    }
}

fn path_segment(name: &str) -> Result<(), String> {
    match name {
        "." | ".." => Err(format!("{name:?} is not allowed")),
        _ => only(name, |c| c != '/' && c != '%'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_api_server() {
        let cases = [
            ("", "ConfigMap", NameRule::Subdomain),
            ("apps", "Deployment", NameRule::Subdomain),
            ("", "Namespace", NameRule::Label),
            ("", "Service", NameRule::Dns1035Label),
            ("serving.knative.dev", "Service", NameRule::Subdomain),
            (
                "rbac.authorization.k8s.io",
                "ClusterRole",
                NameRule::PathSegment,
            ),
            (
                "rbac.authorization.k8s.io",
                "RoleBinding",
                NameRule::PathSegment,
            ),
            ("flotilla.dev", "Application", NameRule::Subdomain),
        ];
        for (group, kind, rule) in cases {
            assert_eq!(NameRule::of(group, kind), rule, "{group}/{kind}");
        }
    }

    /// The cases of `IsDNS1123Subdomain`, `IsDNS1123Label` and `IsDNS1035Label` in Kubernetes'
    /// `apimachinery/pkg/util/validation` tests, and the messages people see.
    #[test]
    fn names_pass_or_say_what_is_wrong() {
        use NameRule::{Dns1035Label, Label, PathSegment, Subdomain};
        let long_label = "a".repeat(63);
        let too_long_label = "a".repeat(64);
        let long_subdomain = format!("{0}.{0}.{0}.{1}", "a".repeat(63), "a".repeat(61));
        let too_long_subdomain = format!("{long_subdomain}a");
        let ok: &[(NameRule, &str)] = &[
            (Subdomain, "a"),
            (Subdomain, "ab"),
            (Subdomain, "a-b"),
            (Subdomain, "0"),
            (Subdomain, "1-2"),
            (Subdomain, "a.b"),
            (Subdomain, "11.22.33"),
            (Subdomain, "a--b.c--d"),
            (Subdomain, &long_subdomain),
            (Label, "a"),
            (Label, "0-abc"),
            (Label, "a--1--2--b"),
            (Label, &long_label),
            (Dns1035Label, "a"),
            (Dns1035Label, "abc-123"),
            (Dns1035Label, &long_label),
            (PathSegment, "system:controller:web"),
            (PathSegment, "Admin_Role"),
        ];
        for (rule, name) in ok {
            assert_eq!(rule.check(name), Ok(()), "{rule:?} {name:?}");
        }
        let bad: &[(NameRule, &str, &str)] = &[
            (Subdomain, "My_Dir", "upper-case 'M' is not allowed"),
            (Subdomain, "my_dir", "'_' is not allowed"),
            (Subdomain, "a b", "' ' is not allowed"),
            (
                Subdomain,
                "-a",
                "\"-a\" starts with '-', not a letter or digit",
            ),
            (
                Subdomain,
                "a-",
                "\"a-\" ends with '-', not a letter or digit",
            ),
            (Subdomain, "a.", "it has an empty part between dots"),
            (Subdomain, "a..b", "it has an empty part between dots"),
            (Subdomain, "", "it is empty"),
            (
                Subdomain,
                "a.-b",
                "\"-b\" starts with '-', not a letter or digit",
            ),
            (Subdomain, &too_long_subdomain, "it is 254 characters long"),
            (Label, "a.b", "'.' is not allowed"),
            (Label, &too_long_label, "it is 64 characters long"),
            (Label, "-a", "\"-a\" starts with '-', not a letter or digit"),
            (
                Dns1035Label,
                "1-web",
                "\"1-web\" starts with '1', not a letter",
            ),
            (Dns1035Label, "web.api", "'.' is not allowed"),
            (PathSegment, "..", "\"..\" is not allowed"),
            (PathSegment, "a/b", "'/' is not allowed"),
            (PathSegment, "50%", "'%' is not allowed"),
        ];
        for (rule, name, problem) in bad {
            assert_eq!(
                rule.check(name),
                Err((*problem).to_owned()),
                "{rule:?} {name:?}"
            );
        }
    }

    #[test]
    fn generate_name_prefixes_may_end_with_a_dash() {
        assert_eq!(NameRule::Subdomain.check_prefix("db-migrate-"), Ok(()));
        assert_eq!(NameRule::Dns1035Label.check_prefix("web-"), Ok(()));
        assert_eq!(
            NameRule::Subdomain.check_prefix("Db-"),
            Err("upper-case 'D' is not allowed".to_owned())
        );
        assert_eq!(
            NameRule::Subdomain.check_prefix("-"),
            Err("\"-\" starts with '-', not a letter or digit".to_owned())
        );
    }

    #[test]
    fn names_derived_from_free_text_are_labels() {
        let long = format!("{}_tail", "x".repeat(62));
        let capped = "x".repeat(62);
        let cases = [
            ("My_Dir", Some("my-dir")),
            ("shop", Some("shop")),
            ("--Web  API--", Some("web-api")),
            ("v1.2_rc", Some("v1-2-rc")),
            ("Ünïcode", Some("n-code")),
            ("___", None),
            ("", None),
            (long.as_str(), Some(capped.as_str())),
        ];
        for (text, expected) in cases {
            let derived = derive_name(text);
            assert_eq!(derived.as_deref(), expected, "{text:?}");
            if let Some(name) = derived {
                assert_eq!(NameRule::Label.check(&name), Ok(()), "{name}");
            }
        }
    }
}

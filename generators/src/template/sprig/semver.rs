//! sprig's `semver` and `semverCompare` with Masterminds/semver v3's rules: versions with an
//! optional `v` and missing minor or patch (`v1.2` is 1.2.0); constraints with `=`, `!=`, `>`,
//! `>=`, `<`, `<=`, `~`, `^`, wildcards (`1.2.x`, `*`), hyphen ranges (`1.2 - 1.4.5`), AND by
//! spaces or commas and OR by `||`; a prerelease version satisfies only constraints that name a
//! prerelease.

use std::cmp::Ordering;

use minijinja::value::Value;
use minijinja::{Environment, Error};

use super::dicts::Dict;
use super::{fail, string_arg};

/// A parsed version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    numbers: [u64; 3],
    prerelease: String,
    metadata: String,
}

impl Version {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let (rest, metadata) = text.split_once('+').unwrap_or((text, ""));
        let (core, prerelease) = rest.split_once('-').unwrap_or((rest, ""));
        let identifiers_ok = |part: &str| {
            part.is_empty()
                || part.split('.').all(|id| {
                    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
        };
        if !identifiers_ok(prerelease) || !identifiers_ok(metadata) {
            return None;
        }
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return None;
        }
        let mut numbers = [0; 3];
        for (slot, part) in numbers.iter_mut().zip(&parts) {
            if part.is_empty() || !part.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            *slot = part.parse().ok()?;
        }
        Some(Self {
            numbers,
            prerelease: prerelease.to_string(),
            metadata: metadata.to_string(),
        })
    }

    fn compare(&self, other: &Self) -> Ordering {
        self.numbers
            .cmp(&other.numbers)
            .then_with(|| compare_prerelease(&self.prerelease, &other.prerelease))
    }
}

/// Semver precedence of prereleases: none is higher than any; identifiers compared one by one,
/// numbers numerically and below words.
fn compare_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (mut left, mut right) = (a.split('.'), b.split('.'));
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    _ => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// One comparison of a constraint, wildcards already turned into ranges (`!= 1.2.x` is the
/// operator `outside` with the range's end as `upper`).
struct Term {
    operator: &'static str,
    version: Version,
    upper: Option<Version>,
}

impl Term {
    fn new(operator: &'static str, version: Version) -> Self {
        Self {
            operator,
            version,
            upper: None,
        }
    }

    fn allows(&self, version: &Version) -> bool {
        let order = version.compare(&self.version);
        match self.operator {
            "=" => order == Ordering::Equal,
            "!=" => order != Ordering::Equal,
            "outside" => {
                order == Ordering::Less
                    || self
                        .upper
                        .as_ref()
                        .is_some_and(|upper| version.compare(upper) != Ordering::Less)
            }
            ">" => order == Ordering::Greater,
            ">=" => order != Ordering::Less,
            "<" => order == Ordering::Less,
            _ => order != Ordering::Greater,
        }
    }
}

/// A version in a constraint: its numbers, how many were written (not wildcards), its
/// prerelease.
fn partial(text: &str) -> Option<(Version, usize)> {
    let text = text.trim().strip_prefix('v').unwrap_or(text.trim());
    let (core, suffix) = match text.find(['-', '+']) {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let mut written = 0;
    let mut numbers = Vec::new();
    let mut wildcard = false;
    for part in core.split('.') {
        if matches!(part, "x" | "X" | "*") {
            wildcard = true;
        } else if wildcard {
            return None;
        } else {
            numbers.push(part);
            written += 1;
        }
    }
    let padded: Vec<&str> = numbers
        .iter()
        .copied()
        .chain(std::iter::repeat("0"))
        .take(3)
        .collect();
    let version = Version::parse(&format!("{}{suffix}", padded.join(".")))?;
    Some((version, written))
}

/// The version right above the first `place` numbers of `version` (`1.2.x` → 1.3.0).
fn bump(version: &Version, place: usize) -> Version {
    let mut numbers = [0; 3];
    numbers[..place].copy_from_slice(&version.numbers[..place]);
    numbers[place - 1] += 1;
    Version {
        numbers,
        prerelease: String::new(),
        metadata: String::new(),
    }
}

fn range(low: Version, high: Version) -> Vec<Term> {
    vec![Term::new(">=", low), Term::new("<", high)]
}

/// The terms one comparison (`>=1.2`, `~1.2.3`, `1.x`) stands for.
fn terms(comparison: &str) -> Option<Vec<Term>> {
    const OPERATORS: &[(&str, &str)] = &[
        ("!=", "!="),
        (">=", ">="),
        ("=>", ">="),
        ("<=", "<="),
        ("=<", "<="),
        ("~>", "~"),
        (">", ">"),
        ("<", "<"),
        ("=", "="),
        ("~", "~"),
        ("^", "^"),
    ];
    let (operator, rest) = OPERATORS
        .iter()
        .find_map(|(written, meant)| comparison.strip_prefix(written).map(|rest| (*meant, rest)))
        .unwrap_or(("=", comparison));
    let (version, written) = partial(rest)?;
    if written == 0 {
        return Some(match operator {
            "!=" | "<" | ">" => vec![Term::new("<", Version::parse("0.0.0")?)],
            _ => vec![Term::new(">=", Version::parse("0.0.0-0")?)],
        });
    }
    Some(match operator {
        "~" => range(version.clone(), bump(&version, written.clamp(1, 2))),
        "^" => {
            let place = version
                .numbers
                .iter()
                .position(|&n| n != 0)
                .map_or(written, |p| p + 1);
            range(version.clone(), bump(&version, place.min(written)))
        }
        "=" if written < 3 => range(version.clone(), bump(&version, written)),
        "!=" if written < 3 => vec![Term {
            operator: "outside",
            upper: Some(bump(&version, written)),
            version,
        }],
        ">" if written < 3 => vec![Term::new(">=", bump(&version, written))],
        "<=" if written < 3 => vec![Term::new("<", bump(&version, written))],
        _ => vec![Term::new(operator, version)],
    })
}

/// Parses a whole constraint: OR groups of AND terms.
fn constraint(text: &str) -> Option<Vec<Vec<Term>>> {
    text.split("||")
        .map(|group| {
            let words: Vec<&str> = group.split([' ', ',']).filter(|w| !w.is_empty()).collect();
            let mut all = Vec::new();
            let mut i = 0;
            while i < words.len() {
                let mut word = words[i].to_string();
                if let ["=" | "!=" | ">" | ">=" | "=>" | "<" | "<=" | "=<" | "~" | "~>" | "^"] =
                    [words[i]]
                {
                    word.push_str(words.get(i + 1)?);
                    i += 1;
                }
                if words.get(i + 1) == Some(&"-") {
                    let (low, _) = partial(&word)?;
                    let (high, written) = partial(words.get(i + 2)?)?;
                    all.push(Term::new(">=", low));
                    all.extend(if written < 3 {
                        vec![Term::new("<", bump(&high, written.max(1)))]
                    } else {
                        vec![Term::new("<=", high)]
                    });
                    i += 3;
                    continue;
                }
                all.extend(terms(&word)?);
                i += 1;
            }
            (!all.is_empty()).then_some(all)
        })
        .collect()
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("semver", |text: Value| {
        let text = string_arg("semver", &text)?;
        let version = Version::parse(&text)
            .ok_or_else(|| fail("semver", format!("invalid semantic version {text:?}")))?;
        let [major, minor, patch] = version.numbers;
        Ok::<_, Error>(Dict::value([
            ("Major".to_string(), Value::from(major)),
            ("Minor".to_string(), Value::from(minor)),
            ("Patch".to_string(), Value::from(patch)),
            ("Prerelease".to_string(), Value::from(version.prerelease)),
            ("Metadata".to_string(), Value::from(version.metadata)),
            ("Original".to_string(), Value::from(text.as_ref())),
        ]))
    });
    env.add_function("semverCompare", |wanted: Value, text: Value| {
        let wanted = string_arg("semverCompare", &wanted)?;
        let text = string_arg("semverCompare", &text)?;
        let groups = constraint(&wanted)
            .ok_or_else(|| fail("semverCompare", format!("improper constraint: {wanted}")))?;
        let version = Version::parse(&text).ok_or_else(|| {
            fail(
                "semverCompare",
                format!("invalid semantic version {text:?}"),
            )
        })?;
        // A prerelease satisfies a group only when one of its terms names a prerelease.
        let allowed = |group: &Vec<Term>| {
            (version.prerelease.is_empty()
                || group.iter().any(|term| !term.version.prerelease.is_empty()))
                && group.iter().all(|term| term.allows(&version))
        };
        Ok::<_, Error>(Value::from(groups.iter().any(allowed)))
    });
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn semver_matches_masterminds() {
        let cases: &[(&str, &str, bool)] = &[
            ("1.2.3", "1.2.3", true),
            ("=1.2.3", "1.2.4", false),
            (">=1.2.3", "1.3.0", true),
            ("> 1.2", "1.2.9", false),
            ("> 1.2", "1.3.0", true),
            ("<1.2.3", "1.2.2", true),
            ("<= 1.2", "1.2.9", true),
            ("!=1.2.3", "1.2.4", true),
            ("!=1.2.x", "1.2.4", false),
            ("!=1.2.x", "1.3.0", true),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            ("~1", "1.9.0", true),
            ("^1.2.3", "1.9.9", true),
            ("^1.2.3", "2.0.0", false),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.4", false),
            ("1.2.x", "1.2.7", true),
            ("1.2.x", "1.3.0", false),
            ("*", "4.5.6", true),
            (">= 1.2, < 3.0.0", "2.9.9", true),
            (">= 1.2 < 3.0.0", "3.0.0", false),
            ("<1.0 || >=2.0", "2.1.0", true),
            ("<1.0 || >=2.0", "1.5.0", false),
            ("1.2 - 1.4.5", "1.4.5", true),
            ("1.2 - 1.4", "1.4.9", true),
            ("1.2 - 1.4.5", "1.4.6", false),
            (">=1.2.3", "1.3.0-beta", false),
            (">=1.2.3-alpha", "1.2.3-beta", true),
            ("v1.2", "v1.2.0", true),
            (">=1.21.0-0", "v1.23.1-gke.1355000", true),
        ];
        for (constraint, version, expected) in cases {
            let text = format!("{{{{ semverCompare \"{constraint}\" \"{version}\" }}}}");
            check(&[(&text, if *expected { "true" } else { "false" })]);
        }
        check(&[(
            "{{ (semver \"1.2.3-alpha.1+build\").Major }} {{ (semver \"v1.2\").Minor }} {{ (semver \"1.2.3-alpha.1+build\").Prerelease }} {{ (semver \"1.2.3+b\").Metadata }}",
            "1 2 alpha.1 b",
        )]);
        check_errors(&[
            (
                "{{ semverCompare \">= x.y\" \"1.0.0\" }}",
                "improper constraint",
            ),
            (
                "{{ semverCompare \"1.0\" \"one\" }}",
                "invalid semantic version",
            ),
        ]);
    }
}

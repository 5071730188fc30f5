//! Argo CD's own template functions: `normalize` (a valid Kubernetes name) and `slugify`.

use minijinja::value::{Rest, Value};
use minijinja::{Environment, Error};

use super::{fail, int_arg, string_arg};
use crate::params::normalize_name;

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("normalize", |value: Value| {
        Ok::<_, Error>(Value::from(normalize_name(&string_arg(
            "normalize",
            &value,
        )?)))
    });
    env.add_function("slugify", |args: Rest<Value>| {
        let Some((name, options)) = args.split_last() else {
            return Err(fail("slugify", "missing the name to slugify"));
        };
        let max = match options.first() {
            Some(max) => usize::try_from(int_arg("slugify", max)?)
                .map_err(|_| fail("slugify", "negative maximum size"))?,
            None => 50,
        };
        let smart = options.get(1).is_none_or(Value::is_true);
        Ok(Value::from(slugify(
            &string_arg("slugify", name)?,
            max,
            smart,
        )))
    });
}

/// Argo CD's `SlugifyName`: lower case, runs of characters outside `[a-z0-9]` become one `-`,
/// `-` trimmed at both ends, at most `max` characters, cut at the last `-` when `smart`.
fn slugify(name: &str, max: usize, smart: bool) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.len() <= max {
        return slug.to_string();
    }
    let cut = &slug[..max];
    match cut.rfind('-') {
        Some(at) if smart && at > 0 => cut[..at].to_string(),
        _ => cut.trim_end_matches('-').to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;
    use super::slugify;

    #[test]
    fn slugify_matches_argo_cd() {
        let cases = [
            ("Hello World!", 50, true, "hello-world"),
            ("--My__Cluster--", 50, true, "my-cluster"),
            ("aaaa-bbbb-cccc", 12, true, "aaaa-bbbb"),
            ("aaaa-bbbb-cccc", 12, false, "aaaa-bbbb-cc"),
            ("abcdefghij", 4, true, "abcd"),
        ];
        for (name, max, smart, expected) in cases {
            assert_eq!(slugify(name, max, smart), expected, "{name}");
        }
        check(&[(
            "{{ normalize \"My_Cluster.EU/1\" }} {{ slugify \"Hello World!\" }} {{ slugify 5 false \"aaaa-bbbb\" }}",
            "my-cluster.eu-1 hello-world aaaa",
        )]);
    }
}

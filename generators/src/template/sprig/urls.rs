//! sprig's `urlParse` and `urlJoin` (the parts of a URL as a map and back, as Go's `net/url`
//! names them) and the query escaping of Go's `urlquery`.

use std::fmt::Write as _;

use minijinja::value::Value;
use minijinja::{Environment, Error};

use super::dicts::{Dict, lookup};
use super::{string_arg, strval};

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("urlParse", |text: Value| {
        let text = string_arg("urlParse", &text)?;
        let parts = parse(&text);
        Ok::<_, Error>(Dict::value(
            parts
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::from(v))),
        ))
    });
    env.add_function("urlJoin", |parts: Value| {
        let part = |key: &str| {
            let value = lookup(&parts, key);
            if value.is_undefined() || value.is_none() {
                String::new()
            } else {
                strval(&value)
            }
        };
        let mut url = String::new();
        if !part("scheme").is_empty() {
            let _ = write!(url, "{}:", part("scheme"));
        }
        if !part("opaque").is_empty() {
            url.push_str(&part("opaque"));
        } else {
            if !part("host").is_empty() || !part("userinfo").is_empty() {
                url.push_str("//");
                if !part("userinfo").is_empty() {
                    let _ = write!(url, "{}@", part("userinfo"));
                }
                url.push_str(&part("host"));
            }
            url.push_str(&part("path"));
        }
        if !part("query").is_empty() {
            let _ = write!(url, "?{}", part("query"));
        }
        if !part("fragment").is_empty() {
            let _ = write!(url, "#{}", part("fragment"));
        }
        Value::from(url)
    });
}

/// The parts sprig's `urlParse` returns: scheme, host, hostname, path, query, opaque, fragment,
/// userinfo.
fn parse(text: &str) -> Vec<(&'static str, String)> {
    let (rest, fragment) = text.split_once('#').unwrap_or((text, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((scheme, after))
            if !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (scheme.to_ascii_lowercase(), after)
        }
        _ => (String::new(), rest),
    };
    let (mut host, mut userinfo, mut path, mut opaque) =
        (String::new(), String::new(), String::new(), String::new());
    if let Some(authority_and_path) = rest.strip_prefix("//") {
        let cut = authority_and_path
            .find('/')
            .unwrap_or(authority_and_path.len());
        let authority = &authority_and_path[..cut];
        path = authority_and_path[cut..].to_string();
        match authority.rsplit_once('@') {
            Some((user, at)) => {
                userinfo = user.to_string();
                host = at.to_string();
            }
            None => host = authority.to_string(),
        }
    } else if !scheme.is_empty() && !rest.starts_with('/') {
        opaque = rest.to_string();
    } else {
        path = rest.to_string();
    }
    let hostname = if host.starts_with('[') {
        host.split(']')
            .next()
            .unwrap_or_default()
            .trim_start_matches('[')
            .to_string()
    } else {
        host.split(':').next().unwrap_or_default().to_string()
    };
    vec![
        ("scheme", scheme),
        ("host", host),
        ("hostname", hostname),
        ("path", path),
        ("query", query.to_string()),
        ("opaque", opaque),
        ("fragment", fragment.to_string()),
        ("userinfo", userinfo),
    ]
}

/// Go's `url.QueryEscape`: spaces as `+`, bytes other than letters, digits and `-_.~` as `%XX`.
pub(super) fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => {
                let _ = write!(out, "%{other:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;

    #[test]
    fn urls_match_net_url() {
        check(&[
            (
                "{{ $u := urlParse \"https://user:pw@example.com:8443/a/b?x=1&y=2#top\" }}{{ $u.scheme }}|{{ $u.host }}|{{ $u.hostname }}|{{ $u.path }}|{{ $u.query }}|{{ $u.fragment }}|{{ $u.userinfo }}",
                "https|example.com:8443|example.com|/a/b|x=1&y=2|top|user:pw",
            ),
            ("{{ (urlParse \"mailto:a@b.c\").opaque }}", "a@b.c"),
            (
                "{{ urlJoin (dict \"scheme\" \"https\" \"host\" \"example.com\" \"path\" \"/p\" \"query\" \"q=1\") }}",
                "https://example.com/p?q=1",
            ),
            (
                "{{ urlJoin (urlParse \"git@github.com:org/repo.git\") }}",
                "git@github.com:org/repo.git",
            ),
        ]);
    }
}

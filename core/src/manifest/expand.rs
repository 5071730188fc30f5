//! Go's `os.Expand` as Argo CD uses it for its build environment: `$NAME` and `${NAME}` are the
//! variable's value (empty when unknown), `$$` is a `$`. Jsonnet's `tlas`/`extVars` and a
//! plugin's `env` values are expanded this way.

use std::collections::BTreeMap;

/// Go's `os.Expand` of `text` with Argo CD's mapping (`$` is itself, else the variable or "").
pub fn expand(text: &str, environment: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if after.is_empty() {
            out.push('$');
            rest = after;
            break;
        }
        let (name, width) = shell_name(after);
        match name {
            Some("$") => out.push('$'),
            Some(name) => out.push_str(environment.get(name).map_or("", String::as_str)),
            // `$` not followed by a name stays; bad syntax (`${}`, an unclosed `${`) is eaten.
            None if width == 0 => out.push('$'),
            None => {}
        }
        rest = &after[width..];
    }
    out.push_str(rest);
    out
}

/// The name after a `$` and how many bytes it takes, as Go's `getShellName` reads it.
fn shell_name(text: &str) -> (Option<&str>, usize) {
    let special = |c: u8| b"*#$@!?-0123456789".contains(&c);
    let bytes = text.as_bytes();
    if bytes[0] == b'{' {
        if bytes.len() > 2 && special(bytes[1]) && bytes[2] == b'}' {
            return (Some(&text[1..2]), 3);
        }
        return match text.find('}') {
            Some(1) => (None, 2),
            Some(end) => (Some(&text[1..end]), end + 1),
            None => (None, 1),
        };
    }
    if special(bytes[0]) {
        return (Some(&text[..1]), 1);
    }
    let end = bytes
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(bytes.len());
    ((end > 0).then(|| &text[..end]), end)
}

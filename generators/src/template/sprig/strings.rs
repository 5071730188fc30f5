//! sprig's string functions: case, trimming, padding, abbreviation, wrapping, quoting, splitting
//! and joining.

use minijinja::value::{Rest, Value};
use minijinja::{Environment, Error};

use super::super::go_format::{go_quote, go_string};
use super::dicts::Dict;
use super::{int_arg, is_nil, list_arg, string_arg, strval, usize_arg};

/// Registers `name` as a function of one string.
fn unary(env: &mut Environment<'static>, name: &'static str, f: fn(&str) -> String) {
    env.add_function(name, move |value: Value| {
        Ok::<_, Error>(Value::from(f(&string_arg(name, &value)?)))
    });
}

/// Registers `name` as a function of a string argument and the (piped) string.
fn binary(env: &mut Environment<'static>, name: &'static str, f: fn(&str, &str) -> Value) {
    env.add_function(name, move |argument: Value, text: Value| {
        Ok::<_, Error>(f(&string_arg(name, &text)?, &string_arg(name, &argument)?))
    });
}

/// Registers `name` as a function of an integer argument and the (piped) string.
fn counted(env: &mut Environment<'static>, name: &'static str, f: fn(i64, &str) -> String) {
    env.add_function(name, move |count: Value, text: Value| {
        Ok::<_, Error>(Value::from(f(
            int_arg(name, &count)?,
            &string_arg(name, &text)?,
        )))
    });
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("hello", || Value::from("Hello!"));
    unary(env, "lower", str::to_lowercase);
    unary(env, "upper", str::to_uppercase);
    unary(env, "trim", |s| s.trim().to_string());
    unary(env, "title", title);
    unary(env, "untitle", untitle);
    unary(env, "nospace", |s| {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    });
    unary(env, "initials", |s| {
        s.split_whitespace()
            .filter_map(|word| word.chars().next())
            .collect()
    });
    unary(env, "swapcase", swapcase);
    unary(env, "snakecase", |s| words(s).join("_").to_lowercase());
    unary(env, "kebabcase", |s| words(s).join("-").to_lowercase());
    unary(env, "camelcase", camelcase);
    binary(env, "contains", |text, needle| {
        Value::from(text.contains(needle))
    });
    binary(env, "hasPrefix", |text, prefix| {
        Value::from(text.starts_with(prefix))
    });
    binary(env, "hasSuffix", |text, suffix| {
        Value::from(text.ends_with(suffix))
    });
    binary(env, "trimPrefix", |text, prefix| {
        Value::from(text.strip_prefix(prefix).unwrap_or(text))
    });
    binary(env, "trimSuffix", |text, suffix| {
        Value::from(text.strip_suffix(suffix).unwrap_or(text))
    });
    binary(env, "trimAll", trim_all);
    binary(env, "trimall", trim_all);
    binary(env, "splitList", |text, separator| {
        Value::from(
            split(text, separator, None)
                .into_iter()
                .map(Value::from)
                .collect::<Vec<_>>(),
        )
    });
    binary(env, "split", |text, separator| {
        numbered(split(text, separator, None))
    });
    counted(env, "trunc", truncate);
    counted(env, "abbrev", |width, text| abbreviate(text, 0, width));
    counted(env, "repeat", |count, text| {
        text.repeat(usize::try_from(count).unwrap_or(0))
    });
    counted(env, "indent", indent);
    counted(env, "nindent", |spaces, text| {
        format!("\n{}", indent(spaces, text))
    });
    counted(env, "wrap", |width, text| wrap(text, width, "\n", false));
    env.add_function("abbrevboth", |left: Value, right: Value, text: Value| {
        let (left, right) = (
            int_arg("abbrevboth", &left)?,
            int_arg("abbrevboth", &right)?,
        );
        let text = string_arg("abbrevboth", &text)?;
        Ok::<_, Error>(Value::from(if right < 4 || (left > 0 && right < 7) {
            text.to_string()
        } else {
            abbreviate(&text, left, right)
        }))
    });
    env.add_function("substr", |start: Value, end: Value, text: Value| {
        let (start, end) = (int_arg("substr", &start)?, int_arg("substr", &end)?);
        Ok::<_, Error>(Value::from(substr(
            &string_arg("substr", &text)?,
            start,
            end,
        )))
    });
    env.add_function("wrapWith", |width: Value, separator: Value, text: Value| {
        let width = int_arg("wrapWith", &width)?;
        let separator = string_arg("wrapWith", &separator)?;
        Ok::<_, Error>(Value::from(wrap(
            &string_arg("wrapWith", &text)?,
            width,
            &separator,
            true,
        )))
    });
    env.add_function("replace", |old: Value, new: Value, value: Value| {
        let text = string_arg("replace", &value)?;
        Ok::<_, Error>(Value::from(text.replace(
            &*string_arg("replace", &old)?,
            &string_arg("replace", &new)?,
        )))
    });
    env.add_function("splitn", |separator: Value, count: Value, value: Value| {
        let count = usize_arg("splitn", &count)?;
        let parts = split(
            &string_arg("splitn", &value)?,
            &string_arg("splitn", &separator)?,
            Some(count),
        );
        Ok::<_, Error>(numbered(parts))
    });
    env.add_function("plural", |one: Value, many: Value, count: Value| {
        Ok::<_, Error>(if int_arg("plural", &count)? == 1 {
            one
        } else {
            many
        })
    });
    env.add_function("quote", |values: Rest<Value>| {
        Value::from(
            present(&values)
                .map(|v| go_quote(&strval(v)))
                .collect::<Vec<_>>()
                .join(" "),
        )
    });
    env.add_function("squote", |values: Rest<Value>| {
        let quoted: Vec<String> = present(&values)
            .map(|v| format!("'{}'", strval(v)))
            .collect();
        Value::from(quoted.join(" "))
    });
    env.add_function("cat", |values: Rest<Value>| {
        Value::from(
            present(&values)
                .map(go_string)
                .collect::<Vec<_>>()
                .join(" "),
        )
    });
    env.add_function("toString", |value: Value| Value::from(strval(&value)));
    env.add_function("toStrings", |value: Value| {
        Ok::<_, Error>(Value::from(strings_of("toStrings", &value)?))
    });
    env.add_function("join", |separator: Value, value: Value| {
        let separator = string_arg("join", &separator)?;
        Ok::<_, Error>(Value::from(strings_of("join", &value)?.join(&*separator)))
    });
    env.add_function("sortAlpha", |value: Value| {
        let mut items = strings_of("sortAlpha", &value)?;
        items.sort();
        Ok::<_, Error>(Value::from(items))
    });
}

/// The arguments that are not nil.
fn present(values: &[Value]) -> impl Iterator<Item = &Value> {
    values.iter().filter(|value| !is_nil(value))
}

/// sprig's `strslice`: a list's non-nil items as strings, nil as no strings, one value as one.
pub(super) fn strings_of(function: &str, value: &Value) -> Result<Vec<String>, Error> {
    match value.kind() {
        minijinja::value::ValueKind::Seq | minijinja::value::ValueKind::Iterable => {
            Ok(present(&list_arg(function, value)?).map(strval).collect())
        }
        _ if is_nil(value) => Ok(Vec::new()),
        _ => Ok(vec![strval(value)]),
    }
}

/// `strings.Split`/`SplitN`: an empty separator splits between characters.
fn split(text: &str, separator: &str, limit: Option<usize>) -> Vec<String> {
    if limit == Some(0) {
        return Vec::new();
    }
    if separator.is_empty() {
        let chars: Vec<String> = text.chars().map(String::from).collect();
        return match limit {
            Some(n) if n < chars.len() => {
                let mut parts = chars[..n - 1].to_vec();
                parts.push(chars[n - 1..].concat());
                parts
            }
            _ => chars,
        };
    }
    match limit {
        Some(n) => text.splitn(n, separator).map(str::to_string).collect(),
        None => text.split(separator).map(str::to_string).collect(),
    }
}

/// sprig's `split` result: a map from `_0`, `_1`, … to the parts.
fn numbered(parts: Vec<String>) -> Value {
    Dict::value(
        parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| (format!("_{i}"), Value::from(part))),
    )
}

fn trim_all(text: &str, cutset: &str) -> Value {
    Value::from(text.trim_matches(|c| cutset.contains(c)))
}

/// Go's `strings.Title`: the first letter of each word in upper case.
fn title(text: &str) -> String {
    recase_words(
        text,
        |c| !(c.is_alphanumeric() || c == '_' || c == '\''),
        |c| c.to_uppercase().next().unwrap_or(c),
    )
}

/// goutils' `Uncapitalize`: the first letter of each space-separated word in lower case.
fn untitle(text: &str) -> String {
    recase_words(text, char::is_whitespace, |c| {
        c.to_lowercase().next().unwrap_or(c)
    })
}

/// `text` with `recase` applied to the first character and to each one after a `separator`.
fn recase_words(text: &str, separator: fn(char) -> bool, recase: fn(char) -> char) -> String {
    let mut after_separator = true;
    text.chars()
        .map(|c| {
            let mapped = if after_separator { recase(c) } else { c };
            after_separator = separator(c);
            mapped
        })
        .collect()
}

fn swapcase(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_uppercase() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                c.to_uppercase().next().unwrap_or(c)
            }
        })
        .collect()
}

/// The words of an identifier for `snakecase`/`kebabcase` (xstrings): split at separators, at a
/// lower-to-upper change and before the last capital of an acronym (`HTTPServer` → HTTP, Server).
fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        let previous = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        let boundary = c.is_uppercase()
            && previous.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
            });
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// xstrings' `ToCamelCase`: words separated by `_`, `-` or spaces joined, each capitalised.
fn camelcase(text: &str) -> String {
    text.split(['_', '-', ' '])
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// sprig `trunc`: the first `length` characters, or the last `-length` when negative.
pub(crate) fn truncate(length: i64, text: &str) -> String {
    let count = text.chars().count();
    let keep = usize::try_from(length.unsigned_abs()).unwrap_or(usize::MAX);
    if length >= 0 {
        text.chars().take(keep).collect()
    } else {
        text.chars().skip(count.saturating_sub(keep)).collect()
    }
}

/// sprig's `substr`: characters `start..end`; a negative start means 0..end, a negative or too
/// large end means start..
fn substr(text: &str, start: i64, end: i64) -> String {
    let chars: Vec<char> = text.chars().collect();
    let clamp = |n: i64| usize::try_from(n).unwrap_or(0).min(chars.len());
    let (from, to) = if start < 0 {
        (0, clamp(end))
    } else if end < 0 || clamp(end) == chars.len() {
        (clamp(start), chars.len())
    } else {
        (clamp(start), clamp(end))
    };
    chars[from.min(to)..to].iter().collect()
}

fn indent(spaces: i64, text: &str) -> String {
    let pad = " ".repeat(usize::try_from(spaces).unwrap_or(0));
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

/// goutils' `AbbreviateFull`: at most `width` characters with `...` where text was cut, keeping
/// the text around `offset`.
fn abbreviate(text: &str, offset: i64, width: i64) -> String {
    let chars: Vec<char> = text.chars().collect();
    let length = chars.len();
    let Ok(width) = usize::try_from(width) else {
        return text.to_string();
    };
    if width < 4 || length <= width {
        return text.to_string();
    }
    let slice = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    let mut offset = usize::try_from(offset).unwrap_or(0).min(length);
    if length - offset < width - 3 {
        offset = length - (width - 3);
    }
    if offset <= 4 {
        return format!("{}...", slice(0, width - 3));
    }
    if width < 7 {
        return text.to_string();
    }
    if offset + width - 3 < length {
        return format!(
            "...{}",
            abbreviate(
                &slice(offset, length),
                0,
                i64::try_from(width - 3).unwrap_or(0)
            )
        );
    }
    format!("...{}", slice(length - (width - 3), length))
}

/// goutils' `WrapCustom`: lines of at most `width` characters broken at spaces; words longer
/// than a line are split only when `long_words`.
fn wrap(text: &str, width: i64, newline: &str, long_words: bool) -> String {
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = usize::try_from(width).unwrap_or(0).max(1);
    let chars: Vec<char> = text.chars().collect();
    let slice = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    let mut out = String::new();
    let mut offset = 0;
    while chars.len() - offset > width {
        if chars[offset] == ' ' {
            offset += 1;
            continue;
        }
        let end = (offset + width + 1).min(chars.len());
        if let Some(space) = chars[offset..end].iter().rposition(|&c| c == ' ') {
            out.push_str(&slice(offset, offset + space));
            out.push_str(newline);
            offset += space + 1;
        } else if long_words {
            out.push_str(&slice(offset, offset + width));
            out.push_str(newline);
            offset += width;
        } else if let Some(space) = chars[offset + width..].iter().position(|&c| c == ' ') {
            out.push_str(&slice(offset, offset + width + space));
            out.push_str(newline);
            offset += width + space + 1;
        } else {
            break;
        }
    }
    out.push_str(&slice(offset, chars.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn string_functions_match_sprig() {
        check(&[
            ("{{ hello }}", "Hello!"),
            ("{{ lower .name }} {{ upper .name }}", "guestbook GUESTBOOK"),
            ("{{ trim \"  a b  \" }}", "a b"),
            ("{{ title \"hello wide-world\" }}", "Hello Wide-World"),
            ("{{ untitle \"Hello World\" }}", "hello world"),
            ("{{ nospace \"a b\\tc\" }}", "abc"),
            ("{{ initials \"First Try\" }}", "FT"),
            ("{{ swapcase \"This Is\" }}", "tHIS iS"),
            (
                "{{ snakecase \"FirstName\" }} {{ snakecase \"HTTPServer\" }}",
                "first_name http_server",
            ),
            ("{{ kebabcase \"FirstName\" }}", "first-name"),
            ("{{ camelcase \"http_server\" }}", "HttpServer"),
            (
                "{{ contains \"cat\" \"catch\" }} {{ hasPrefix \"cat\" \"catch\" }} {{ hasSuffix \"ch\" \"catch\" }}",
                "true true true",
            ),
            (
                "{{ trimPrefix \"-\" \"-hello\" }} {{ trimSuffix \"-\" \"hello-\" }}",
                "hello hello",
            ),
            (
                "{{ trimAll \"$\" \"$5.00$\" }} {{ trimall \"$\" \"$5$\" }}",
                "5.00 5",
            ),
            ("{{ splitList \"$\" \"foo$bar$baz\" }}", "[foo bar baz]"),
            (
                "{{ $a := split \"$\" \"foo$bar\" }}{{ $a._0 }}|{{ $a._1 }}",
                "foo|bar",
            ),
            (
                "{{ $a := splitn \"$\" 2 \"foo$bar$baz\" }}{{ $a._1 }}",
                "bar$baz",
            ),
            (
                "{{ trunc 5 \"hello world\" }} {{ trunc -5 \"hello world\" }}",
                "hello world",
            ),
            ("{{ abbrev 5 \"hello world\" }}", "he..."),
            ("{{ abbrevboth 5 10 \"1234 5678 9123\" }}", "...5678..."),
            ("{{ repeat 3 \"ab\" }}", "ababab"),
            ("{{ substr 0 5 \"hello world\" }}", "hello"),
            ("{{ indent 4 \"a\\nb\" }}", "    a\n    b"),
            ("{{ \"a\\nb\" | nindent 2 }}", "\n  a\n  b"),
            ("{{ wrap 5 \"Hello World\" }}", "Hello\nWorld"),
            ("{{ wrapWith 5 \"\\t\" \"Hello World\" }}", "Hello\tWorld"),
            ("{{ replace \" \" \"-\" \"a b c\" }}", "a-b-c"),
            (
                "{{ plural \"one anchovy\" \"many anchovies\" 1 }}",
                "one anchovy",
            ),
            ("{{ plural \"one\" \"many\" 2 }}", "many"),
            (
                "{{ quote \"a\" 1 .nothing }} {{ squote \"a\" }}",
                "\"a\" \"1\" 'a'",
            ),
            (
                "{{ cat \"hello\" \"beautiful\" \"world\" }}",
                "hello beautiful world",
            ),
            ("{{ toString 5 }}{{ toString .f }}", "52.5"),
            ("{{ toStrings (list 1 2 3) }}", "[1 2 3]"),
            (
                "{{ join \"-\" .items }} {{ join \",\" (list 1 2) }}",
                "b-a-c 1,2",
            ),
            ("{{ sortAlpha .items }}", "[a b c]"),
        ]);
        check_errors(&[("{{ upper 3 }}", "upper: expected a string argument")]);
    }
}

//! sprig's regular expressions in Go's RE2 syntax (the `regex` crate reads the same syntax and
//! guarantees linear time, as RE2 does): `regexMatch`, `regexFind`, `regexFindAll`,
//! `regexReplaceAll` (`$1`/`${name}` expanded), `regexReplaceAllLiteral`, `regexSplit`,
//! `regexQuoteMeta`, and their `must*` twins. Compiled expressions are cached per thread.

use std::cell::RefCell;
use std::collections::HashMap;

use minijinja::value::Value;
use minijinja::{Environment, Error};
use regex::Regex;

use super::{fail, int_arg, string_arg};

/// Compiled expressions kept per thread before the cache starts over.
const CACHED: usize = 64;

thread_local! {
    static CACHE: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
}

/// `pattern` compiled (from the cache when it was compiled before).
fn compile(function: &str, pattern: &str) -> Result<Regex, Error> {
    CACHE.with(|cache| {
        if let Some(regex) = cache.borrow().get(pattern) {
            return Ok(regex.clone());
        }
        let regex = Regex::new(pattern).map_err(|error| {
            fail(
                function,
                format!("invalid regular expression {pattern:?}: {error}"),
            )
        })?;
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHED {
            cache.clear();
        }
        cache.insert(pattern.to_string(), regex.clone());
        Ok(regex)
    })
}

/// Registers `name` and `must<Name>` as the same function of the expression and the text.
fn both(env: &mut Environment<'static>, names: [&'static str; 2], f: fn(&Regex, &str) -> Value) {
    for registered in names {
        env.add_function(registered, move |pattern: Value, text: Value| {
            let regex = compile(registered, &string_arg(registered, &pattern)?)?;
            Ok::<_, Error>(f(&regex, &string_arg(registered, &text)?))
        });
    }
}

/// Like [`both`], with a third argument: a count, or the replacement.
fn both3(
    env: &mut Environment<'static>,
    names: [&'static str; 2],
    f: impl Fn(&str, &Regex, &str, &Value) -> Result<Value, Error> + Copy + Send + Sync + 'static,
) {
    for registered in names {
        env.add_function(
            registered,
            move |pattern: Value, text: Value, third: Value| {
                let regex = compile(registered, &string_arg(registered, &pattern)?)?;
                f(registered, &regex, &string_arg(registered, &text)?, &third)
            },
        );
    }
}

/// Go's "at most n, all when negative".
fn limit(function: &str, count: &Value) -> Result<Option<usize>, Error> {
    Ok(usize::try_from(int_arg(function, count)?).ok())
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("regexMatch", |pattern: Value, text: Value| {
        let text = string_arg("regexMatch", &text)?;
        let matched = compile("regexMatch", &string_arg("regexMatch", &pattern)?)
            .is_ok_and(|regex| regex.is_match(&text));
        Ok::<_, Error>(Value::from(matched))
    });
    env.add_function("mustRegexMatch", |pattern: Value, text: Value| {
        let regex = compile("mustRegexMatch", &string_arg("mustRegexMatch", &pattern)?)?;
        Ok::<_, Error>(Value::from(
            regex.is_match(&string_arg("mustRegexMatch", &text)?),
        ))
    });
    both(env, ["regexFind", "mustRegexFind"], |regex, text| {
        Value::from(regex.find(text).map_or("", |m| m.as_str()))
    });
    both3(
        env,
        ["regexFindAll", "mustRegexFindAll"],
        |function, regex, text, count| {
            let found = regex.find_iter(text).map(|m| Value::from(m.as_str()));
            Ok(Value::from(match limit(function, count)? {
                Some(n) => found.take(n).collect::<Vec<_>>(),
                None => found.collect(),
            }))
        },
    );
    let replacers = [
        (["regexReplaceAll", "mustRegexReplaceAll"], false),
        (
            ["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"],
            true,
        ),
    ];
    for (names, literal) in replacers {
        both3(env, names, move |function, regex, text, replacement| {
            let replacement = string_arg(function, replacement)?;
            let replaced = if literal {
                regex.replace_all(text, regex::NoExpand(&replacement))
            } else {
                regex.replace_all(text, &*replacement)
            };
            Ok(Value::from(replaced.into_owned()))
        });
    }
    both3(
        env,
        ["regexSplit", "mustRegexSplit"],
        |function, regex, text, count| {
            let parts: Vec<Value> = match limit(function, count)? {
                Some(0) => Vec::new(),
                Some(n) => regex.splitn(text, n).map(Value::from).collect(),
                None => regex.split(text).map(Value::from).collect(),
            };
            Ok(Value::from(parts))
        },
    );
    env.add_function("regexQuoteMeta", |text: Value| {
        let text = string_arg("regexQuoteMeta", &text)?;
        let mut quoted = String::with_capacity(text.len());
        for c in text.chars() {
            if "\\.+*?()|[]{}^$".contains(c) {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        Ok::<_, Error>(Value::from(quoted))
    });
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn regular_expressions_match_sprig() {
        check(&[
            (
                "{{ regexMatch \"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\\\.[A-Za-z]{2,}$\" \"test@acme.com\" }}",
                "true",
            ),
            (
                "{{ regexMatch \"(\" \"x\" }} {{ mustRegexMatch \"a+\" \"baa\" }}",
                "false true",
            ),
            (
                "{{ regexFindAll \"[2,4,6,8]\" \"123456789\" -1 }} {{ regexFindAll \"[2,4,6,8]\" \"123456789\" 2 }}",
                "[2 4 6 8] [2 4]",
            ),
            (
                "{{ regexFind \"[a-zA-Z][1-9]\" \"abcd1234\" }}|{{ regexFind \"z\" \"abc\" }}|",
                "d1||",
            ),
            (
                "{{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" }}",
                "-W-xxW-",
            ),
            (
                "{{ regexReplaceAllLiteral \"a(x*)b\" \"-ab-axxb-\" \"${1}\" }}",
                "-${1}-${1}-",
            ),
            (
                "{{ regexSplit \"z+\" \"pizza\" -1 }} {{ regexSplit \"z+\" \"pizza\" 1 }}",
                "[pi a] [pizza]",
            ),
            (
                "{{ regexQuoteMeta \"1.2.3\" }} {{ mustRegexFind \"b+\" \"abbc\" }}",
                "1\\.2\\.3 bb",
            ),
            (
                "{{ regexReplaceAll \"release-(.*)\" \"release-1.2\" \"v$1\" }}",
                "v1.2",
            ),
        ]);
        check_errors(&[(
            "{{ regexFind \"(\" \"x\" }}",
            "regexFind: invalid regular expression",
        )]);
    }
}

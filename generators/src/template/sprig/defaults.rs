//! sprig's default and flow functions: `default`, `empty`, `coalesce`, `all`, `any`, `compact`,
//! `ternary`, `deepCopy` and `fail`, with sprig's notion of an empty value.

use minijinja::value::{Rest, Value, ValueKind};
use minijinja::{Environment, Error};

use super::dicts::Dict;
use super::{fail, list_arg, string_arg};

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function(
        "default",
        |fallback: Value, given: Rest<Value>| match given.first() {
            Some(value) if !is_empty(value) => value.clone(),
            _ => fallback,
        },
    );
    env.add_function("empty", |value: Value| Value::from(is_empty(&value)));
    env.add_function("coalesce", |values: Rest<Value>| {
        values
            .iter()
            .find(|value| !is_empty(value))
            .cloned()
            .unwrap_or_else(|| Value::from(()))
    });
    env.add_function("all", |values: Rest<Value>| {
        Value::from(values.iter().all(|value| !is_empty(value)))
    });
    env.add_function("any", |values: Rest<Value>| {
        Value::from(values.iter().any(|value| !is_empty(value)))
    });
    for name in ["compact", "mustCompact"] {
        env.add_function(name, move |list: Value| {
            let items = list_arg(name, &list)?;
            Ok::<_, Error>(Value::from(
                items
                    .into_iter()
                    .filter(|item| !is_empty(item))
                    .collect::<Vec<_>>(),
            ))
        });
    }
    env.add_function(
        "ternary",
        |yes: Value, no: Value, condition: Value| {
            if condition.is_true() { yes } else { no }
        },
    );
    for name in ["deepCopy", "mustDeepCopy"] {
        env.add_function(name, |value: Value| deep_copy(&value));
    }
    env.add_function("fail", |message: Value| -> Result<Value, Error> {
        Err(fail("fail", string_arg("fail", &message)?))
    });
}

/// sprig's `empty`: nil, false, 0, and empty strings, lists and maps.
pub(super) fn is_empty(value: &Value) -> bool {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => true,
        ValueKind::Bool | ValueKind::Number => !value.is_true(),
        ValueKind::String => value.as_str().is_none_or(str::is_empty),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => value.len() == Some(0),
        _ => false,
    }
}

/// A copy of `value` whose maps are [`Dict`]s (that `set` and `merge` may change) at every depth.
pub(super) fn deep_copy(value: &Value) -> Value {
    match value.kind() {
        ValueKind::Map => Dict::value(value.try_iter().into_iter().flatten().map(|key| {
            let entry = value.get_item(&key).unwrap_or_default();
            (super::strval(&key), deep_copy(&entry))
        })),
        ValueKind::Seq | ValueKind::Iterable => Value::from(
            value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|item| deep_copy(&item))
                .collect::<Vec<_>>(),
        ),
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn defaults_match_sprig() {
        check(&[
            (
                "{{ .missing | default \"foo\" }} {{ .empty | default \"e\" }} {{ .name | default \"x\" }}",
                "foo e Guestbook",
            ),
            (
                "{{ 0 | default 5 }} {{ false | default true }} {{ list | default \"l\" }}",
                "5 true l",
            ),
            (
                "{{ empty .empty }} {{ empty .name }} {{ empty 0 }} {{ empty (dict) }} {{ empty .nothing }}",
                "true false true true true",
            ),
            (
                "{{ coalesce 0 .empty \"x\" \"y\" }} {{ coalesce .nothing }}",
                "x <no value>",
            ),
            (
                "{{ all 1 \"a\" }} {{ all 1 \"\" }} {{ any 0 \"\" \"a\" }} {{ any 0 }}",
                "true false true false",
            ),
            (
                "{{ compact (list 1 \"\" 0 \"a\" .nothing) }} {{ mustCompact (list) }}",
                "[1 a] []",
            ),
            (
                "{{ ternary \"yes\" \"no\" true }} {{ true | ternary \"y\" \"n\" }} {{ ternary 1 2 false }}",
                "yes y 2",
            ),
            (
                "{{ $c := deepCopy .map }}{{ $_ := set $c \"c\" 3 }}{{ $c }} {{ .map }}",
                "map[a:x b:2 c:3] map[a:x b:2]",
            ),
        ]);
        check_errors(&[("{{ fail \"bad input\" }}", "fail: bad input")]);
    }
}

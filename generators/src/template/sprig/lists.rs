//! sprig's list functions: `list`/`tuple`, `append`/`push`, `prepend`, `first`, `rest`, `last`,
//! `initial`, `reverse`, `uniq`, `without`, `has`, `concat`, `chunk`, `mustSlice` (each `must*`
//! twin behaves the same here: a wrong type is always an error).

use minijinja::value::{Rest, Value};
use minijinja::{Environment, Error};

use super::{fail, list_arg, usize_arg};

/// Registers `name` and `must<Name>` as the same function.
fn both(
    env: &mut Environment<'static>,
    name: &'static str,
    must: &'static str,
    f: fn(&'static str, Value, &[Value]) -> Result<Value, Error>,
) {
    for registered in [name, must] {
        env.add_function(registered, move |list: Value, args: Rest<Value>| {
            f(registered, list, &args)
        });
    }
}

fn list(items: Vec<Value>) -> Result<Value, Error> {
    Ok(Value::from(items))
}

pub(super) fn register(env: &mut Environment<'static>) {
    for name in ["list", "tuple"] {
        env.add_function(name, |values: Rest<Value>| Value::from(values.0));
    }
    for (name, must) in [("append", "mustAppend"), ("push", "mustPush")] {
        both(env, name, must, |name, target, args| {
            let mut items = list_arg(name, &target)?;
            items.extend(args.iter().take(1).cloned());
            list(items)
        });
    }
    both(env, "prepend", "mustPrepend", |name, target, args| {
        let mut items: Vec<Value> = args.iter().take(1).cloned().collect();
        items.extend(list_arg(name, &target)?);
        list(items)
    });
    both(env, "first", "mustFirst", |name, target, _| {
        Ok(list_arg(name, &target)?
            .into_iter()
            .next()
            .unwrap_or_else(|| Value::from(())))
    });
    both(env, "last", "mustLast", |name, target, _| {
        Ok(list_arg(name, &target)?
            .pop()
            .unwrap_or_else(|| Value::from(())))
    });
    both(env, "rest", "mustRest", |name, target, _| {
        list(list_arg(name, &target)?.into_iter().skip(1).collect())
    });
    both(env, "initial", "mustInitial", |name, target, _| {
        let mut items = list_arg(name, &target)?;
        items.pop();
        list(items)
    });
    both(env, "reverse", "mustReverse", |name, target, _| {
        let mut items = list_arg(name, &target)?;
        items.reverse();
        list(items)
    });
    both(env, "uniq", "mustUniq", |name, target, _| {
        let mut unique: Vec<Value> = Vec::new();
        for item in list_arg(name, &target)? {
            if !unique.contains(&item) {
                unique.push(item);
            }
        }
        list(unique)
    });
    both(env, "without", "mustWithout", |name, target, omit| {
        list(
            list_arg(name, &target)?
                .into_iter()
                .filter(|item| !omit.contains(item))
                .collect(),
        )
    });
    for name in ["has", "mustHas"] {
        env.add_function(name, move |needle: Value, haystack: Value| {
            Ok::<_, Error>(Value::from(list_arg(name, &haystack)?.contains(&needle)))
        });
    }
    env.add_function("mustSlice", |target: Value, bounds: Rest<Value>| {
        let items = list_arg("mustSlice", &target)?;
        let start = bounds
            .first()
            .map(|b| usize_arg("mustSlice", b))
            .transpose()?
            .unwrap_or(0);
        let end = bounds
            .get(1)
            .map(|b| usize_arg("mustSlice", b))
            .transpose()?
            .unwrap_or(items.len());
        items
            .get(start..end)
            .map(|part| Value::from(part.to_vec()))
            .ok_or_else(|| {
                fail(
                    "mustSlice",
                    format!(
                        "slice bounds out of range [{start}:{end}] with length {}",
                        items.len()
                    ),
                )
            })
    });
    env.add_function("concat", |lists: Rest<Value>| {
        let mut items = Vec::new();
        for each in lists.iter() {
            items.extend(list_arg("concat", each)?);
        }
        list(items)
    });
    for name in ["chunk", "mustChunk"] {
        env.add_function(name, move |size: Value, target: Value| {
            let size = usize_arg(name, &size)?.max(1);
            let items = list_arg(name, &target)?;
            list(
                items
                    .chunks(size)
                    .map(|chunk| Value::from(chunk.to_vec()))
                    .collect(),
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn lists_match_sprig() {
        check(&[
            ("{{ list 1 \"a\" }} {{ tuple 1 2 }}", "[1 a] [1 2]"),
            (
                "{{ append .items \"d\" }} {{ push (list) 1 }} {{ prepend .items \"z\" }} {{ mustAppend (list 1) 2 }}",
                "[b a c d] [1] [z b a c] [1 2]",
            ),
            (
                "{{ first .items }} {{ last .items }} {{ rest .items }} {{ initial .items }} {{ first (list) }}",
                "b c [a c] [b a] <no value>",
            ),
            (
                "{{ reverse .items }} {{ uniq (list 1 1 2 1) }} {{ without (list 1 2 3 2) 2 }}",
                "[c a b] [1 2] [1 3]",
            ),
            (
                "{{ has \"a\" .items }} {{ has 4 (list 1 2) }} {{ mustHas 1 (list 1) }}",
                "true false true",
            ),
            (
                "{{ concat .items (list 1) (list) }} {{ chunk 2 (list 1 2 3) }} {{ mustSlice .items 1 2 }}",
                "[b a c 1] [[1 2] [3]] [a]",
            ),
        ]);
        check_errors(&[("{{ first 3 }}", "cannot find first on type number")]);
    }
}

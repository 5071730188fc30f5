//! sprig's dictionaries: [`Dict`], the map that `dict`, `fromJson`, `deepCopy` and friends make
//! and that `set`, `unset` and `merge` change in place as Go's maps are changed; and the functions
//! on maps: `get`, `hasKey`, `pluck`, `keys`, `values`, `pick`, `omit`, `merge`,
//! `mergeOverwrite`, `dig`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use minijinja::value::{Enumerator, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{Environment, Error};

use super::super::go_params::ParamMap;
use super::defaults::is_empty;
use super::{fail, map_arg, string_arg, strval};

/// A map made by a template, keys in Go's printing order; shared, so a change made through
/// one reference (`set $d …`) is seen through every other, as with Go's maps.
#[derive(Debug, Default)]
pub(crate) struct Dict(Mutex<BTreeMap<String, Value>>);

impl Dict {
    /// A dictionary value holding `entries`.
    pub(crate) fn value(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
        Value::from_object(Self(Mutex::new(entries.into_iter().collect())))
    }

    fn entries(&self) -> MutexGuard<'_, BTreeMap<String, Value>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Object for Dict {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.entries().get(key.as_str()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            self.entries()
                .keys()
                .map(|k| Value::from(k.as_str()))
                .collect(),
        )
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.entries().len())
    }
}

/// Changes `map` in place when it is a [`Dict`]; any other map (parameters) is an error.
fn change<R>(
    function: &str,
    map: &Value,
    f: impl FnOnce(&mut BTreeMap<String, Value>) -> R,
) -> Result<R, Error> {
    match map.downcast_object_ref::<Dict>() {
        Some(dict) => Ok(f(&mut dict.entries())),
        None => Err(fail(
            function,
            format!(
                "can only change a map made by dict, deepCopy or fromJson, not a {} (copy parameters with deepCopy first)",
                map.kind()
            ),
        )),
    }
}

/// A map's value under `key`, undefined when it is not a map or has no such key (whatever
/// `missingkey` says: these functions handle absent keys themselves).
pub(super) fn lookup(map: &Value, key: &str) -> Value {
    if map.kind() == ValueKind::Map {
        ParamMap::entry(map, &Value::from(key)).unwrap_or_default()
    } else {
        Value::UNDEFINED
    }
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("dict", |values: Rest<Value>| {
        Dict::value(values.chunks(2).map(|pair| {
            let value = pair.get(1).cloned().unwrap_or_else(|| Value::from(""));
            (strval(&pair[0]), value)
        }))
    });
    env.add_function("get", |map: Value, key: Value| {
        let found = lookup(&map, &string_arg("get", &key)?);
        Ok::<_, Error>(if found.is_undefined() {
            Value::from("")
        } else {
            found
        })
    });
    env.add_function("set", |map: Value, key: Value, value: Value| {
        let key = string_arg("set", &key)?.into_owned();
        change("set", &map, |entries| entries.insert(key, value))?;
        Ok::<_, Error>(map)
    });
    env.add_function("unset", |map: Value, key: Value| {
        let key = string_arg("unset", &key)?;
        change("unset", &map, |entries| entries.remove(&*key))?;
        Ok::<_, Error>(map)
    });
    env.add_function("hasKey", |map: Value, key: Value| {
        let key = string_arg("hasKey", &key)?;
        Ok::<_, Error>(Value::from(!lookup(&map, &key).is_undefined()))
    });
    env.add_function("pluck", |key: Value, maps: Rest<Value>| {
        let key = string_arg("pluck", &key)?;
        Ok::<_, Error>(Value::from(
            maps.iter()
                .map(|map| lookup(map, &key))
                .filter(|value| !value.is_undefined())
                .collect::<Vec<_>>(),
        ))
    });
    env.add_function("keys", |maps: Rest<Value>| {
        let mut keys = Vec::new();
        for map in maps.iter() {
            keys.extend(
                map_arg("keys", map)?
                    .into_iter()
                    .map(|(key, _)| Value::from(key)),
            );
        }
        Ok::<_, Error>(Value::from(keys))
    });
    env.add_function("values", |map: Value| {
        let values: Vec<Value> = map_arg("values", &map)?
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        Ok::<_, Error>(Value::from(values))
    });
    env.add_function("pick", |map: Value, keys: Rest<Value>| {
        let wanted = key_names("pick", &keys)?;
        let entries = map_arg("pick", &map)?;
        Ok::<_, Error>(Dict::value(
            entries.into_iter().filter(|(k, _)| wanted.contains(k)),
        ))
    });
    env.add_function("omit", |map: Value, keys: Rest<Value>| {
        let unwanted = key_names("omit", &keys)?;
        let entries = map_arg("omit", &map)?;
        Ok::<_, Error>(Dict::value(
            entries.into_iter().filter(|(k, _)| !unwanted.contains(k)),
        ))
    });
    for (name, overwrite) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        env.add_function(name, move |target: Value, sources: Rest<Value>| {
            merge(name, target, &sources, overwrite)
        });
    }
    env.add_function("dig", |args: Rest<Value>| {
        let [keys @ .., fallback, map] = args.as_slice() else {
            return Err(fail("dig", "needs at least one key, a default and a map"));
        };
        if keys.is_empty() {
            return Err(fail("dig", "needs at least one key, a default and a map"));
        }
        let mut current = map.clone();
        for key in keys {
            current = lookup(&current, &string_arg("dig", key)?);
            if current.is_undefined() {
                return Ok(fallback.clone());
            }
        }
        Ok(current)
    });
}

fn key_names(function: &str, keys: &[Value]) -> Result<Vec<String>, Error> {
    keys.iter()
        .map(|key| string_arg(function, key).map(|k| k.into_owned()))
        .collect()
}

/// mergo's `Merge` into `target`: keys it lacks (or holds empty) are taken from each source in
/// turn, maps merged at every depth; with `overwrite`, non-empty source values win. A target that
/// is not a [`Dict`] is copied first.
fn merge(
    function: &str,
    target: Value,
    sources: &[Value],
    overwrite: bool,
) -> Result<Value, Error> {
    let target = if target.downcast_object_ref::<Dict>().is_some() {
        target
    } else {
        super::defaults::deep_copy(&target)
    };
    for source in sources {
        let entries = map_arg(function, source)?;
        change(function, &target, |into| {
            merge_entries(into, entries, overwrite)
        })?;
    }
    Ok(target)
}

fn merge_entries(
    into: &mut BTreeMap<String, Value>,
    entries: Vec<(String, Value)>,
    overwrite: bool,
) {
    for (key, value) in entries {
        match into.get(&key) {
            Some(existing)
                if existing.kind() == ValueKind::Map && value.kind() == ValueKind::Map =>
            {
                let mut nested: BTreeMap<String, Value> = map_arg("merge", existing)
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                merge_entries(
                    &mut nested,
                    map_arg("merge", &value).unwrap_or_default(),
                    overwrite,
                );
                into.insert(key, Dict::value(nested));
            }
            Some(existing) if !is_empty(existing) && (!overwrite || is_empty(&value)) => {}
            _ => {
                into.insert(key, super::defaults::deep_copy(&value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn dictionaries_match_sprig() {
        check(&[
            (
                "{{ $d := dict \"b\" 1 \"a\" \"x\" }}{{ $d }} {{ get $d \"a\" }}|{{ get $d \"zz\" }}|",
                "map[a:x b:1] x||",
            ),
            (
                "{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"b\" 2 }}{{ $d }}{{ $_ := unset $d \"a\" }} {{ $d }}",
                "map[a:1 b:2] map[b:2]",
            ),
            (
                "{{ hasKey .map \"a\" }} {{ hasKey .map \"z\" }}",
                "true false",
            ),
            (
                "{{ pluck \"a\" (dict \"a\" 1) (dict \"b\" 2) (dict \"a\" 3) }}",
                "[1 3]",
            ),
            (
                "{{ keys .map }} {{ keys (dict \"z\" 1) (dict \"y\" 2) | sortAlpha }} {{ values .map }}",
                "[a b] [y z] [x 2]",
            ),
            (
                "{{ pick .map \"a\" }} {{ omit .map \"a\" }}",
                "map[a:x] map[b:2]",
            ),
            (
                "{{ merge (dict \"a\" 1 \"n\" (dict \"x\" 1)) (dict \"a\" 2 \"b\" 3 \"n\" (dict \"y\" 2)) }}",
                "map[a:1 b:3 n:map[x:1 y:2]]",
            ),
            (
                "{{ mergeOverwrite (dict \"a\" 1 \"c\" 5) (dict \"a\" 2 \"b\" 3 \"c\" \"\") }}",
                "map[a:2 b:3 c:5]",
            ),
            (
                "{{ merge .map (dict \"c\" 1) }} {{ .map }}",
                "map[a:x b:2 c:1] map[a:x b:2]",
            ),
            (
                "{{ dig \"a\" \"b\" \"none\" (dict \"a\" (dict \"b\" \"found\")) }} {{ dig \"x\" \"y\" \"none\" .map }}",
                "found none",
            ),
        ]);
        check_errors(&[(
            "{{ set .map \"c\" 1 }}",
            "set: can only change a map made by dict",
        )]);
    }
}

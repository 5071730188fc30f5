//! sprig's reflection functions: `typeOf`, `kindOf`, `typeIs`, `typeIsLike`, `kindIs` and
//! `deepEqual`, with the Go type names a parameter value has in Argo CD (numbers from documents
//! are `float64`, maps `map[string]interface {}`, lists `[]interface {}`).

use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error};

use super::string_arg;

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("typeOf", |value: Value| Value::from(type_of(&value)));
    env.add_function("kindOf", |value: Value| Value::from(kind_of(&value)));
    env.add_function("typeIs", |target: Value, value: Value| {
        Ok::<_, Error>(Value::from(
            string_arg("typeIs", &target)? == type_of(&value),
        ))
    });
    env.add_function("typeIsLike", |target: Value, value: Value| {
        let target = string_arg("typeIsLike", &target)?;
        let name = type_of(&value);
        Ok::<_, Error>(Value::from(target == name || target == format!("*{name}")))
    });
    env.add_function("kindIs", |target: Value, value: Value| {
        Ok::<_, Error>(Value::from(
            string_arg("kindIs", &target)? == kind_of(&value),
        ))
    });
    env.add_function("deepEqual", |a: Value, b: Value| Value::from(a == b));
}

fn type_of(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => "<nil>",
        ValueKind::Map => "map[string]interface {}",
        ValueKind::Seq | ValueKind::Iterable => "[]interface {}",
        _ => kind_of(value),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => "invalid",
        ValueKind::Bool => "bool",
        ValueKind::String => "string",
        ValueKind::Number if value.is_integer() => "int",
        ValueKind::Number => "float64",
        ValueKind::Map => "map",
        _ => "slice",
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::check;

    #[test]
    fn reflection_names_go_types() {
        check(&[
            (
                "{{ typeOf .name }} {{ typeOf .n }} {{ typeOf 1 }} {{ typeOf .map }} {{ typeOf .items }}",
                "string float64 int map[string]interface {} []interface {}",
            ),
            (
                "{{ kindOf .map }} {{ kindOf .items }} {{ kindOf true }} {{ kindOf .nothing }}",
                "map slice bool invalid",
            ),
            (
                "{{ typeIs \"string\" .name }} {{ typeIsLike \"*string\" .name }} {{ kindIs \"int\" 3 }}",
                "true true true",
            ),
            (
                "{{ deepEqual (list 1 2) (list 1 2) }} {{ deepEqual .map (dict \"a\" \"y\") }}",
                "true false",
            ),
        ]);
    }
}

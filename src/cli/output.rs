//! The one output vocabulary of every command that prints objects, as kubectl's:
//! `-o table|wide|yaml|json|name` (`text` is `table`), and how a command's result is printed in
//! each. A command says what its result is as data, as `kind.group/name` lines and as a table
//! ([`Printable`]); [`OutputFormat::print`] picks one.

use serde::Serialize;

/// `-o`: how a command prints what it found or did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// A table, or the command's text report (`text` is the same).
    #[default]
    #[value(alias = "text")]
    Table,
    /// The table with more columns.
    Wide,
    /// The data as YAML.
    Yaml,
    /// The data as JSON.
    Json,
    /// One `kind.group/name` per object, as `kubectl get -o name`.
    Name,
}

/// A command's result, printable in every [`OutputFormat`].
pub trait Printable {
    /// What `-o json` and `-o yaml` print.
    fn data(&self) -> impl Serialize + '_;
    /// The objects as `kind.group/name` (see [`object_name`]), for `-o name`.
    fn names(&self) -> Vec<String>;
    /// The table or text report; `wide` adds columns.
    fn table(&self, wide: bool) -> String;
}

impl OutputFormat {
    /// `printable` as this format asks, ending in a newline (nothing for `-o name` of no
    /// object).
    ///
    /// # Errors
    /// The data cannot be serialized.
    pub fn print(self, printable: &impl Printable) -> anyhow::Result<String> {
        Ok(match self {
            Self::Table => printable.table(false),
            Self::Wide => printable.table(true),
            Self::Yaml => serde_saphyr::to_string(&printable.data())?,
            Self::Json => serde_json::to_string_pretty(&printable.data())? + "\n",
            Self::Name => printable
                .names()
                .into_iter()
                .map(|name| name + "\n")
                .collect(),
        })
    }
}

/// An object as kubectl's `-o name` writes it: the kind in lower case, `.group` unless it is
/// the core group, `/name` (`deployment.apps/web`, `configmap/settings`,
/// `application.flotilla.dev/shop`).
#[must_use]
pub fn object_name(group: &str, kind: &str, name: &str) -> String {
    let kind = kind.to_lowercase();
    if group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{group}/{name}")
    }
}

/// `object_name` of a typed Kubernetes object.
#[must_use]
pub fn resource_name<K: kube::Resource<DynamicType = ()>>(object: &K) -> String {
    object_name(
        &K::group(&()),
        &K::kind(&()),
        object.meta().name.as_deref().unwrap_or_default(),
    )
}

/// An object a command wrote (created, changed or deleted), printable: the object for `-o
/// json|yaml`, its name for `-o name`, what was done (one line, for people) for the table.
pub struct Written<'a, K> {
    /// The object as the server returned it (or as it was, when deleted).
    pub object: &'a K,
    /// What was done, e.g. `application 'web' created`.
    pub message: String,
}

impl<K> Printable for Written<'_, K>
where
    K: kube::Resource<DynamicType = ()> + Serialize,
{
    fn data(&self) -> impl Serialize + '_ {
        self.object
    }

    fn names(&self) -> Vec<String> {
        vec![resource_name(self.object)]
    }

    fn table(&self, _wide: bool) -> String {
        format!("{}\n", self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Two;

    impl Printable for Two {
        fn data(&self) -> impl Serialize + '_ {
            ["a", "b"]
        }
        fn names(&self) -> Vec<String> {
            vec![
                object_name("apps", "Deployment", "a"),
                object_name("", "ConfigMap", "b"),
            ]
        }
        fn table(&self, wide: bool) -> String {
            if wide { "NAME  X\n" } else { "NAME\n" }.to_owned()
        }
    }

    #[test]
    fn each_format_prints_its_part() {
        let print = |format: OutputFormat| format.print(&Two).unwrap();
        assert_eq!(print(OutputFormat::Table), "NAME\n");
        assert_eq!(print(OutputFormat::Wide), "NAME  X\n");
        assert_eq!(print(OutputFormat::Json), "[\n  \"a\",\n  \"b\"\n]\n");
        assert_eq!(print(OutputFormat::Yaml), "- a\n- b\n");
        assert_eq!(
            print(OutputFormat::Name),
            "deployment.apps/a\nconfigmap/b\n"
        );
    }

    #[test]
    fn text_is_table() {
        use clap::ValueEnum;
        assert_eq!(
            OutputFormat::from_str("text", false),
            Ok(OutputFormat::Table)
        );
    }
}

//! Helpers shared by tests/cli_output.rs and tests/cli_output_controlplane.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `flotilla ARGS...` to its end.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("flotilla runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `ARGS -o FORMAT` for each format, run by `run`: the outputs, by format.
pub struct Printed {
    pub table: String,
    pub text: String,
    pub wide: String,
    pub yaml: String,
    pub json: String,
    pub name: String,
}

pub fn every_format(run: impl Fn(&str) -> Output) -> Printed {
    let print = |format: &str| {
        let output = run(format);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "-o {format}: {stderr}"
        );
        stdout(&output)
    };
    Printed {
        table: print("table"),
        text: print("text"),
        wide: print("wide"),
        yaml: print("yaml"),
        json: print("json"),
        name: print("name"),
    }
}

impl Printed {
    /// The checks every command meets: `text` is `table`; `yaml` and `json` hold the same
    /// data; `wide`'s header has the table's columns (in order) and `added`; `name` is `names`.
    pub fn check(&self, added: &[&str], names: &[String]) {
        assert_eq!(self.text, self.table);
        let json: Value = serde_json::from_str(&self.json).expect("-o json is JSON");
        let yaml: Value = serde_saphyr::from_str(&self.yaml).expect("-o yaml is YAML");
        assert_eq!(yaml, json);
        let header = |text: &str, heading: &str| -> Vec<String> {
            let line = text
                .lines()
                .find(|line| line.starts_with(heading))
                .unwrap_or_else(|| panic!("no header {heading}: {text}"));
            line.split("  ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let first = self
            .table
            .lines()
            .find(|l| l.chars().all(|c| c.is_ascii_uppercase() || c == ' ') && !l.is_empty())
            .expect("a header line");
        let heading = first.split(' ').next().unwrap();
        let narrow = header(&self.table, heading);
        let wide = header(&self.wide, heading);
        let kept: Vec<&String> = wide.iter().filter(|c| narrow.contains(c)).collect();
        assert_eq!(kept, narrow.iter().collect::<Vec<_>>(), "{}", self.wide);
        for column in added {
            assert!(
                wide.iter().any(|c| c == column) && !narrow.iter().any(|c| c == column),
                "{column} only in wide:\n{}\n{}",
                self.table,
                self.wide
            );
        }
        assert_eq!(
            self.name.lines().collect::<Vec<_>>(),
            names,
            "{}",
            self.name
        );
    }
}

pub fn applications(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|name| format!("application.flotilla.dev/{name}"))
        .collect()
}

pub fn three_tier_args() -> Vec<&'static str> {
    vec![
        "examples/three-tier-stack.yaml",
        "--repo",
        "https://git.example.com/acme/platform-manifests.git=examples/repos/platform-manifests",
    ]
}

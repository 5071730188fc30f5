//! One custom health check in Argo CD's format: a Lua script that reads the live object as `obj`
//! and returns `{status = "...", message = "..."}`. Each run gets a fresh interpreter (Lua 5.1,
//! the dialect of Argo CD's gopher-lua) with only the `string`, `table` and `math` libraries and
//! no way to load code or reach files, bounded in instructions, time and memory, so a script that
//! loops or allocates forever is stopped and named. A script given the open libraries (Argo CD's
//! `useOpenLibs`) also gets the clock functions of `os` (`time`, `date`, `clock`, `difftime`),
//! the safe part of `os` Argo CD offers; nothing reaching files or processes.

use std::cell::Cell;
use std::rc::Rc;
use std::str::FromStr;
use std::time::{Duration, Instant};

use mlua::{HookTriggers, Lua, LuaOptions, LuaSerdeExt, StdLib, VmState};
use serde_json::Value;

use super::{Health, HealthStatus};

/// Instructions a check may run (in steps of [`STEP`]).
pub const INSTRUCTION_LIMIT: u32 = 10_000_000;
/// How long a check may run: library functions (string building) take time without counting
/// instructions.
pub const TIME_LIMIT: Duration = Duration::from_secs(1);
/// Bytes a check's interpreter may allocate.
pub const MEMORY_LIMIT: usize = 32 * 1024 * 1024;
/// How often (in instructions) the budget and the clock are checked.
const STEP: u32 = 1_000;

/// Base functions a check must not have: they load code or reach outside the interpreter.
const REMOVED_GLOBALS: [&str; 8] = [
    "dofile",
    "loadfile",
    "load",
    "loadstring",
    "require",
    "module",
    "collectgarbage",
    "print",
];

/// A check that could not decide.
#[derive(Debug, thiserror::Error)]
pub enum LuaError {
    #[error("health check {script}: {source}")]
    Script {
        script: String,
        #[source]
        source: mlua::Error,
    },
    #[error("health check {script}: returned {returned}, expected a table with a status")]
    Shape { script: String, returned: String },
    #[error("health check {script}: {status:?} is not a health status")]
    Status { script: String, status: String },
}

/// The `os` functions a script given the open libraries keeps.
const SAFE_OS: [&str; 4] = ["time", "date", "clock", "difftime"];

/// A health check script and the name it is reported by (its configuration key or file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LuaCheck {
    pub name: String,
    pub source: String,
    /// Whether the script gets the open libraries (Argo CD's `useOpenLibs`).
    pub open_libs: bool,
}

impl LuaCheck {
    /// Compiles the script without running it, so a syntax error is found when the settings
    /// are read rather than on the first object it checks.
    ///
    /// # Errors
    /// The script does not compile (the error names the script, line and what is wrong).
    pub fn compile(&self) -> Result<(), LuaError> {
        let script = |source| LuaError::Script {
            script: self.name.clone(),
            source,
        };
        let lua = sandbox(self.open_libs).map_err(script)?;
        lua.load(&self.source)
            .set_name(format!("={}", self.name))
            .into_function()
            .map(drop)
            .map_err(script)
    }

    /// The health the script gives `object`.
    ///
    /// # Errors
    /// A script that fails, exceeds its limits, or returns no known status.
    pub fn run(&self, object: &Value) -> Result<Health, LuaError> {
        let script = |source| LuaError::Script {
            script: self.name.clone(),
            source,
        };
        let lua = sandbox(self.open_libs).map_err(script)?;
        let options = mlua::serde::SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false);
        let obj = lua.to_value_with(object, options).map_err(script)?;
        lua.globals().set("obj", obj).map_err(script)?;
        let returned: mlua::Value = lua
            .load(&self.source)
            .set_name(format!("={}", self.name))
            .eval()
            .map_err(script)?;
        let shape = |returned: &mlua::Value| LuaError::Shape {
            script: self.name.clone(),
            returned: returned.type_name().to_owned(),
        };
        let table = returned.as_table().ok_or_else(|| shape(&returned))?;
        let status: Option<String> = table.get("status").map_err(script)?;
        let message: Option<String> = table.get("message").map_err(script)?;
        let status = status.ok_or_else(|| shape(&returned))?;
        let status = HealthStatus::from_str(&status).map_err(|_| LuaError::Status {
            script: self.name.clone(),
            status,
        })?;
        Ok(Health::new(status, message.unwrap_or_default()))
    }
}

/// A fresh interpreter with the safe libraries (and the clock functions of `os` with
/// `open_libs`), the limits, and no loaders.
fn sandbox(open_libs: bool) -> mlua::Result<Lua> {
    let mut libraries = StdLib::STRING | StdLib::TABLE | StdLib::MATH;
    if open_libs {
        libraries |= StdLib::OS;
    }
    let lua = Lua::new_with(libraries, LuaOptions::default())?;
    if open_libs {
        let os: mlua::Table = lua.globals().get("os")?;
        let safe = lua.create_table()?;
        for name in SAFE_OS {
            safe.set(name, os.get::<mlua::Value>(name)?)?;
        }
        lua.globals().set("os", safe)?;
    }
    lua.set_memory_limit(MEMORY_LIMIT)?;
    let left = Rc::new(Cell::new(INSTRUCTION_LIMIT / STEP));
    let deadline = Instant::now() + TIME_LIMIT;
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(STEP),
        move |_, _| {
            if left.get() == 0 {
                return Err(mlua::Error::runtime(format!(
                    "stopped after {INSTRUCTION_LIMIT} instructions"
                )));
            }
            if Instant::now() >= deadline {
                return Err(mlua::Error::runtime(format!(
                    "stopped after running for {TIME_LIMIT:?}"
                )));
            }
            left.set(left.get() - 1);
            Ok(VmState::Continue)
        },
    )?;
    let globals = lua.globals();
    for name in REMOVED_GLOBALS {
        globals.set(name, mlua::Nil)?;
    }
    Ok(lua)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(source: &str) -> LuaCheck {
        LuaCheck {
            name: "resource.customizations.health.example.com_Widget".into(),
            source: source.into(),
            open_libs: false,
        }
    }

    /// The cert-manager check as Argo CD users write it in `argocd-cm`.
    const CERTIFICATE: &str = r#"
hs = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for i, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" and condition.status == "False" then
      hs.status = "Degraded"
      hs.message = condition.message
      return hs
    end
    if condition.type == "Ready" and condition.status == "True" then
      hs.status = "Healthy"
      hs.message = condition.message
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = "Waiting for certificate"
return hs
"#;

    #[test]
    fn argo_cd_scripts_decide() {
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "message": "issued"}]}});
        let failed = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "message": "denied"}]}});
        let fresh = json!({"metadata": {"name": "c"}, "status": null});
        let cases = [
            (ready, HealthStatus::Healthy, "issued"),
            (failed, HealthStatus::Degraded, "denied"),
            (fresh, HealthStatus::Progressing, "Waiting for certificate"),
        ];
        for (object, status, message) in cases {
            let health = check(CERTIFICATE).run(&object).unwrap();
            assert_eq!(
                (health.status, health.message.as_str()),
                (status, message),
                "{object}"
            );
        }
    }

    #[test]
    fn open_libraries_add_the_clock_and_nothing_that_reaches_out() {
        let open = |source: &str| LuaCheck {
            open_libs: true,
            ..check(source)
        };
        let dated = open("return {status = 'Healthy', message = os.date('!%Y', 0)}")
            .run(&json!({}))
            .unwrap();
        assert_eq!(dated.message, "1970");
        for source in [
            "return os.execute('true')",
            "return os.getenv('HOME')",
            "return io.open('/etc/passwd')",
            "return os.remove('/tmp/x')",
        ] {
            let error = open(source).run(&json!({})).unwrap_err().to_string();
            assert!(error.contains("attempt to"), "{source}: {error}");
        }
    }

    #[test]
    fn failures_name_the_script() {
        let object = json!({});
        let cases = [
            ("while true do end", "stopped after 10000000 instructions"),
            ("local s = 'x' while true do s = s .. s end", "memory"),
            (
                // Each step is a long library call and few instructions.
                "local t = {} while true do t[#t + 1] = string.rep('x', 1048576) end",
                "stopped after running for 1s",
            ),
            (
                "return 1",
                "returned integer, expected a table with a status",
            ),
            (
                "return {status = 'Fine'}",
                "\"Fine\" is not a health status",
            ),
            ("return obj.missing.field", "attempt to index"),
            ("return dofile('/etc/passwd')", "attempt to call"),
            ("return io.open('/etc/passwd')", "attempt to index"),
            ("return os.execute('true')", "attempt to index"),
            ("return {status = os.date('%Y')}", "attempt to index"),
        ];
        for (source, expected) in cases {
            let error = check(source).run(&object).unwrap_err().to_string();
            assert!(
                error.starts_with(
                    "health check resource.customizations.health.example.com_Widget: "
                ),
                "{source}: {error}"
            );
            assert!(error.contains(expected), "{source}: {error}");
        }
    }
}

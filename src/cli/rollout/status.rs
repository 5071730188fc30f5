//! `flotilla rollout status APPSET [--watch]`: the rollout as the controller last wrote it — its
//! conditions, then one row per Application grouped by step, with rollout state, health, sync,
//! target revision, time in that state and message (`-o wide`: not shortened). `--watch` redraws
//! it as it changes. `-o yaml|json` prints the ApplicationSet's status, `-o name` its
//! Applications.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::AppSetArgs;
use crate::cli::connect::shutdown_signal;
use crate::cli::output::{OutputFormat, Printable, object_name};
use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::{
    ApplicationSetApplicationStatus, ConditionStatus,
};
use flotilla_core::table::Table;
use flotilla_generators::duration::format_duration;

/// How often `--watch` reads the ApplicationSet.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// Longest message shown in a row.
const MESSAGE_WIDTH: usize = 80;

/// Arguments of `flotilla rollout status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: AppSetArgs,
    /// Keep redrawing the table until interrupted.
    #[arg(long, short = 'w')]
    pub watch: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// An ApplicationSet's rollout at a moment, as `status` prints it.
struct Status<'a> {
    appset: &'a ApplicationSet,
    now: Timestamp,
}

impl Printable for Status<'_> {
    /// The ApplicationSet's status.
    fn data(&self) -> impl serde::Serialize + '_ {
        &self.appset.status
    }

    fn names(&self) -> Vec<String> {
        let entries = self
            .appset
            .status
            .iter()
            .flat_map(|s| &s.application_status);
        entries
            .map(|e| object_name(flotilla_core::api::GROUP, "Application", &e.application))
            .collect()
    }

    fn table(&self, wide: bool) -> String {
        status_table(self.appset, self.now, wide)
    }
}

/// Prints the table once, or redraws it whenever it changes until Ctrl-C with `--watch`.
///
/// # Errors
/// The ApplicationSet cannot be read.
pub async fn run(args: &StatusArgs) -> anyhow::Result<()> {
    let (client, namespace) = args.target.connect().await?;
    if !args.watch {
        let appset = args.target.get_with_rollout(&client, &namespace).await?;
        let now = Timestamp::now();
        print!(
            "{}",
            args.output.print(&Status {
                appset: &appset,
                now
            })?
        );
        return Ok(());
    }
    let clear = std::io::stdout().is_terminal()
        && matches!(args.output, OutputFormat::Table | OutputFormat::Wide);
    let stop = shutdown_signal();
    tokio::pin!(stop);
    let mut shown = String::new();
    loop {
        let appset = args.target.get_with_rollout(&client, &namespace).await?;
        let now = Timestamp::now();
        let table = args.output.print(&Status {
            appset: &appset,
            now,
        })?;
        if table != shown {
            if clear {
                print!("\x1b[2J\x1b[H");
            } else if !shown.is_empty() {
                println!();
            }
            print!("{table}");
            shown = table;
        }
        tokio::select! {
            () = &mut stop => return Ok(()),
            () = tokio::time::sleep(WATCH_INTERVAL) => {}
        }
    }
}

/// The table for `appset` at `now`: a heading with the rollout's conditions, then its
/// Applications by step (step `-1`, in no step, last); messages are shortened unless `wide`.
#[must_use]
pub fn status_table(appset: &ApplicationSet, now: Timestamp, wide: bool) -> String {
    let name = appset.metadata.name.as_deref().unwrap_or_default();
    let strategy = appset.spec.strategy.as_ref();
    let paused = if strategy.is_some_and(|s| s.paused) {
        " (paused)"
    } else {
        ""
    };
    let mut out = format!("ApplicationSet {name}{paused}\n");
    let Some(status) = appset.status.as_ref() else {
        out.push_str("no status yet: the controller has not reconciled it\n");
        return out;
    };
    for condition in &status.conditions {
        let value = match condition.status {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        };
        let message = if condition.message.is_empty() {
            String::new()
        } else {
            format!(": {}", condition.message)
        };
        let _ = writeln!(
            out,
            "{:?}={value} ({}){message}",
            condition.type_, condition.reason
        );
    }
    if status.application_status.is_empty() {
        out.push_str("no rollout status (not a RollingSync, or not reconciled yet)\n");
        return out;
    }
    let mut entries: Vec<&ApplicationSetApplicationStatus> =
        status.application_status.iter().collect();
    entries.sort_by_key(|e| {
        let step = e.step.parse::<i64>().unwrap_or(-1);
        (step < 1, step, e.application.clone())
    });
    let mut table = Table::new(&[
        "STEP",
        "APPLICATION",
        "ROLLOUT",
        "HEALTH",
        "SYNC",
        "TARGET",
        "SINCE",
        "MESSAGE",
    ]);
    for entry in entries {
        let resource = status
            .resources
            .iter()
            .find(|r| r.name == entry.application);
        let health = resource
            .and_then(|r| r.health.as_ref())
            .map_or("-", |h| h.status.as_str());
        let sync = resource.and_then(|r| r.status).map_or("-", |s| s.as_str());
        let since = entry.last_transition_time.as_ref().map_or_else(
            || "-".to_string(),
            |t| {
                let seconds = now.as_second().saturating_sub(t.0.as_second()).max(0);
                format_duration(Duration::from_secs(seconds.unsigned_abs()))
            },
        );
        let target: Vec<&str> = entry
            .target_revisions
            .iter()
            .map(|r| r.get(..7).unwrap_or(r))
            .collect();
        let mut message = entry.message.clone();
        if !wide && message.chars().count() > MESSAGE_WIDTH {
            message = message.chars().take(MESSAGE_WIDTH - 3).collect::<String>() + "...";
        }
        table.row(vec![
            entry.step.clone(),
            entry.application.clone(),
            entry.status.as_str().to_string(),
            health.to_string(),
            sync.to_string(),
            target.join(","),
            since,
            message,
        ]);
    }
    out.push_str(&table.render());
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use flotilla_core::controller::appset::test_fixtures::appset;

    #[test]
    fn rows_are_grouped_by_step_with_health_sync_and_age() {
        let appset = appset(
            json!({"type": "RollingSync", "paused": true}),
            json!({
                "conditions": [{"type": "RolloutProgressing", "status": "True", "reason": "RolloutPaused", "message": "step 2 of 2 paused"}],
                "applicationStatus": [
                    {"application": "stray", "status": "Waiting", "step": "-1"},
                    {"application": "web", "status": "Progressing", "step": "2", "targetRevisions": ["0123456789abcdef"],
                     "lastTransitionTime": "2025-01-01T00:00:00Z", "message": "sync started"},
                    {"application": "db", "status": "Healthy", "step": "1", "lastTransitionTime": "2025-01-01T00:00:00Z"}
                ],
                "resources": [
                    {"group": "flotilla.dev", "version": "v1alpha1", "kind": "Application", "namespace": "ns", "name": "db",
                     "status": "Synced", "health": {"status": "Healthy"}},
                    {"group": "flotilla.dev", "version": "v1alpha1", "kind": "Application", "namespace": "ns", "name": "web",
                     "status": "OutOfSync", "health": {"status": "Progressing"}}
                ]
            }),
        );
        let now: Timestamp = "2025-01-01T00:01:30Z".parse().unwrap();
        let expected = "\
ApplicationSet stack (paused)
RolloutProgressing=True (RolloutPaused): step 2 of 2 paused
STEP  APPLICATION  ROLLOUT      HEALTH       SYNC       TARGET   SINCE  MESSAGE
1     db           Healthy      Healthy      Synced              1m30s
2     web          Progressing  Progressing  OutOfSync  0123456  1m30s  sync started
-1    stray        Waiting      -            -                   -
";
        assert_eq!(status_table(&appset, now, false), expected);
    }

    #[test]
    fn an_unreconciled_set_says_so() {
        let appset = appset(Value::Null, Value::Null);
        assert!(status_table(&appset, Timestamp::now(), false).ends_with("not reconciled it\n"));
    }
}

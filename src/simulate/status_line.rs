//! What `flotilla simulate` shows on stderr while it runs, as text (pure): on a terminal one
//! status line, redrawn in place — virtual time, step k/N, Applications synced of all, the
//! latest event — and otherwise one summary line once the rollout ended.

use super::driver::Progress;
use super::report::{Report, format_seconds};

/// `[   2m30s] step 2/3 · 412/1000 synced · platform-backend: sync triggered`, cut to `width`
/// characters (with `…`) so the terminal never wraps it.
#[must_use]
pub fn status_line(progress: &Progress, width: usize) -> String {
    let standing = progress.standing;
    let step = standing
        .step
        .map(|(k, n)| format!("step {k}/{n} · "))
        .unwrap_or_default();
    let line = format!(
        "[{:>8}] {step}{}/{} synced · {}: {}",
        format_seconds(progress.at.as_secs_f64()),
        standing.synced,
        standing.total,
        progress.app,
        progress.text
    );
    let line = line.replace(['\n', '\r'], " ");
    if line.chars().count() <= width {
        return line;
    }
    let kept: String = line.chars().take(width.saturating_sub(1)).collect();
    kept + "…"
}

/// `simulate: Complete after 41m20s (virtual time): 1000/1000 Applications synced, 0 failed,
/// 0 not synced; 3/3 steps complete`.
#[must_use]
pub fn summary_line(report: &Report) -> String {
    let count = |result: &str| {
        report
            .applications
            .iter()
            .filter(|app| app.result == result)
            .count()
    };
    let failed = report
        .applications
        .iter()
        .filter(|app| !matches!(app.result.as_str(), "Succeeded" | "NotSynced"))
        .count();
    let steps = if report.steps.is_empty() {
        String::new()
    } else {
        let complete = report
            .steps
            .iter()
            .filter(|step| step.state.starts_with("Complete"))
            .count();
        format!("; {complete}/{} steps complete", report.steps.len())
    };
    format!(
        "simulate: {:?} after {} (virtual time): {}/{} Applications synced, {failed} failed, {} not synced{steps}",
        report.ending,
        format_seconds(report.total_seconds),
        count("Succeeded"),
        report.applications.len(),
        count("NotSynced"),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::simulate::Standing;

    fn progress(step: Option<(usize, usize)>) -> Progress<'static> {
        Progress {
            at: Duration::from_secs(150),
            app: "platform-backend",
            text: "apply Sync wave 0: Deployment production/api".to_owned(),
            standing: Standing {
                step,
                synced: 412,
                total: 1000,
            },
        }
    }

    #[test]
    fn shows_time_step_count_and_the_latest_event_within_the_width() {
        assert_eq!(
            status_line(&progress(Some((2, 3))), 200),
            "[   2m30s] step 2/3 · 412/1000 synced · platform-backend: apply Sync wave 0: Deployment production/api"
        );
        assert_eq!(
            status_line(&progress(None), 200),
            "[   2m30s] 412/1000 synced · platform-backend: apply Sync wave 0: Deployment production/api"
        );
        let cut = status_line(&progress(Some((2, 3))), 40);
        assert_eq!(cut, "[   2m30s] step 2/3 · 412/1000 synced ·…");
        assert_eq!(cut.chars().count(), 40);
    }
}

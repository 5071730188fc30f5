//! Why a sync waits for a window, and when it may happen: the window's name and summary and the
//! instant the Application could sync next, as text (`window 'prod freeze' (deny 0 16 * * 5 for
//! 64h, Europe/Berlin) — opens Mon 08:00 Europe/Berlin`). This is what the rollout's input, the
//! Application's condition, `flotilla windows` and `flotilla simulate` show.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

/// How far ahead the next opening is searched.
pub const SEARCH_HORIZON_DAYS: i64 = 28;

/// A sync held back by a window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowBlock {
    /// The window's name: its description, else kind and schedule.
    pub window: String,
    /// `deny 0 16 * * 5 for 64h, Europe/Berlin`.
    pub summary: String,
    /// When a sync could happen next (`None`: not within the search horizon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<Timestamp>,
    /// `opens_at` on the window's wall clock: `Mon 08:00 Europe/Berlin`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub opens: String,
}

impl WindowBlock {
    /// `window 'prod freeze' (deny 0 16 * * 5 for 64h, Europe/Berlin) — opens Mon 08:00
    /// Europe/Berlin`.
    #[must_use]
    pub fn text(&self) -> String {
        format!(
            "window '{}' ({}) — {}",
            self.window,
            self.summary,
            self.opening()
        )
    }

    /// `window 'prod freeze' (opens Mon 08:00 Europe/Berlin)`.
    #[must_use]
    pub fn short(&self) -> String {
        format!("window '{}' ({})", self.window, self.opening())
    }

    fn opening(&self) -> String {
        if self.opens.is_empty() {
            format!("does not open within {SEARCH_HORIZON_DAYS} days")
        } else {
            format!("opens {}", self.opens)
        }
    }
}

/// `t` on `zone`'s wall clock: `Mon 08:00 Europe/Berlin`, with the date when it is more than six
/// days after `now` (`Mon 2026-12-14 08:00 Europe/Berlin`).
#[must_use]
pub fn wall_clock(t: Timestamp, zone: &TimeZone, now: Timestamp) -> String {
    let zoned = t.to_zoned(zone.clone());
    let far = t.duration_since(now).as_secs() > 6 * 24 * 3600;
    let format = if far { "%a %Y-%m-%d %H:%M" } else { "%a %H:%M" };
    format!(
        "{} {}",
        zoned.strftime(format),
        zone.iana_name().unwrap_or("UTC")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        let now: Timestamp = "2026-12-04T15:30:00Z".parse().unwrap();
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let monday: Timestamp = "2026-12-07T07:00:00Z".parse().unwrap();
        let block = WindowBlock {
            window: "prod freeze".to_owned(),
            summary: "deny 0 16 * * 5 for 64h, Europe/Berlin".to_owned(),
            opens_at: Some(monday),
            opens: wall_clock(monday, &berlin, now),
        };
        assert_eq!(
            block.text(),
            "window 'prod freeze' (deny 0 16 * * 5 for 64h, Europe/Berlin) — opens Mon 08:00 Europe/Berlin"
        );
        assert_eq!(
            block.short(),
            "window 'prod freeze' (opens Mon 08:00 Europe/Berlin)"
        );
        let later: Timestamp = "2026-12-14T07:00:00Z".parse().unwrap();
        assert_eq!(
            wall_clock(later, &TimeZone::UTC, now),
            "Mon 2026-12-14 07:00 UTC"
        );
        let never = WindowBlock {
            opens_at: None,
            opens: String::new(),
            ..block
        };
        assert_eq!(
            never.short(),
            "window 'prod freeze' (does not open within 28 days)"
        );
    }
}

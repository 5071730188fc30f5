//! How an Application's spec becomes the settings of the code that acts on it: directory
//! loading options from `source.directory`, and the executor's retry policy and prune options
//! from `syncPolicy`. Shared by `flotilla sync` and the Application controller.

use crate::duration::{DurationError, parse_duration};
use crate::manifest::DirectoryOptions;
use crate::sync::execute::RetryPolicy;

use super::application::{ApplicationSource, SyncPolicy};

/// Retries are capped: Argo CD's negative limit ("forever") becomes this many.
pub const MAX_RETRIES: usize = 100;

/// The Application-wide sync option that prunes after every Sync wave is Healthy.
pub const PRUNE_LAST: &str = "PruneLast=true";

impl ApplicationSource {
    /// The manifest directory options `source.directory` asks for.
    #[must_use]
    pub fn directory_options(&self) -> DirectoryOptions {
        self.directory
            .as_ref()
            .map(|d| DirectoryOptions {
                recurse: d.recurse,
                include: Some(d.include.clone()).filter(|s| !s.is_empty()),
                exclude: Some(d.exclude.clone()).filter(|s| !s.is_empty()),
            })
            .unwrap_or_default()
    }
}

impl SyncPolicy {
    /// `retry` as the executor's policy (Argo CD's defaults for missing fields), if set.
    ///
    /// # Errors
    /// A backoff duration that does not parse.
    pub fn retry_policy(&self) -> Result<Option<RetryPolicy>, DurationError> {
        let Some(retry) = &self.retry else {
            return Ok(None);
        };
        let defaults = RetryPolicy::default();
        let backoff = retry.backoff.as_ref();
        let duration =
            |text: Option<&String>, default| text.map_or(Ok(default), |t| parse_duration(t));
        Ok(Some(RetryPolicy {
            limit: retry.limit.map_or(0, |limit| {
                usize::try_from(limit).map_or(MAX_RETRIES, |l| l.min(MAX_RETRIES))
            }),
            duration: duration(backoff.and_then(|b| b.duration.as_ref()), defaults.duration)?,
            factor: backoff
                .and_then(|b| b.factor)
                .map_or(defaults.factor, |f| f as f32),
            max_duration: duration(
                backoff.and_then(|b| b.max_duration.as_ref()),
                defaults.max_duration,
            )?,
        }))
    }

    /// Whether `automated.prune` is set.
    #[must_use]
    pub fn automated_prune(&self) -> bool {
        self.automated.as_ref().is_some_and(|a| a.prune)
    }

    /// Whether `automated.allowEmpty` is set.
    #[must_use]
    pub fn automated_allow_empty(&self) -> bool {
        self.automated.as_ref().is_some_and(|a| a.allow_empty)
    }

    /// Whether `syncOptions` holds `PruneLast=true`.
    #[must_use]
    pub fn prune_last(&self) -> bool {
        self.sync_options.iter().any(|o| o == PRUNE_LAST)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::api::application::{Backoff, RetryStrategy};

    #[test]
    fn retry_defaults_negative_limits_and_bad_durations() {
        let policy = |limit, duration: Option<&str>| SyncPolicy {
            retry: Some(RetryStrategy {
                limit: Some(limit),
                backoff: Some(Backoff {
                    duration: duration.map(str::to_owned),
                    ..Backoff::default()
                }),
            }),
            ..SyncPolicy::default()
        };
        let read = policy(3, Some("2s")).retry_policy().unwrap().unwrap();
        assert_eq!(
            (read.limit, read.duration, read.max_duration),
            (3, Duration::from_secs(2), Duration::from_secs(180))
        );
        let forever = policy(-1, None).retry_policy().unwrap().unwrap();
        assert_eq!(forever.limit, MAX_RETRIES);
        assert!(policy(1, Some("soon")).retry_policy().is_err());
        assert_eq!(SyncPolicy::default().retry_policy().unwrap(), None);
    }

    #[test]
    fn prune_options() {
        let policy: SyncPolicy = serde_json::from_value(serde_json::json!({
            "automated": {"prune": true}, "syncOptions": ["PruneLast=true"]
        }))
        .unwrap();
        assert!(policy.automated_prune() && policy.prune_last());
        assert!(!SyncPolicy::default().automated_prune());
    }
}

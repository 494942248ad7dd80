//! `--batch-api` and its timing: model calls through the provider's Batch API.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::FlagGroup;
use crate::Flags;

/// Send model calls through the provider's Batch API (half price at OpenAI, answers within
/// 24 hours) instead of one request each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct BatchApiOptions {
    /// Send model calls through the provider's Batch API (/v1/files, /v1/batches): ready
    /// calls are collected into one batch, polled until answered; half price at OpenAI,
    /// answers within 24 h (`[prices] batch_discount` prices it).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub batch_api: bool,
    /// The longest the first ready call waits for others before their batch is submitted;
    /// it goes sooner once every running job waits on the Batch API (default: [llm.batch]
    /// linger_ms, else 2s; a request to `serve`: at least 1s).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", requires = "batch_api", value_parser = crate::parse_positive_duration))]
    #[serde(
        with = "super::text::duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "2s"))]
    pub batch_linger: Option<Duration>,
    /// First interval between polls of a submitted batch; each next one is 1.5 times longer
    /// (default: [llm.batch] poll_secs, else 5s; a request to `serve`: at least 1s).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", requires = "batch_api", value_parser = crate::parse_positive_duration))]
    #[serde(
        with = "super::text::duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "5s"))]
    pub batch_poll: Option<Duration>,
    /// Longest interval between polls (default: [llm.batch] poll_max_secs, else 5m; a
    /// request to `serve`: at least 1s).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", requires = "batch_api", value_parser = crate::parse_positive_duration))]
    #[serde(
        with = "super::text::duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "5m"))]
    pub batch_poll_max: Option<Duration>,
}

impl BatchApiOptions {
    /// The timing options set without `batch_api`, by name: they only go with it (as their
    /// flags `require` it).
    pub fn timing_without_batch_api(&self) -> Vec<String> {
        match self.batch_api {
            true => Vec::new(),
            false => super::text::changed(self),
        }
    }
}

/// The shortest interval a request to `planwave serve` may set (`batch_linger`, `batch_poll`,
/// `batch_poll_max`): each is how often the operator's key calls the provider, and a client
/// must not set that rate (1ms polled the provider some 20 times a second). The command line
/// and `planwave.toml` are the operator's own and are not bounded.
pub const REQUEST_MIN_INTERVAL: Duration = Duration::from_secs(1);

impl BatchApiOptions {
    /// The intervals set shorter than a request may ask for (`REQUEST_MIN_INTERVAL`), each
    /// as `NAME: ...`.
    pub fn intervals_under_request_floor(&self) -> Vec<String> {
        [
            ("batch_linger", self.batch_linger),
            ("batch_poll", self.batch_poll),
            ("batch_poll_max", self.batch_poll_max),
        ]
        .into_iter()
        .filter_map(|(name, d)| {
            let d = d?;
            (d < REQUEST_MIN_INTERVAL).then(|| {
                format!(
                    "{name}: at least {}s in a request (got {d:?}): it sets how often the server's key calls the provider",
                    REQUEST_MIN_INTERVAL.as_secs()
                )
            })
        })
        .collect()
    }
}

impl FlagGroup for BatchApiOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.batch_api = self.batch_api;
        flags.batch_linger = self.batch_linger;
        flags.batch_poll = self.batch_poll;
        flags.batch_poll_max = self.batch_poll_max;
    }
}

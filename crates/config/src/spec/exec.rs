//! How a plan is executed: `--concurrency`, `--schedule`, retries, the seed, time limits.

use std::time::Duration;

use planwave_record::Schedule;
use serde::{Deserialize, Serialize};

use super::FlagGroup;
use crate::Flags;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ScheduleArg {
    /// Start each task as soon as its own prerequisites are done.
    #[default]
    Dataflow,
    /// Start wave k+1 only when all of wave k is done (a barrier after every wave), for
    /// comparison.
    Waves,
}

/// How a plan is executed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ExecOptions {
    /// Most subagents in flight (default: no cap beyond the plan's own parallelism).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = crate::parse_count::<u64>))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    #[serde(deserialize_with = "super::text::count")]
    pub concurrency: Option<u64>,
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "dataflow"))]
    pub schedule: ScheduleArg,
    /// Retries of a task after a transient model error.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", default_value_t = 1))]
    pub retries: u32,
    /// Base of the exponential retry backoff (full jitter).
    #[cfg_attr(feature = "clap", arg(long, value_name = "MS", default_value_t = 200))]
    pub retry_backoff_ms: u64,
    /// Seed for the simulator and for retry jitter: the same seed replays the same run.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub seed: u64,
    /// A task still unfinished after this long (all attempts) fails with a timeout: seconds,
    /// or with a unit (90s, 2m) (default: planwave.toml `[run] task_timeout_secs`, else none).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", value_parser = crate::parse_positive_duration))]
    #[serde(with = "super::text::duration")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "90s"))]
    pub task_timeout: Option<Duration>,
    /// Stop the whole run after this long (seconds, or 90s, 2m, 1h), like Ctrl-C: finished
    /// work is kept and `planwave resume DIR` goes on; exit code 4 (default: planwave.toml
    /// `[run] deadline_secs`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", value_parser = crate::parse_positive_duration))]
    #[serde(with = "super::text::duration")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "10m"))]
    pub deadline: Option<Duration>,
    /// Start no model call once the job (a batch: all its jobs together) has used this many
    /// tokens, prompt and output; calls under way finish, the tasks left end `blocked` and
    /// `planwave resume DIR` with a larger budget goes on; exit code 6 (default: planwave.toml
    /// `[run] max_tokens_total`, else none).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = crate::parse_count::<u64>))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    #[serde(deserialize_with = "super::text::count")]
    pub max_tokens_total: Option<u64>,
    /// As `--max-tokens-total`, in money at the `[prices]` of the models called (which must
    /// be priced), e.g. `0.50` (default: planwave.toml `[run] max_cost`, else none).
    #[cfg_attr(feature = "clap", arg(long, value_name = "AMOUNT", value_parser = crate::parse_cost))]
    #[serde(deserialize_with = "super::text::some_cost")]
    pub max_cost: Option<f64>,
}

/// The command line's defaults, so a spec written without them means what the flags mean.
impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            concurrency: None,
            schedule: ScheduleArg::Dataflow,
            retries: 1,
            retry_backoff_ms: 200,
            seed: 0,
            task_timeout: None,
            deadline: None,
            max_tokens_total: None,
            max_cost: None,
        }
    }
}

impl FlagGroup for ExecOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.schedule = Some(match self.schedule {
            ScheduleArg::Dataflow => Schedule::Dataflow,
            ScheduleArg::Waves => Schedule::Waves,
        });
        flags.concurrency = self.concurrency.map(|c| c as usize);
        flags.retries = Some(self.retries);
        flags.retry_backoff = Some(Duration::from_millis(self.retry_backoff_ms));
        flags.seed = Some(self.seed);
        flags.task_timeout = self.task_timeout;
        flags.deadline = self.deadline;
        flags.max_tokens_total = self.max_tokens_total;
        flags.max_cost = self.max_cost;
    }
}

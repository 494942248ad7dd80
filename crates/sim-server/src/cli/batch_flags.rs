//! `planwave sim-llm serve`'s Batch API flags: what the simulated `/v1/batches` does.

use std::time::Duration;

use crate::BatchSimConfig;
use clap::Args;

#[derive(Debug, Args)]
pub struct BatchServeArgs {
    /// Batch API: a batch completes no sooner than this many milliseconds after it is
    /// created.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = planwave_config::parse_millis)]
    pub batch_delay_ms: f64,
    /// Batch API: share of request lines answered with a server error (status 500, in the
    /// batch's error file); which lines is drawn from --seed and each line's body, so a
    /// workload meets the same errors on every run.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = planwave_config::parse_share)]
    pub batch_line_error_rate: f64,
    /// Batch API: the first N batches expire; their unfinished lines end as `batch_expired`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub batch_expire_first: u64,
    /// Batch API: share of an expired or cancelled batch's lines completed before it ended.
    #[arg(long, value_name = "P", default_value_t = 0.5, value_parser = planwave_config::parse_share)]
    pub batch_partial: f64,
    /// Batch API: the largest input file accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 200 * 1024 * 1024)]
    pub batch_max_file_bytes: usize,
}

impl BatchServeArgs {
    pub fn config(&self) -> BatchSimConfig {
        BatchSimConfig {
            delay: Duration::from_secs_f64(self.batch_delay_ms / 1000.0),
            line_error_rate: self.batch_line_error_rate,
            expire_first: self.batch_expire_first,
            partial: self.batch_partial,
            max_file_bytes: self.batch_max_file_bytes,
        }
    }
}

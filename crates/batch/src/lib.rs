//! Batch jobs: the job file (`JOBS.jsonl`) and the batch summary (`batch.json`).
//!
//! [`parse_jobs`] turns the text of a job file into jobs plus bad lines, each bad line with
//! its number and a clear reason, so one bad line never stops the others. [`resolve_jobs`]
//! reads `plan_file`s, renders `template`s with their `vars` (`template.rs`,
//! minijinja, strict) and validates plans (still per line). [`BatchSummary`] is what
//! `batch.json` records (with [`BatchMetrics`], the planning and execution success rates),
//! and [`render_batch_table`] the table the command prints.
//!
//! This crate knows nothing of actors, models or the command line: running jobs is the
//! runner's business (`planwave_runner::ops::run_batch`).

mod jobs;
mod metrics;
mod resolve;
mod summary;
mod template;

pub use jobs::{BadLine, Job, JobFile, JobSource, json_kind, parse_jobs};
pub use metrics::{BatchMetrics, JobPlanning};
pub use resolve::{JobInput, ResolvedJob, resolve_jobs};
pub use summary::{BatchSummary, JobState, JobSummary, render_batch_table, transport_retries_line};

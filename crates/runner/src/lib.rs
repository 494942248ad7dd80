//! Runs one planwave job end to end, the same way for every front end: the CLI, the queue
//! worker (`planwave_queue`) and the HTTP server (`planwave_serve`).
//!
//! A front end parses its own input (flags, a queue message, a request body), resolves
//! [`planwave_config::Settings`], and calls in here:
//! - [`Resources::prepare`] builds the model client and prompt templates (checked before
//!   anything starts), [`Resources::start_mcp`] starts the MCP servers, and
//!   [`Resources::scope`] runs work with them and always shuts the servers down.
//! - [`execute_plan`] runs a validated plan into a run directory (journal, report, run.json).
//! - [`resume`] continues an interrupted run from its journal; [`research`] drives the
//!   reflective loop's rounds and publishes the best one; [`batch`] runs a job file.
//! - [`Invocation`] records and reads what started a run, so it can be resumed
//!   ([`BatchInvocation`]: a batch's command line).
//! - [`ops`]: the operations a front end calls for one job, [`ops::run`],
//!   [`ops::research`] and [`ops::resume`], from a `JobSpec` to a `JobOutcome`, with the
//!   directory claimed, locked and recorded, and one resume for every kind of run directory.
//!
//! What a person sees (progress bars, tables, exit codes) stays in the front end: the runner
//! reports through [`EventSink`](planwave_record::EventSink)s, [`Notes`] and return values.
//! [`term`] is the one thing a command-line front end borrows from here: how it prints
//! (escaped, ending quietly on a closed pipe), so every front end prints alike.

pub mod batch;
mod dir_holds;
mod error;
mod execute;
mod input;
mod input_size;
mod interrupt;
mod invocation;
mod notes;
pub mod ops;
mod outdir;
mod pdf;
mod plan_cache;
mod planning;
mod provider_batches;
mod research;
mod resources;
mod resume;
mod resume_loop;
mod rounds;
mod run_metrics;
mod streamed;
pub mod term;
mod trace_fields;
mod workdir;

pub use dir_holds::{DirHolds, dir_holds, last_provider_batch};
pub use error::{Context, Result, RunnerError};
pub use execute::{Execution, Unwatched, Watch, Watcher, execute_plan};
pub use input::{
    InvalidInput, load_plan, load_plan_with_tools, parse_plan_source, read_source, validate_plan,
};
pub use input_size::{
    DEFAULT_MAX_INPUT_BYTES, InputError, max_input_bytes, read_bounded, read_input,
    set_max_input_bytes,
};
pub use interrupt::{CtrlC, stop_signal, terminated};
pub use invocation::{BatchInvocation, Invocation, Origin};
pub use notes::{Notes, Silent, Stderr, printable};
pub use outdir::{claim_out_dir, inside};
pub use pdf::{find_chromium, print_pdf};
pub use plan_cache::{CALL_TIMES_FILE, CacheKey, MedianCall, PlanCache};
pub use planning::{GoalPlan, PlanRequest, describe_attempt, plan_goal, plan_goal_cached};
pub use provider_batches::{JobBatches, JobShare, LEDGER_FILE, Listening, ProviderBatches};
pub use research::{LoopRun, Research, ResearchOutcome, research};
pub use resources::{Resources, catalog, model_client, start_mcp, tool_catalog};
pub use resume::{Resumed, resumable_dir, resume, resume_opened, resume_presets};
pub use run_metrics::{RunsMetrics, is_run_dir, runs_metrics, runs_under};
pub use trace_fields::{record_run, record_status};
pub use workdir::{lock_run_dir, open_journal, open_journal_mirrored, open_run_dir};

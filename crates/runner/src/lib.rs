//! Runs one planwave job end to end, the same way for every front end: the CLI, the queue
//! worker (`planwave_queue`) and the HTTP server (`planwave_serve`).
//!
//! A front end parses its own input (flags, a queue message, a request body), resolves
//! [`planwave_config::Settings`], and calls [`ops`], the runner's public surface:
//! - [`ops::run`], [`ops::research`] and [`ops::resume`], from a `JobSpec` to a
//!   `JobOutcome`, with the directory claimed, locked and recorded (`invocation.json`), and
//!   one resume for every kind of run directory; [`ops::run_batch`] runs a job file;
//! - and below them what a front end needs to prepare a job ([`ops::Resources`]: the model
//!   client, templates and MCP servers, always shut down by its `scope`; loading and
//!   validating plans) and to tell its outcome.
//!
//! What a person sees (progress bars, tables, exit codes) stays in the front end: the runner
//! reports through [`EventSink`](planwave_record::EventSink)s, [`ops::Notes`] and return
//! values. [`term`] is the one thing a command-line front end borrows from here: how it
//! prints (escaped, ending quietly on a closed pipe), so every front end prints alike.
//! Everything else is the crate's own.

mod batch;
mod budget;
mod dir_holds;
mod error;
mod execute;
mod input;
mod input_size;
mod interrupt;
mod invocation;
mod needs_input;
mod notes;
pub mod ops;
mod outdir;
mod own_files;
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
mod validator;
mod workdir;

pub(crate) use error::{Result, RunnerError};
pub(crate) use execute::{Execution, Watcher, execute_plan};
pub(crate) use input::{InvalidInput, load_plan};
pub(crate) use input_size::InputError;

pub(crate) use invocation::{BatchInvocation, Invocation};
pub(crate) use notes::{Notes, printable};

pub(crate) use plan_cache::PlanCache;
pub(crate) use planning::{PlanRequest, plan_goal_cached};

pub(crate) use research::{Research, research};
pub(crate) use resources::Resources;
pub(crate) use resume::{resumable_dir, resume_opened};
pub(crate) use run_metrics::{is_run_dir, runs_under};
pub(crate) use trace_fields::{record_run, record_status};
pub(crate) use workdir::{lock_run_dir, open_journal, open_journal_mirrored, open_run_dir};

//! The executor: runs a [`ValidatedPlan`](planwave_plan::ValidatedPlan) as concurrent LLM
//! subagents on ractor actors and assembles the report.
//!
//! [`execute`] is the entry point. A [`supervisor`] actor owns the run: it asks the pure
//! [`Scheduler`] which tasks are ready, spawns one [`subagent`] actor per task as soon as that
//! task's own prerequisites are done, and turns failures (including panics) into `failed` and
//! `blocked` task records. An [`integrator`] actor collects outcomes, writes section files as
//! they arrive, and renders the report ([`report`]).
//!
//! This crate knows nothing of the command line, terminals or HTTP; it talks to models only
//! through [`planwave_llm::LlmProvider`] and reports progress only through [`EventSink`].

mod calls;
mod config;
mod context;
mod digest;
mod event;
mod gantt;
mod html;
mod journal;
mod mcp_events;
mod outcome;
mod quality;
mod report;
mod results;
mod run;
mod run_stream;
mod rundir;
mod scheduler;
mod shared;
mod stream_plan;
mod task_spans;
mod tool_answer;
mod tool_loop;
mod tool_step;
mod transitions;
mod untrusted;
mod writer_thread;

mod integrator;
mod subagent;
mod supervisor;

pub use config::{
    DEFAULT_CONTEXT_BUDGET_TOKENS, DEFAULT_MAX_TOOL_ROUNDS, RetryPolicy, RunConfig, Schedule,
    ToolProtocol,
};
pub use context::SectionCut;
pub use event::{Event, EventKind, EventSink, FanoutSink, JsonlOptions, JsonlSink, NullSink};
pub use html::{dag_svg, gantt_svg};
pub use journal::{Journal, JournalError, JournalMirror, LockError, Replay, ReplayError, RunLock};
pub use outcome::{
    CancelReason, FailureKind, PlanSource, ProviderInfoRecord, RunResult, RunStats, RunStatus,
    TaskRecord, TaskStatus, ToolCallRecord,
};
pub use planwave_llm::{CallRecord, timefmt};
pub use planwave_prompts::PromptSet;
pub use quality::{MIN_SECTION_CHARS, SectionWarning};
pub use report::mermaid_label;
pub use run::{EngineError, RunRequest, execute};
pub use run_stream::{PlanFeed, execute_streaming};
pub use rundir::{DirMirror, RunDir, RunDirError, is_leftover_temp, sanitize_file_stem};
pub use scheduler::Scheduler;
pub use stream_plan::{Admission, keep_map};
pub use supervisor::Preset;
pub use untrusted::is_hiding_char;

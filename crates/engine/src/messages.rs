//! The run's protocol: every message its actors exchange, and nothing else. The supervisor
//! is the root of the run's supervision tree and the only owner of its facts (records,
//! sections, results, model calls); subagents and the integrator hear what they need in their
//! arguments and answer by message. No actor module imports another's: each imports this one.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use planwave_record::{
    CallRecord, CancelReason, FailureKind, RunStats, SectionCut, SectionWarning, TaskRecord,
    ToolCallRecord, Usage,
};
use planwave_storage::JournalError;

use crate::shared::RunShared;

/// The reason a subagent gives when it stops after sending its report. The supervisor reads
/// it in the stop event, which ractor delivers before messages: the report is on its way.
pub(crate) const REPORTED: &str = "reported";

pub(crate) enum SupervisorMsg {
    /// Start up to one batch of ready tasks (sent to itself).
    Dispatch,
    /// A subagent of plan generation `generation` reports how its task ended.
    Ended(u32, Box<SubagentReport>),
    /// Model calls of a subagent that was stopped before it could report them.
    Calls(Vec<CallRecord>),
    /// The journal made task `index` (of the generation given) durable (or could not).
    Committed(u32, usize, Result<(), JournalError>),
    /// The plan grew or closed while running (a streamed plan): a new generation.
    Rebase(Box<Rebase>),
    /// Stop starting tasks, kill running subagents, and finish the run now.
    Cancel(CancelReason),
    /// Every task has ended and every subagent has stopped (sent to itself, so the calls of
    /// stopped subagents, queued before their stop events, are in).
    Settled,
    /// The integrator's summary and report.
    Integrated(Box<Integration>),
    /// The actor of task `index`'s subagent, while it is linked (for tests that kill it
    /// from outside).
    #[cfg(test)]
    Child(usize, ractor::RpcReplyPort<Option<ractor::ActorCell>>),
}

/// Why a task failed, as its subagent (or the supervisor, for one that never reported)
/// tells it: the message and what kind of failure it was, in one value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskFailure {
    /// A retryable error outlasted the task's retries or its time limit.
    Transient(String),
    /// Not worth retrying as it stands (a refusal, a rejected request, a bad step).
    Fatal(String),
    /// The subagent ended without reporting: a panic, a kill, a failed spawn.
    Crashed(String),
    /// Its model call was refused: the budget is spent. The task is `blocked`, not failed:
    /// a resume with a larger budget runs it.
    Budget(String),
}

impl TaskFailure {
    pub(crate) fn kind(&self) -> FailureKind {
        match self {
            TaskFailure::Transient(_) => FailureKind::Transient,
            TaskFailure::Fatal(_) | TaskFailure::Budget(_) => FailureKind::Fatal,
            TaskFailure::Crashed(_) => FailureKind::Crashed,
        }
    }

    pub(crate) fn into_message(self) -> String {
        match self {
            TaskFailure::Transient(m)
            | TaskFailure::Fatal(m)
            | TaskFailure::Crashed(m)
            | TaskFailure::Budget(m) => m,
        }
    }
}

/// What a subagent reports when it is done: its task's outcome and everything it spent.
#[derive(Debug)]
pub(crate) struct SubagentReport {
    pub index: usize,
    pub attempts: u32,
    pub finished_at: DateTime<Utc>,
    pub usage: Usage,
    /// Prerequisite sections cut to fit the context budget.
    pub context_cut: Vec<SectionCut>,
    /// The section, or why the task failed.
    pub result: Result<Arc<str>, TaskFailure>,
    /// Tool calls made by the task, every attempt.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model calls made by the task, every attempt: the supervisor keeps the run's.
    pub calls: Vec<CallRecord>,
    /// With a run directory: the section's hash once its file is durable, or why it could
    /// not be written.
    pub written: Option<Result<String, String>>,
    /// References that resolved to an empty string because their optional step failed.
    pub empty_refs: Vec<String>,
    /// The section's data-quality warnings, checked here, in parallel with other subagents,
    /// rather than for every section at the run's end (a tenth of a wide zero-latency run's
    /// instructions, all of it on the serial end).
    pub warnings: Vec<SectionWarning>,
    /// The result to keep with the task's record (`TaskRecord::result`), when its section
    /// would not read as the result references got.
    pub kept_result: Option<Box<serde_json::Value>>,
}

impl SubagentReport {
    /// A report of a task that failed before anything was spent on it.
    pub(crate) fn failed(index: usize, failure: TaskFailure) -> SubagentReport {
        SubagentReport {
            index,
            attempts: 1,
            finished_at: planwave_record::timefmt::now(),
            usage: Usage::default(),
            context_cut: Vec::new(),
            result: Err(failure),
            tool_calls: Vec::new(),
            calls: Vec::new(),
            written: None,
            empty_refs: Vec::new(),
            warnings: Vec::new(),
            kept_result: None,
        }
    }
}

/// The next plan of a running supervisor (a streamed plan).
pub(crate) struct Rebase {
    /// The run's shared state for the new plan (its plan and section files).
    pub shared: Arc<RunShared>,
    /// For each task of the current plan, its index in the new one; `None` drops it (a
    /// running subagent is stopped, a finished one's work is discarded).
    pub map: Vec<Option<usize>>,
    /// Set when the plan is final: the supervisor then starts the integrator for it, and the
    /// run may end once its tasks have.
    pub close: Option<Close>,
}

/// The whole plan's validity, for the `plan_completed` event.
pub(crate) struct Close {
    pub valid: bool,
    pub problems: Vec<String>,
}

pub(crate) enum IntegratorMsg {
    /// Completed sections: `(index, text, write)`, `write` false for sections restored from
    /// an earlier run. Handed over together (one message, not one per section: a batch was
    /// 256 sends and their channel blocks).
    Sections(Vec<(usize, Arc<str>, bool)>),
    /// Write the summary and the report; the answer goes to the supervisor as
    /// [`SupervisorMsg::Integrated`].
    Finish(Box<FinishRequest>),
}

pub(crate) struct FinishRequest {
    /// Shared, not copied: the supervisor gets them back once the integrator is done.
    pub records: Arc<Vec<TaskRecord>>,
    pub stats: RunStats,
    /// The `integrate` span the summary call and report rendering run in.
    pub span: tracing::Span,
    /// The run was stopped (Ctrl-C, SIGTERM, deadline): no model call starts, the summary
    /// is the plain one (a call would delay the exit by a whole model latency).
    pub stopped: Option<CancelReason>,
    /// The caller's cancellation: a stop that comes during integration lets a call in
    /// flight finish but starts no other (no retry).
    pub cancel: tokio_util::sync::CancellationToken,
}

/// What integration produced.
#[derive(Debug, Clone)]
pub(crate) struct Integration {
    pub report: String,
    pub summary_usage: Usage,
    /// The summary's model calls.
    pub calls: Vec<CallRecord>,
    /// Set when the summary could not come from the model (the report says so too).
    pub summary_error: Option<String>,
    /// Files that could not be written, with the reason; the run goes on without them.
    pub write_errors: Vec<String>,
    /// Which sections have a file on disk.
    pub written: Vec<bool>,
}

//! Run events: what happened, when. The engine emits them; sinks write `events.jsonl`, drive
//! progress displays, or stream to other programs.

use chrono::{DateTime, Utc};
use planwave_plan::TaskId;
use serde::{Deserialize, Serialize};

use crate::{CancelReason, Usage, timefmt};

/// One line of `events.jsonl`: a timestamp plus the event's own fields, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(serialize_with = "timefmt::serialize")]
    pub ts: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    pub fn now(kind: EventKind) -> Event {
        Event {
            ts: timefmt::now(),
            kind,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    RunStarted {
        run_id: uuid::Uuid,
        topic: String,
        tasks: usize,
        waves: usize,
        schedule: String,
        concurrency: Option<usize>,
        provider: String,
        model: String,
        simulated: bool,
    },
    /// All prerequisites done; the task waits for a slot (or the wave barrier).
    TaskReady {
        task: TaskId,
        wave: u32,
    },
    TaskStarted {
        task: TaskId,
        wave: u32,
        /// What the task is about: its title (name, else the description's first line, at
        /// most 200 bytes), so a progress view can say what started.
        #[serde(default)]
        description: String,
        /// The tool a tool step runs (`llm_call` included); absent for a subagent task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// How long the task waited between becoming ready and this start, for the sinks
        /// that measure dispatch (the fleet's metrics) without keeping a map of ready tasks.
        /// Not written: the `task_ready` and `task_started` times give it in a journal.
        #[serde(skip)]
        waited: Option<std::time::Duration>,
    },
    /// A transient failure; the task tries again after `delay_ms`.
    TaskRetry {
        task: TaskId,
        attempt: u32,
        error: String,
        delay_ms: u64,
    },
    TaskCompleted {
        task: TaskId,
        attempts: u32,
        duration_ms: f64,
        usage: Usage,
        /// The durable section file (`sections/<stem>.md`), written before this event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section_file: Option<String>,
        /// Its hash (see `planwave_storage::section_hash`), checked before a resume trusts it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section_hash: Option<String>,
        /// The section itself (when the run has a journal): committed with the completion in
        /// one sync, it is the durable copy, and `resume` writes the file back from it if the
        /// file did not survive a crash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section: Option<std::sync::Arc<str>>,
        /// The start of the output on one line (a step's result at a glance), at most
        /// [`PREVIEW_CHARS`] characters: what a progress view shows, with or without a journal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<String>,
        /// The step's result when its section text would read otherwise (the record's
        /// `result`): committed with the completion, so `resume` gives later steps the
        /// result the first attempt gave.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Box<serde_json::Value>>,
        /// The section was cut by the output cap: the task is `truncated`, not `completed`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    TaskFailed {
        task: TaskId,
        attempts: u32,
        error: String,
    },
    TaskBlocked {
        task: TaskId,
        blocked_by: TaskId,
    },
    /// One tool call attempt of a task (`outcome`: ok, tool_error, or error).
    ToolCall {
        task: TaskId,
        tool: String,
        server: String,
        attempt: u32,
        duration_ms: f64,
        outcome: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An MCP server started, failed, restarted after a crash, or stopped.
    McpServer {
        server: String,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// One model call (any role), successful or not.
    LlmCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<TaskId>,
        role: String,
        model: String,
        attempt: u32,
        duration_ms: f64,
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    RunFinished {
        run_id: uuid::Uuid,
        status: String,
        completed: usize,
        failed: usize,
        blocked: usize,
        duration_ms: f64,
        /// Why a cancelled run stopped (`interrupted`, `deadline`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<CancelReason>,
    },
    /// The reflective loop starts round `round` (before its planning).
    RoundStarted {
        round: u32,
        /// The planner is told the previous round's reflection.
        reflected: bool,
    },
    /// A pass of round `round` had failed tasks; `strategy` recovers them.
    Recovery {
        round: u32,
        pass: u32,
        strategy: String,
        /// The failed tasks being recovered.
        tasks: Vec<TaskId>,
    },
    /// The round's evaluation, once valid.
    Evaluation {
        round: u32,
        evaluation_id: String,
        overall_score: f64,
        correctness: f64,
        is_successful: bool,
    },
    /// The round's reflection, once valid.
    Reflection {
        round: u32,
        reflection_id: String,
        should_replan: bool,
    },
    /// Round `round` is over: its last pass's status, evaluated or not.
    RoundFinished {
        round: u32,
        status: String,
        passes: u32,
    },
    /// A streamed plan's task object arrived complete (`research` without `--no-stream-plan`):
    /// `token` counts the answer's streamed pieces so far, `chars` its characters.
    PlanTaskReceived {
        task: TaskId,
        token: usize,
        chars: usize,
    },
    /// A streamed plan's answer ended and the whole plan was validated (and repaired if it
    /// had to be). `kept`: tasks that ran while the plan streamed and count for the final
    /// plan; `cancelled`: running ones whose definition changed (stopped); `discarded`:
    /// finished ones whose definition changed (run again from the final plan).
    PlanCompleted {
        valid: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        problems: Vec<String>,
        tasks: usize,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<TaskId>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cancelled: Vec<TaskId>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        discarded: Vec<TaskId>,
    },
    /// The loop stopped: why, and which round is the result.
    LoopFinished {
        stop_reason: String,
        rounds: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        best_round: Option<u32>,
    },
    /// The run's model calls wait on a provider batch (`--batch-api`): its id and its state
    /// as last polled (`validating`, `in_progress`, `finalizing`, `completed`, `failed`,
    /// `expired`, `cancelling`, `cancelled`), with its request counts. A provider batch may
    /// hold calls of several jobs (a batch's, a server's runs): a job hears only of the
    /// batches holding its own calls, `calls` of them.
    ProviderBatch {
        batch_id: String,
        state: String,
        #[serde(default)]
        total: u64,
        #[serde(default)]
        completed: u64,
        #[serde(default)]
        failed: u64,
        #[serde(default)]
        calls: u64,
    },
    /// `planwave resume` continues this run: `completed` tasks are taken from the journal,
    /// the other `pending` ones run (again).
    RunResumed {
        run_id: uuid::Uuid,
        completed: usize,
        pending: usize,
    },
}

/// Receives every event of a run. Called from actor handlers: implementations must not block
/// for long (hand heavy work to another thread).
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event);

    /// False when `emit` ignores everything: the engine then skips building the events that
    /// only sinks would see (the journal and the model-call records still get theirs).
    fn enabled(&self) -> bool {
        true
    }
}

/// Drops everything (benchmarks, embedding).
#[derive(Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: &Event) {}

    fn enabled(&self) -> bool {
        false
    }
}

/// Sends each event to several sinks.
#[derive(Default)]
pub struct FanoutSink(pub Vec<std::sync::Arc<dyn EventSink>>);

impl EventSink for FanoutSink {
    fn emit(&self, event: &Event) {
        for s in &self.0 {
            s.emit(event);
        }
    }

    fn enabled(&self) -> bool {
        self.0.iter().any(|s| s.enabled())
    }
}

/// The longest `task_completed` preview, in characters.
pub const PREVIEW_CHARS: usize = 160;

/// A section's first words on one line: headings' `#` marks dropped, whitespace collapsed,
/// at most [`PREVIEW_CHARS`] characters (then `…`).
pub fn preview(section: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    let words = section
        .lines()
        .map(|l| l.trim_start().trim_start_matches('#'))
        .flat_map(str::split_whitespace);
    for w in words {
        let len = w.chars().count();
        if count > 0 {
            if count + 1 + len > PREVIEW_CHARS {
                out.push('…');
                return out;
            }
            out.push(' ');
            count += 1;
        }
        if len > PREVIEW_CHARS - count {
            out.extend(w.chars().take(PREVIEW_CHARS - count));
            out.push('…');
            return out;
        }
        out.push_str(w);
        count += len;
    }
    out
}

#[cfg(test)]
mod preview_tests {
    use super::*;

    #[test]
    fn a_preview_is_one_bounded_line() {
        assert_eq!(
            preview("## Title\n\nRevenue grew   12%.\n"),
            "Title Revenue grew 12%."
        );
        let long = "word ".repeat(100);
        let p = preview(&long);
        assert!(
            p.chars().count() <= PREVIEW_CHARS + 1 && p.ends_with('…'),
            "{p}"
        );
        let one = "x".repeat(500);
        assert_eq!(preview(&one).chars().count(), PREVIEW_CHARS + 1);
    }
}

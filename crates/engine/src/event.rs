//! Run events: what happened, when. The engine emits them; sinks write `events.jsonl`, drive
//! progress displays, or stream to other programs.

use std::io::{self, BufWriter, Write};
use std::sync::mpsc::Receiver;

use chrono::{DateTime, Utc};
use planwave_llm::Usage;
use planwave_plan::TaskId;
use serde::{Deserialize, Serialize};

use crate::outcome::CancelReason;
use crate::timefmt;
use crate::writer_thread::WriterThread;

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
        /// most 200 bytes), as the seeds stream it.
        #[serde(default)]
        description: String,
        /// The tool a tool step runs (`llm_call` included); absent for a subagent task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
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
        /// Its hash (see `journal::section_hash`), checked before a resume trusts it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section_hash: Option<String>,
        /// The section itself (when the run has a journal): committed with the completion in
        /// one sync, it is the durable copy, and `resume` writes the file back from it if the
        /// file did not survive a crash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section: Option<std::sync::Arc<str>>,
        /// The start of the output on one line (seed 004's step result), at most
        /// [`PREVIEW_CHARS`] characters: what a progress view shows, with or without a journal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<String>,
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

struct Cmd(Box<Event>);

/// Writes events as JSON lines on a dedicated thread, so serialization and I/O stay off the
/// actors' threads. [`JsonlSink::close`] flushes and reports the first write error.
pub struct JsonlSink {
    writer: WriterThread<Cmd, io::Error>,
}

/// How a [`JsonlSink`] writes.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonlOptions {
    /// Put `"run_id"` first on every line that does not carry one already
    /// (`run_started`/`run_finished` do), so each line stands alone.
    pub run_id: Option<uuid::Uuid>,
    /// Flush whenever no more events are queued, so a program reading the stream sees each
    /// event promptly (files leave this off and flush in 64 KiB blocks).
    pub flush_when_idle: bool,
}

impl JsonlSink {
    pub fn with_options(out: Box<dyn Write + Send>, opts: JsonlOptions) -> JsonlSink {
        let writer = WriterThread::spawn("planwave-events", move |rx: Receiver<Cmd>| {
            let mut w = BufWriter::with_capacity(1 << 16, out);
            // The first error stops the writing; it is what `close` reports.
            let mut result: io::Result<()> = Ok(());
            while let Ok(Cmd(ev)) = rx.recv() {
                if result.is_ok() {
                    result = write_line(&mut w, &ev, opts.run_id);
                }
                if opts.flush_when_idle {
                    // Write what is queued, then let the reader see it.
                    while let Ok(Cmd(ev)) = rx.try_recv() {
                        if result.is_ok() {
                            result = write_line(&mut w, &ev, opts.run_id);
                        }
                    }
                    if result.is_ok() {
                        result = w.flush();
                    }
                }
            }
            result.and_then(|()| w.flush())
        })
        // Without its thread the stream drops events; the run itself goes on.
        .unwrap_or_else(|_| WriterThread::closed());
        JsonlSink { writer }
    }

    /// Flushes, stops the writer thread and returns its first error. Later events are dropped.
    pub fn close(&self) -> io::Result<()> {
        self.writer
            .close(|| io::Error::other("event writer thread panicked"))
    }
}

/// One event as a JSON line, with the run id spliced in first when the event lacks one.
pub(crate) fn write_line(
    w: &mut impl Write,
    ev: &Event,
    run_id: Option<uuid::Uuid>,
) -> io::Result<()> {
    let carries_id = matches!(
        ev.kind,
        EventKind::RunStarted { .. } | EventKind::RunFinished { .. } | EventKind::RunResumed { .. }
    );
    match run_id.filter(|_| !carries_id) {
        Some(id) => {
            let body = serde_json::to_vec(ev)?;
            write!(w, "{{\"run_id\":\"{id}\",")?;
            // `body` is a JSON object: drop its `{`.
            w.write_all(&body[1..])?;
        }
        None => serde_json::to_writer(&mut *w, ev)?,
    }
    w.write_all(b"\n")
}

impl EventSink for JsonlSink {
    fn emit(&self, event: &Event) {
        let _ = self.writer.send(Cmd(Box::new(event.clone())));
    }
}

impl Drop for JsonlSink {
    fn drop(&mut self) {
        let _ = self.close();
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

//! What a run produced: per-task records and the run's status, as written to `run.json`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use planwave_plan::TaskId;
use serde::{Deserialize, Serialize};

use crate::{
    CallRecord, CostEstimate, ProviderInfoRecord, Schedule, SectionCut, SectionWarning, Usage,
    timefmt,
};

/// Where a run's plan came from (`run.json` `plan_source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanSource {
    /// The planner wrote it for this run.
    Planner,
    /// A plan the planner wrote earlier for the same goal and prompt, from `--plan-cache`.
    Cache,
    /// A plan file (`run PLAN`, a batch job's `plan_file`).
    File,
    /// A batch job's inline `plan`.
    Inline,
    /// A batch job's `template`, rendered with its `vars`.
    Template,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Waiting for prerequisites or for a free slot.
    Pending,
    Running,
    Completed,
    Failed,
    /// Never started because a prerequisite failed.
    Blocked,
    /// Written, but cut by the output cap (`finish_reason: length`): the section is kept and
    /// handed on like a completed one, and marked, since it ends mid-way.
    Truncated,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed
                | TaskStatus::Failed
                | TaskStatus::Blocked
                | TaskStatus::Truncated
        )
    }

    /// It ended with a section (complete or cut by the output cap) that dependents, the
    /// summary and the report use.
    pub fn has_section(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Truncated)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Truncated => "truncated",
        }
    }
}

/// Why a task failed, as far as the engine can tell; the reflective loop picks its recovery
/// strategy from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// A retryable model error (timeout, 5xx, 429, empty answer) outlasted the task's retries.
    Transient,
    /// The model refused or rejected the request (not retryable as it stands).
    Fatal,
    /// The subagent died without reporting (panic, spawn failure).
    Crashed,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Transient => "transient",
            FailureKind::Fatal => "fatal",
            FailureKind::Crashed => "crashed",
        }
    }
}

/// One task's fate. Field names are the `run.json` contract.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: TaskId,
    pub description: String,
    pub status: TaskStatus,
    pub wave: u32,
    pub attempts: u32,
    #[serde(serialize_with = "timefmt::option::serialize", default)]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "timefmt::option::serialize", default)]
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    /// The failed task that kept this one from running.
    pub blocked_by: Option<TaskId>,
    /// Prerequisites whose sections were given to this task's subagent.
    pub context_from: Vec<TaskId>,
    /// `sections/<file>` holding this task's section, when one was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_file: Option<String>,
    #[serde(default)]
    pub usage: Usage,
    /// Prerequisite sections shortened to fit the context budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_cut: Vec<SectionCut>,
    /// Every tool call attempt of this task, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRecord>,
    /// For a failed task: the kind of failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_kind: Option<FailureKind>,
    /// The reflective loop's round and pass that wrote this task's section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<crate::RoundTag>,
    /// An optional step: its failure blocked nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Parameter references that resolved to an empty string because the optional step
    /// they name failed (`{{fetch.result}}` is recorded as `fetch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty_refs: Vec<String>,
    /// Data-quality warnings of a completed section (short, no figures): accepted, but the
    /// report's appendix, `show` and the integrator's prompt name them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<SectionWarning>,
    /// A completed step's result as `{{ID.result}}` references read it, when its section
    /// text would read otherwise (a tool's structured content; a model's answer that parses
    /// as JSON): see [`crate::read_result`]. Kept so a replan, a resume and a streamed plan's
    /// rebuild give later steps what the first pass gave. Boxed: absent from most records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Box<serde_json::Value>>,
}

impl TaskRecord {
    /// Task `i` of `plan` before it runs: pending, in its wave, nothing recorded yet.
    pub fn pending(plan: &planwave_plan::ValidatedPlan, i: usize) -> TaskRecord {
        TaskRecord {
            id: plan.id(i).clone(),
            description: plan.task(i).description.clone(),
            status: TaskStatus::Pending,
            wave: plan.wave(i),
            attempts: 0,
            started_at: None,
            finished_at: None,
            error: None,
            blocked_by: None,
            context_from: Vec::new(),
            section_file: None,
            usage: Usage::default(),
            context_cut: Vec::new(),
            tool_calls: Vec::new(),
            failure_kind: None,
            round: None,
            optional: plan.task(i).optional,
            empty_refs: Vec::new(),
            warnings: Vec::new(),
            result: None,
        }
    }
}

/// One tool call attempt, as recorded in `run.json` `tasks[].tool_calls[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub tool: String,
    pub server: String,
    pub attempt: u32,
    pub args: serde_json::Value,
    pub duration_ms: f64,
    /// `ok`, `tool_error` (the tool ran and reported an error) or `error` (no result).
    pub outcome: String,
    /// The output text, cut to a few kilobytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Every task completed.
    Completed,
    /// Some tasks completed, some failed or were blocked; the report is still written.
    Partial,
    /// No task completed.
    Failed,
    /// Interrupted (Ctrl-C, deadline); unfinished tasks are `pending` and can be resumed.
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// `total` counts the tasks that must complete: a failed optional step leaves the run
    /// completed.
    /// `written` counts the tasks that wrote a section, complete or cut (`truncated`): a
    /// run whose sections were all cut is partial, not failed.
    pub fn from_counts(total: usize, completed: usize, written: usize) -> RunStatus {
        if completed == total && (total > 0 || completed > 0) {
            RunStatus::Completed
        } else if written == 0 {
            RunStatus::Failed
        } else {
            RunStatus::Partial
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    pub tasks: usize,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
    /// Sections cut by the output cap (not counted in `completed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: usize,
    /// Of `failed`, the optional steps (their dependents ran anyway).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub optional_failed: usize,
    pub waves: usize,
    pub critical_path: Vec<TaskId>,
    pub makespan_ms: f64,
    pub schedule: Option<Schedule>,
    pub concurrency: Option<usize>,
    pub retries: u64,
    /// Transport retries inside model calls, per cause (`rate_limited`, `server_error`,
    /// `connection`, `stalled`, `malformed`, `truncated`), counted by the provider while this
    /// run went on (runs sharing a provider, as in a batch, may count each other's).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub transport_retries: std::collections::BTreeMap<String, u64>,
    pub usage: Usage,
    /// Estimated cost, when the config has prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostEstimate>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Why a run was cancelled before every task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The caller's cancellation token (Ctrl-C).
    Interrupted,
    /// `RunRequest::deadline` passed.
    Deadline,
}

impl CancelReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::Interrupted => "interrupted",
            CancelReason::Deadline => "deadline",
        }
    }
}

/// Everything a run produced. Serialized (without sections) as `run.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub run_id: uuid::Uuid,
    pub status: RunStatus,
    /// Why a `cancelled` run stopped: `interrupted` (Ctrl-C) or `deadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<CancelReason>,
    #[serde(serialize_with = "timefmt::serialize")]
    pub started_at: DateTime<Utc>,
    #[serde(serialize_with = "timefmt::serialize")]
    pub finished_at: DateTime<Utc>,
    pub topic: String,
    /// Why planning failed, when the plan is the planner's single-task fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_fallback: Option<String>,
    /// Where the plan came from, when the caller said (see [`PlanSource`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_source: Option<PlanSource>,
    pub llm: ProviderInfoRecord,
    /// A step plan's answer: the output of its `final` steps, else of its last step
    /// (`planwave_report::step_answer`); absent for research plans and unanswered runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub stats: RunStats,
    pub tasks: Vec<TaskRecord>,
    /// Every model call, in the order they finished.
    #[serde(default)]
    pub calls: Vec<CallRecord>,
    /// Section text per task (index = plan order); not part of `run.json`.
    #[serde(skip)]
    pub sections: Vec<Option<Arc<str>>>,
    /// The rendered report; not part of `run.json` (it is `report.md`).
    #[serde(skip)]
    pub report: String,
    /// Things that went wrong without failing a task (unwritable files, summary fallback).
    #[serde(default)]
    pub warnings: Vec<String>,
}

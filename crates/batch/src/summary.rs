//! `batch.json` and the printed table.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::jobs::BadLine;
use crate::metrics::{BatchMetrics, JobPlanning};

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Every task completed.
    Completed,
    /// Some tasks completed.
    Partial,
    /// No task completed, or the job could not run (planning failed, I/O error).
    Failed,
    /// Interrupted; `planwave batch --resume` continues it.
    Cancelled,
    /// A goal too vague to plan: the planner's questions are in the summary's `questions`
    /// (and the job's `run.json`); the job line's `answers` answer them.
    #[serde(rename = "needs_input")]
    NeedsInput,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Completed => "completed",
            JobState::Partial => "partial",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::NeedsInput => "needs_input",
        }
    }
    /// Finished jobs are not run again by `batch --resume`.
    pub fn is_finished(self) -> bool {
        self != JobState::Cancelled
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    pub id: String,
    pub line: usize,
    /// `goal`, `plan` or `plan_file`.
    pub kind: String,
    /// The run directory, relative to the batch directory.
    pub run_dir: String,
    pub state: JobState,
    pub tasks: usize,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
    pub tokens: u64,
    /// Prompt tokens, and those of them read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompt_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Some of the job's calls had no price: `cost` (when any) leaves them out, and with no
    /// `cost` the job is unpriced rather than free.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unpriced: bool,
    pub wall_ms: f64,
    /// Why the job failed as a whole (not a task's reason: those are in its run.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A goal job's planning; absent for jobs given a plan, and for a goal job cancelled
    /// before its planning ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<JobPlanning>,
    /// A `needs_input` job's clarifying questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
}

impl JobSummary {
    /// A job that ended failed before it ran anything (its run, if any, fills in the rest).
    pub fn failed(id: &str, line: usize, kind: &str, dir: &str, error: Option<String>) -> Self {
        JobSummary {
            id: id.to_owned(),
            line,
            kind: kind.to_owned(),
            run_dir: format!("jobs/{dir}"),
            state: JobState::Failed,
            tasks: 0,
            completed: 0,
            failed: 0,
            blocked: 0,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            cost: None,
            currency: None,
            unpriced: false,
            wall_ms: 0.0,
            error,
            planning: None,
            questions: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSummary {
    pub jobs: Vec<JobSummary>,
    /// Lines of the job file that were not run, with the reason.
    pub bad_lines: Vec<BadLine>,
    pub completed: usize,
    pub partial: usize,
    pub failed: usize,
    pub cancelled: usize,
    /// Goal jobs too vague to plan, waiting on answers.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub needs_input: usize,
    pub tokens: u64,
    /// Prompt tokens of every job, and those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompt_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    pub wall_ms: f64,
    /// Transport retries of the shared model client in this session, per cause.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub transport_retries: std::collections::BTreeMap<String, u64>,
    /// Planning and execution success rates, mean planning time.
    #[serde(default)]
    pub metrics: BatchMetrics,
}

impl BatchSummary {
    /// Totals from the jobs; `wall_ms` is the batch's own wall time (jobs overlap).
    pub fn new(mut jobs: Vec<JobSummary>, bad_lines: Vec<BadLine>, wall_ms: f64) -> Self {
        jobs.sort_by_key(|j| j.line);
        let count = |s: JobState| jobs.iter().filter(|j| j.state == s).count();
        let costs: Vec<f64> = jobs.iter().filter_map(|j| j.cost).collect();
        BatchSummary {
            metrics: BatchMetrics::of(&jobs),
            completed: count(JobState::Completed),
            partial: count(JobState::Partial),
            failed: count(JobState::Failed),
            cancelled: count(JobState::Cancelled),
            needs_input: count(JobState::NeedsInput),
            tokens: jobs.iter().map(|j| j.tokens).sum(),
            prompt_tokens: jobs.iter().map(|j| j.prompt_tokens).sum(),
            cached_tokens: jobs.iter().map(|j| j.cached_tokens).sum(),
            cost: (!costs.is_empty()).then(|| costs.iter().sum()),
            wall_ms,
            jobs,
            bad_lines,
            transport_retries: Default::default(),
        }
    }
}

/// `transport retries: rate_limited 2, stalled 1` (retried requests by cause, as `run.json`
/// and `batch.json` count them), or `None` when no request was retried. Shared by a run's
/// summary and the batch table so both read the same.
pub fn transport_retries_line(counts: &std::collections::BTreeMap<String, u64>) -> Option<String> {
    if counts.is_empty() {
        return None;
    }
    let causes: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
    Some(format!("transport retries: {}", causes.join(", ")))
}

/// The table printed at the end of a batch.
pub fn render_batch_table(s: &BatchSummary) -> String {
    let mut rows = vec![[
        "job".to_owned(),
        "state".into(),
        "tasks".into(),
        "tokens".into(),
        "cost".into(),
        "wall".into(),
    ]];
    for j in &s.jobs {
        rows.push([
            j.id.clone(),
            j.state.as_str().into(),
            format!("{}/{}", j.completed, j.tasks),
            j.tokens.to_string(),
            cost_cell(j),
            format!("{:.1}s", j.wall_ms / 1000.0),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    let _ = write!(
        out,
        "{} job(s): {} completed, {} partial, {} failed",
        s.jobs.len(),
        s.completed,
        s.partial,
        s.failed
    );
    if s.cancelled > 0 {
        let _ = write!(out, ", {} cancelled", s.cancelled);
    }
    if s.needs_input > 0 {
        let _ = write!(
            out,
            ", {} needs_input (their questions in batch.json and each job's run.json)",
            s.needs_input
        );
    }
    if !s.bad_lines.is_empty() {
        let _ = write!(out, "; {} bad line(s) skipped", s.bad_lines.len());
    }
    let _ = write!(out, "; {} tokens", s.tokens);
    if s.cached_tokens > 0 && s.prompt_tokens > 0 {
        let _ = write!(
            out,
            " ({} prompt tokens cached, {:.0} %)",
            s.cached_tokens,
            s.cached_tokens as f64 * 100.0 / s.prompt_tokens as f64
        );
    }
    let unpriced = s.jobs.iter().filter(|j| j.unpriced).count();
    match s.cost {
        Some(c) if unpriced > 0 => {
            let _ = write!(
                out,
                ", cost {c:.4} ({unpriced} job(s) partly or wholly unpriced)"
            );
        }
        Some(c) => {
            let _ = write!(out, ", cost {c:.4}");
        }
        None if unpriced > 0 => out.push_str(", cost unpriced"),
        None => {}
    }
    let _ = writeln!(out, "; {:.1}s", s.wall_ms / 1000.0);
    if let Some(line) = transport_retries_line(&s.transport_retries) {
        let _ = writeln!(out, "{line}");
    }
    out.push_str(&s.metrics.lines());
    out
}

/// A job's cost cell: its cost, or `unpriced` where its calls had no price (never a `0.0000`
/// that reads as free).
fn cost_cell(j: &JobSummary) -> String {
    match (j.cost, j.unpriced) {
        (Some(c), false) => format!("{c:.4}"),
        (Some(c), true) => format!("{c:.4}+unpriced"),
        (None, true) => "unpriced".into(),
        (None, false) => "-".into(),
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::transport_retries_line;

    #[test]
    fn retries_are_listed_by_cause_in_name_order_and_absent_when_none() {
        let mut counts = std::collections::BTreeMap::new();
        assert_eq!(transport_retries_line(&counts), None);
        counts.insert("stalled".to_owned(), 1);
        counts.insert("rate_limited".to_owned(), 2);
        assert_eq!(
            transport_retries_line(&counts).as_deref(),
            Some("transport retries: rate_limited 2, stalled 1")
        );
    }
}

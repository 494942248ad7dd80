//! `planwave show DIR`: a finished run's summary table from its `run.json`, or a batch's
//! table and success metrics from its `batch.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use planwave_batch::{BatchSummary, render_batch_table};
use planwave_record::{RunResult, TaskRecord};
use planwave_storage::ReadRunError;

use super::exit::{InvalidInput, OK, Outcome};

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run directory written by `run` or `research`, or a batch directory (`batch`).
    pub dir: PathBuf,
}

pub fn show(args: ShowArgs) -> anyhow::Result<Outcome> {
    // A batch directory has batch.json and no run.json of its own.
    if !args.dir.join("run.json").exists() && args.dir.join("batch.json").exists() {
        return show_batch(&args.dir.join("batch.json"));
    }
    let run = planwave_storage::read_run(&args.dir).map_err(|e| match e {
        ReadRunError::NotFinished { dir } => InvalidInput::one(
            dir.display().to_string(),
            "no run.json here: not a run directory, or the run has not finished (events.jsonl shows its progress)",
        )
        .into(),
        ReadRunError::Io { path, source } => {
            anyhow::Error::new(source).context(format!("reading {}", path.display()))
        }
        ReadRunError::NotARecord { path, reason } => InvalidInput::one(
            path.display().to_string(),
            format!("not a planwave run record: {reason}"),
        )
        .into(),
    })?;
    print!("{}", render(&run));
    Ok(Outcome(OK))
}

/// A batch's table (as printed when it ended, success metrics included) and why each job
/// that failed as a whole failed.
fn show_batch(path: &Path) -> anyhow::Result<Outcome> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let summary: BatchSummary = serde_json::from_str(&text).map_err(|e| InvalidInput {
        source_name: path.display().to_string(),
        problems: vec![format!("not a planwave batch record: {e}")],
    })?;
    let mut out = render_batch_table(&summary);
    for j in summary.jobs.iter().filter(|j| j.error.is_some()) {
        let _ = writeln!(
            out,
            "job {} {}: {}",
            j.id,
            j.state.as_str(),
            j.error.as_deref().unwrap_or("")
        );
    }
    print!("{out}");
    Ok(Outcome(OK))
}

fn secs(ms: f64) -> String {
    format!("{:.2}s", ms / 1000.0)
}

/// The table, in plan order, with totals and the reason of each failure.
pub fn render(run: &RunResult) -> String {
    let mut out = String::new();
    header(&mut out, run);
    task_table(&mut out, run);
    totals(&mut out, run);
    tokens_by_role(&mut out, run);
    problems(&mut out, run);
    section_warnings(&mut out, run);
    out
}

fn header(out: &mut String, run: &RunResult) {
    let _ = writeln!(out, "run {}  {}", run.run_id, run.topic);
    let _ = writeln!(
        out,
        "status {}  model {} ({}{})  started {}",
        run.status.as_str(),
        run.llm.model,
        run.llm.provider,
        if run.llm.simulated { ", simulated" } else { "" },
        run.started_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    let _ = writeln!(out);
}

/// Width of the task column: the longest id, at least "total".
fn id_width(run: &RunResult) -> usize {
    run.tasks
        .iter()
        .map(|t| t.id.to_string().chars().count())
        .max()
        .unwrap_or(5)
        .max(5)
}

/// A row per task, then the totals row.
fn task_table(out: &mut String, run: &RunResult) {
    let s = &run.stats;
    let id_w = id_width(run);
    let _ = writeln!(
        out,
        "{:<id_w$}  {:<9}  {:>4}  {:>8}  {:>9}  {:>8}  {:>9}  {:>9}  title",
        "task", "status", "wave", "start", "duration", "attempts", "tok in", "tok out"
    );
    for t in &run.tasks {
        let start = t
            .started_at
            .map(|st| secs(run.since_start_ms(st)))
            .unwrap_or_else(|| "-".into());
        let dur = t.duration_ms().map(secs).unwrap_or_else(|| "-".into());
        let title: String = t.description.chars().take(48).collect();
        let _ = writeln!(
            out,
            "{:<id_w$}  {:<9}  {:>4}  {:>8}  {:>9}  {:>8}  {:>9}  {:>9}  {}",
            t.id.to_string(),
            t.status.as_str(),
            t.wave,
            start,
            dur,
            t.attempts,
            t.usage.prompt_tokens,
            t.tokens_out(),
            title.lines().next().unwrap_or("")
        );
    }
    let totals = run.task_totals();
    let _ = writeln!(
        out,
        "{:<id_w$}  {:<9}  {:>4}  {:>8}  {:>9}  {:>8}  {:>9}  {:>9}",
        "total",
        format!("{}/{} ok", s.completed, s.tasks),
        s.waves,
        "",
        secs(s.makespan_ms),
        totals.attempts,
        totals.tokens_in,
        totals.tokens_out
    );
}

/// Counts, retries, makespan and the whole run's time.
fn totals(out: &mut String, run: &RunResult) {
    let s = &run.stats;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} completed, {} failed, {} blocked; {} retries; makespan {} (whole run {})",
        s.completed,
        s.failed,
        s.blocked,
        s.retries,
        secs(s.makespan_ms),
        secs(run.wall_ms())
    );
}

/// Tokens in total and per role, and the cost estimate.
fn tokens_by_role(out: &mut String, run: &RunResult) {
    let s = &run.stats;
    let roles = run.usage_by_role();
    let _ = writeln!(
        out,
        "tokens: {} total ({} in, {} out){}",
        s.usage.total(),
        s.usage.prompt_tokens,
        s.usage.completion_tokens + s.usage.reasoning_tokens,
        if roles.is_empty() { "" } else { " by role:" }
    );
    for r in &roles {
        let _ = writeln!(
            out,
            "  {:<10} {:>5} call(s)  {:>9} in  {:>9} out",
            r.role, r.calls, r.tokens_in, r.tokens_out
        );
    }
    if let Some(c) = &s.cost {
        let _ = writeln!(out, "estimated cost: {:.4} {}", c.total, c.currency);
    }
}

/// Why each task that did not complete did not.
fn problems(out: &mut String, run: &RunResult) {
    let mut problems = run
        .tasks
        .iter()
        .filter_map(|t| Some((t, t.why_not_completed()?)))
        .peekable();
    if problems.peek().is_some() {
        let _ = writeln!(out);
        for (t, why) in problems {
            let _ = writeln!(out, "task {} {}: {}", t.id, t.status.as_str(), why);
        }
    }
}

/// Sections accepted with a data-quality warning (short, no figures), one line each.
fn section_warnings(out: &mut String, run: &RunResult) {
    let flagged: Vec<&TaskRecord> = run
        .tasks
        .iter()
        .filter(|t| !t.warnings.is_empty())
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(out);
        for t in flagged {
            for w in &t.warnings {
                let _ = writeln!(out, "task {} warning: {w}", t.id);
            }
        }
    }
}

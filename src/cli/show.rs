//! `planwave show DIR`: a finished run's summary table from its `run.json`, or a batch's
//! table and success metrics from its `batch.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use planwave_batch::{BatchSummary, render_batch_table};
use planwave_record::{RunResult, TaskRecord};

use super::exit::{InvalidInput, OK, Outcome};

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run directory written by `run` or `research`, or a batch directory (`batch`).
    pub dir: PathBuf,
}

pub fn show(args: ShowArgs) -> anyhow::Result<Outcome> {
    let path = args.dir.join("run.json");
    // A batch directory has batch.json and no run.json of its own.
    if !path.exists() && args.dir.join("batch.json").exists() {
        return show_batch(&args.dir.join("batch.json"));
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(InvalidInput {
                source_name: args.dir.display().to_string(),
                problems: vec![
                    "no run.json here: not a run directory, or the run has not finished (events.jsonl shows its progress)".into(),
                ],
            }
            .into());
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let run: RunResult = serde_json::from_str(&text).map_err(|e| InvalidInput {
        source_name: path.display().to_string(),
        problems: vec![format!("not a planwave run record: {e}")],
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

fn duration_ms(t: &TaskRecord) -> Option<f64> {
    match (t.started_at, t.finished_at) {
        (Some(s), Some(f)) => Some((f - s).num_microseconds().unwrap_or(0) as f64 / 1000.0),
        _ => None,
    }
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
            .map(|st| secs((st - run.started_at).num_microseconds().unwrap_or(0) as f64 / 1000.0))
            .unwrap_or_else(|| "-".into());
        let dur = duration_ms(t).map(secs).unwrap_or_else(|| "-".into());
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
            t.usage.completion_tokens + t.usage.reasoning_tokens,
            title.lines().next().unwrap_or("")
        );
    }
    let task_in: u64 = run.tasks.iter().map(|t| t.usage.prompt_tokens).sum();
    let task_out: u64 = run
        .tasks
        .iter()
        .map(|t| t.usage.completion_tokens + t.usage.reasoning_tokens)
        .sum();
    let attempts: u32 = run.tasks.iter().map(|t| t.attempts).sum();
    let _ = writeln!(
        out,
        "{:<id_w$}  {:<9}  {:>4}  {:>8}  {:>9}  {:>8}  {:>9}  {:>9}",
        "total",
        format!("{}/{} ok", s.completed, s.tasks),
        s.waves,
        "",
        secs(s.makespan_ms),
        attempts,
        task_in,
        task_out
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
        secs(
            (run.finished_at - run.started_at)
                .num_microseconds()
                .unwrap_or(0) as f64
                / 1000.0
        )
    );
}

/// Tokens in total and per role, and the cost estimate.
fn tokens_by_role(out: &mut String, run: &RunResult) {
    let s = &run.stats;
    let mut roles: Vec<(String, usize, u64, u64)> = Vec::new();
    for c in &run.calls {
        let i = match roles.iter().position(|r| r.0 == c.role) {
            Some(i) => i,
            None => {
                roles.push((c.role.clone(), 0, 0, 0));
                roles.len() - 1
            }
        };
        roles[i].1 += 1;
        roles[i].2 += c.prompt_tokens;
        roles[i].3 += c.completion_tokens + c.reasoning_tokens;
    }
    let _ = writeln!(
        out,
        "tokens: {} total ({} in, {} out){}",
        s.usage.total(),
        s.usage.prompt_tokens,
        s.usage.completion_tokens + s.usage.reasoning_tokens,
        if roles.is_empty() { "" } else { " by role:" }
    );
    for (role, calls, tin, tout) in &roles {
        let _ = writeln!(
            out,
            "  {role:<10} {calls:>5} call(s)  {tin:>9} in  {tout:>9} out"
        );
    }
    if let Some(c) = &s.cost {
        let _ = writeln!(out, "estimated cost: {:.4} {}", c.total, c.currency);
    }
}

/// Why each task that did not complete did not.
fn problems(out: &mut String, run: &RunResult) {
    let problems: Vec<&TaskRecord> = run
        .tasks
        .iter()
        .filter(|t| t.error.is_some() || t.blocked_by.is_some())
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out);
        for t in problems {
            let why = match &t.blocked_by {
                Some(b) => format!("blocked by {b}"),
                None => t.error.clone().unwrap_or_default(),
            };
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

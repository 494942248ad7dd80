//! A finished run as `planwave show` prints it: a row per task in plan order, the totals,
//! tokens per role and why each task that did not complete did not. Pure, like the rest.

use std::fmt::Write as _;

use planwave_record::{RunResult, TaskRecord};

fn secs(ms: f64) -> String {
    format!("{:.2}s", ms / 1000.0)
}

/// The table, in plan order, with totals and the reason of each failure.
pub fn render_run_table(run: &RunResult) -> String {
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
    if let Some(why) = stop_line(run) {
        let _ = writeln!(out, "stopped: {why}");
    }
    if let Some(why) = &run.plan_fallback {
        let _ = writeln!(
            out,
            "planning failed (the one-task fallback plan ran): {why}"
        );
    }
    let _ = writeln!(out);
}

/// Why the run (or its research loop) stopped, as `run.json` records it.
fn stop_line(run: &RunResult) -> Option<String> {
    match (&run.loop_stop_reason, run.stop_reason) {
        (Some(looped), Some(run)) => Some(format!("{looped} (the round: {})", run.as_str())),
        (Some(looped), None) => Some(looped.clone()),
        (None, Some(run)) => Some(run.as_str().to_owned()),
        (None, None) => None,
    }
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
        "tokens: {} total ({} in{}, {} out){}",
        s.usage.total(),
        s.usage.prompt_tokens,
        cached_note(s.usage.cached_tokens, s.usage.prompt_tokens),
        s.usage.completion_tokens + s.usage.reasoning_tokens,
        if roles.is_empty() { "" } else { " by role:" }
    );
    for r in &roles {
        let _ = writeln!(
            out,
            "  {:<10} {:>5} call(s)  {:>9} in  {:>9} out{}",
            r.role,
            r.calls,
            r.tokens_in,
            r.tokens_out,
            cached_note(r.cached_in, r.tokens_in)
        );
    }
    if let Some(c) = &s.cost {
        let _ = write!(out, "estimated cost: {}", c.label());
        if c.uncached_total > c.total {
            let _ = write!(out, " ({:.4} without the prompt cache)", c.uncached_total);
        }
        if c.batch_api {
            out.push_str(" (calls went through the Batch API, at its price)");
        } else if let Some(b) = c.batch_api_total {
            let _ = write!(out, " ({b:.4} through the Batch API)");
        }
        out.push('\n');
    }
}

/// `, N cached (P %)` when any prompt tokens were read from the provider's cache; nothing
/// otherwise, so runs without cache figures read as before.
fn cached_note(cached: u64, prompt: u64) -> String {
    if cached == 0 || prompt == 0 {
        return String::new();
    }
    format!(
        ", {cached} cached ({:.0} %)",
        cached as f64 * 100.0 / prompt as f64
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A run.json as `run` writes it: one task completed, one failed, one blocked by it.
    const RUN: &str = r#"{
      "run_id": "00000000-0000-0000-0000-000000000001", "status": "partial",
      "started_at": "2026-11-27T10:00:00Z", "finished_at": "2026-11-27T10:00:12.500Z",
      "topic": "t", "llm": {"provider": "sim", "model": "m", "simulated": true},
      "stats": {"tasks": 3, "completed": 1, "failed": 1, "blocked": 1, "waves": 2,
        "critical_path": [], "makespan_ms": 3250.0, "schedule": null, "concurrency": null,
        "retries": 1, "usage": {"prompt_tokens": 30, "completion_tokens": 6}},
      "tasks": [
        {"id": "1", "description": "a long title\nsecond line", "status": "completed",
         "wave": 0, "attempts": 1,
         "started_at": "2026-11-27T10:00:01Z", "finished_at": "2026-11-27T10:00:03.250Z",
         "error": null, "blocked_by": null, "context_from": [],
         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 2},
         "warnings": [{"kind": "no_figures"}]},
        {"id": "2", "description": "b", "status": "failed", "wave": 0, "attempts": 2,
         "started_at": "2026-11-27T10:00:01Z", "finished_at": null,
         "error": "timed out", "blocked_by": null, "context_from": [],
         "usage": {"prompt_tokens": 20, "completion_tokens": 1}},
        {"id": "3", "description": "c", "status": "blocked", "wave": 1, "attempts": 0,
         "error": null, "blocked_by": "2", "context_from": []}],
      "calls": [
        {"role": "subagent", "model": "m", "attempt": 1, "started_at": "2026-11-27T10:00:01Z",
         "duration_ms": 1.0, "prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 2,
         "outcome": "ok"}],
      "warnings": []
    }"#;

    fn run() -> RunResult {
        parse(RUN)
    }

    fn parse(json: &str) -> RunResult {
        match serde_json::from_str(json) {
            Ok(r) => r,
            Err(e) => panic!("fixture: {e}"),
        }
    }

    #[test]
    fn the_table_has_a_row_per_task_totals_and_the_reasons() {
        let expected = "\
run 00000000-0000-0000-0000-000000000001  t
status partial  model m (sim, simulated)  started 2026-11-27 10:00:00 UTC

task   status     wave     start   duration  attempts     tok in    tok out  title
1      completed     0     1.00s      2.25s         1         10          7  a long title
2      failed        0     1.00s          -         2         20          1  b
3      blocked       1         -          -         0          0          0  c
total  1/3 ok        2                3.25s         3         30          8

1 completed, 1 failed, 1 blocked; 1 retries; makespan 3.25s (whole run 12.50s)
tokens: 36 total (30 in, 6 out) by role:
  subagent       1 call(s)         10 in          7 out

task 2 failed: timed out
task 3 blocked: blocked by 2

task 1 warning: no quantitative data (no number, percentage or amount)
";
        assert_eq!(render_run_table(&run()), expected);
    }

    #[test]
    fn the_task_column_widens_to_the_longest_id() {
        let r = parse(&RUN.replace(r#""id": "1""#, r#""id": "introduction""#));
        let table = render_run_table(&r);
        assert!(table.contains("\ntask          status "), "{table}");
        assert!(table.contains("\ntotal         1/3 ok "), "{table}");
    }
}

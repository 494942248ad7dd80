//! How a finished run is told to a person (the summary lines) and to the shell (the exit
//! code), shared by `run`, `resume` and `research`.

use std::io::Write;

use planwave_record::{CancelReason, RunResult, RunStatus};
use planwave_runner::ops::JobOutcome;
use planwave_storage::RunDir;

use super::events::human;
use super::exit::{BUDGET, DEADLINE, INTERRUPTED, OK, Outcome, PARTIAL};

/// How a job ended, told: its summary (a loop's rounds too); the exit code follows.
pub fn tell(done: &JobOutcome) -> Outcome {
    match done {
        JobOutcome::Run { result, out } => {
            print_summary(result, out);
            outcome(result)
        }
        JobOutcome::Loop {
            outcome,
            out,
            planned,
        } => super::research::report(outcome, out, *planned),
    }
}

pub fn outcome(r: &RunResult) -> Outcome {
    Outcome(match r.status {
        _ if r.stop_reason == Some(CancelReason::Budget) => BUDGET,
        // Planning failed and the one-task fallback ran: not what was asked for.
        RunStatus::Completed if r.plan_fallback.is_some() => PARTIAL,
        RunStatus::Completed => OK,
        RunStatus::Partial | RunStatus::Failed => PARTIAL,
        RunStatus::Cancelled if r.stop_reason == Some(CancelReason::Deadline) => DEADLINE,
        RunStatus::Cancelled => INTERRUPTED,
    })
}

pub fn print_summary(r: &RunResult, out: &RunDir) {
    let mut h = human();
    let s = &r.stats;
    let _ = writeln!(
        h,
        "{}: {} completed, {} failed, {} blocked of {} tasks in {:.2}s ({} retries, {} tokens)",
        r.status.as_str(),
        s.completed,
        s.failed,
        s.blocked,
        s.tasks,
        s.makespan_ms / 1000.0,
        s.retries,
        s.usage.total()
    );
    if let Some(c) = &s.cost {
        let _ = writeln!(h, "estimated cost: {}", c.label());
    }
    if let Some(line) = planwave_batch::transport_retries_line(&s.transport_retries) {
        let _ = writeln!(h, "{line}");
    }
    for t in r.tasks.iter().filter(|t| t.error.is_some()) {
        let _ = writeln!(
            h,
            "  task {} {}: {}",
            t.id,
            t.status.as_str(),
            t.error.as_deref().unwrap_or("")
        );
    }
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    if r.stop_reason == Some(CancelReason::Budget) {
        let _ = writeln!(
            h,
            "budget reached: the tasks left are blocked; finished work is saved. Continue with a larger budget: planwave resume {} --max-tokens-total N (or --max-cost)",
            out.root().display()
        );
    }
    if r.status == RunStatus::Cancelled {
        let why = match r.stop_reason {
            Some(CancelReason::Deadline) => "deadline reached",
            _ => "interrupted",
        };
        let _ = writeln!(
            h,
            "{why}; finished work is saved. Continue with: planwave resume {}",
            out.root().display()
        );
    }
    let _ = writeln!(h, "report: {}", out.root().join("report.md").display());
}

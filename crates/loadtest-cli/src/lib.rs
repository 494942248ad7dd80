//! The `planwave loadtest` command: its flags ([`LoadtestArgs`], a typed spec clap fills in,
//! in `flags`), the workload and endpoint they assemble into the load test's
//! [`SweepOptions`](planwave_loadtest::SweepOptions) (`options`), the live view on stderr
//! (`live_view`), `--repeat` and `--compare`, and the figures printed as a table or JSON
//! (drawn by `planwave-loadtest-report`). [`loadtest`] returns how the sweep ended, a
//! [`SweepStatus`], for the binary to turn into its exit code; bad input is a
//! [`planwave_runner::ops::InvalidInput`] naming its flag.
//!
//! The command line is all it adds: what a load test does is `planwave-loadtest`'s, how its
//! results look is the report crate's.

mod cache_warning;
mod compare;
mod flags;
#[cfg(test)]
mod input_props;
mod live_view;
mod options;
mod repeat;

use std::sync::Arc;

use anyhow::Context;
use planwave_llm::LlmProvider;
use planwave_loadtest::{SweepOutcome, SweepStatus, WorkloadInfo, run_sweep};
use planwave_loadtest_report::JsonReport;
use planwave_runner::{eprintln, print, println};

pub use flags::LoadtestArgs;
use live_view::Terminal;
use options::{sweep_error, sweep_options};

/// What the front end wraps every HTTP model client in (its trace spans).
pub type WrapProvider = fn(Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider>;

pub const AFTER_HELP: &str = "\
Figures (table, or --json):
  makespan            first dispatch to the last task settled
  critical-path bound sum of latencies along the longest chain; the ratio makespan/bound
                      is the engine's overhead (1.0 = none)
  wave-barrier bound  sum over waves of the slowest task: what the barrier must take
  dispatch latency    last prerequisite's model call returned -> the task's call began
  peak RSS            this run's peak resident memory; per in-flight call: (peak-baseline)/max
Latencies are planned (known before the run) with the in-process simulator or a
--latency-file; with --llm-url and no file they are the calls' observed durations.

Exit codes: 0 every task completed, 2 invalid input, 3 some task did not complete,
130 interrupted, 1 other error.";

/// Runs the load test the flags ask for (or compares two saved outputs) and prints its
/// figures; how it ended, for the exit code.
pub async fn loadtest(a: LoadtestArgs, wrap: WrapProvider) -> anyhow::Result<SweepStatus> {
    if !a.traffic.compare.is_empty() {
        return compare::compare(&a.traffic.compare, a.json, a.traffic.html.as_ref());
    }
    // Shared with the endpoint's `connect`, which builds a client at every point.
    let a = Arc::new(a);
    if a.repeat > 1 {
        return repeat::repeat(&a, wrap).await;
    }
    let options = sweep_options(&a, wrap, 0)?;
    let interrupt = planwave_runner::ops::CtrlC::listen();
    let outcome = run_sweep(options, &Terminal::new(&a.view), interrupt.token()).await;
    drop(interrupt);
    let mut outcome = outcome.map_err(sweep_error)?;
    cache_warning::warn(&a, &mut outcome);
    let Some(workload) = &outcome.workload else {
        return Ok(SweepStatus::Interrupted);
    };
    print_results(&a, &outcome, workload)?;
    Ok(outcome.status())
}

/// The figures as JSON (`--json`) or the workload line and the table.
fn print_results(a: &LoadtestArgs, outcome: &SweepOutcome, w: &WorkloadInfo) -> anyhow::Result<()> {
    // What the scrapes left out, said whatever the output's form.
    for r in &outcome.runs {
        if let Some(line) = r.server_metrics_dropped.as_ref().and_then(|d| d.describe()) {
            let run = r.label.as_deref().unwrap_or(&r.schedule);
            eprintln!("planwave loadtest: {run}: {line}");
        }
    }
    if a.json {
        println!("{}", JsonReport::of(outcome, w).to_pretty_json()?);
    } else {
        print!(
            "{}",
            planwave_loadtest_report::render_sweep_text(outcome, w)
        );
        for turns in outcome.runs.iter().filter_map(|r| r.turns.as_deref()) {
            print!("{}", planwave_loadtest_report::render_turns(turns));
        }
    }
    if let Some(path) = &a.csv {
        let csv = planwave_loadtest_report::render_csv(&outcome.runs);
        std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.requests_out {
        let rows = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            planwave_loadtest_report::render_requests_csv(&outcome.runs)
        } else {
            planwave_loadtest_report::render_requests_jsonl(&outcome.runs)
        };
        std::fs::write(path, rows).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.traffic.html {
        let html = planwave_loadtest_report::render_sweep_html(outcome, w);
        std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("planwave loadtest: wrote {}", path.display());
    }
    Ok(())
}

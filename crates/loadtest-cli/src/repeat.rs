//! `planwave loadtest --repeat N`: the whole load test N times, then every figure as the mean
//! with its 95 % confidence interval.

use std::sync::Arc;

use planwave_runner::{eprintln, print, println};
use serde_json::{Value, json};

use planwave_loadtest::{SweepStatus, run_sweep};
use planwave_loadtest_report::{Estimate, JsonReport, render_sweep_text, repeat_estimates};

use crate::WrapProvider;
use crate::flags::LoadtestArgs;
use crate::live_view::Terminal;
use crate::options::{sweep_error, sweep_options};

/// The figures the table shows over the repeats (the JSON has every one).
const SHOWN: [&str; 8] = [
    "makespan_ms",
    "tasks_per_sec",
    "serving.request_throughput",
    "serving.output_tokens_per_sec",
    "serving.ttft_ms.p50",
    "serving.ttft_ms.p99",
    "serving.itl_ms.p50",
    "serving.e2e_ms.p99",
];

pub(crate) async fn repeat(
    a: &Arc<LoadtestArgs>,
    wrap: WrapProvider,
) -> anyhow::Result<SweepStatus> {
    let mut docs = Vec::new();
    let mut last_text = String::new();
    let mut status = SweepStatus::Completed;
    for i in 1..=a.repeat {
        eprintln!("planwave loadtest: repeat {i} of {}", a.repeat);
        let interrupt = planwave_runner::ops::CtrlC::listen();
        let watch = Terminal::new(&a.view);
        let outcome = run_sweep(
            sweep_options(a, wrap, u64::from(i))?,
            &watch,
            interrupt.token(),
        )
        .await;
        drop(interrupt);
        let mut outcome = outcome.map_err(sweep_error)?;
        crate::cache_warning::warn(a, &mut outcome);
        let Some(workload) = &outcome.workload else {
            return Ok(SweepStatus::Interrupted);
        };
        if outcome.status() == SweepStatus::Interrupted {
            return Ok(SweepStatus::Interrupted);
        }
        if outcome.status() == SweepStatus::Partial {
            status = SweepStatus::Partial;
        }
        docs.push(serde_json::to_value(JsonReport::of(&outcome, workload))?);
        last_text = render_sweep_text(&outcome, workload);
    }
    let estimates = repeat_estimates(&docs);
    if a.json {
        let mut doc = docs.pop().unwrap_or(Value::Null);
        doc["repeat"] = json!({"n": a.repeat, "runs": estimates});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{last_text}");
        print!("{}", render(a.repeat, &docs, &estimates));
    }
    Ok(status)
}

/// The main figures of each run as `mean ± half-interval`.
fn render(
    n: u32,
    docs: &[Value],
    estimates: &[std::collections::BTreeMap<String, Estimate>],
) -> String {
    let mut out = format!("\nover {n} repeats (mean ± 95 % confidence interval):\n");
    for (i, figures) in estimates.iter().enumerate() {
        let run = &docs.first().map_or(&Value::Null, |d| &d["runs"][i]);
        let name = run["label"].as_str().unwrap_or("");
        out.push_str(&format!(
            "  run {} {}{}\n",
            i + 1,
            run["schedule"].as_str().unwrap_or(""),
            if name.is_empty() {
                String::new()
            } else {
                format!(" ({name})")
            }
        ));
        for key in SHOWN {
            if let Some(e) = figures.get(key) {
                out.push_str(&format!("    {key:<32} {:.3} ± {:.3}\n", e.mean, e.ci95));
            }
        }
    }
    out
}

//! `planwave research "GOAL" --out DIR`: plan, run and integrate, writing the same run
//! directory as `run` plus `planner/` (each attempt's raw text and `attempts.json`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use planwave_engine::{CallRecord, Event, EventKind, EventSink};
use planwave_planner::PlanAttempt;
use serde::Serialize;

use super::events::{EventsOptions, human, open_stream};
use super::exit::{INTERRUPTED, Outcome};
use super::llm::{self, LlmOptions, PlannerOptions, PromptOptions};
use super::options::{ExecOptions, SimOptions};
use super::planning::{no_plan_error, plan_goal};
use super::run::{
    Execution, create_run_dir, execute_plan, lock_run_dir, open_events, outcome, print_summary,
    record_invocation, run_config,
};

#[derive(Debug, Args)]
pub struct ResearchArgs {
    /// The research goal, e.g. "深度分析特斯拉公司".
    pub goal: String,
    /// Run directory: report.md, plan.json, run.json, events.jsonl, sections/, planner/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub planner: PlannerOptions,
    #[command(flatten)]
    pub exec: ExecOptions,
    #[command(flatten)]
    pub llm: LlmOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
    #[command(flatten)]
    pub events: EventsOptions,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// One line of `planner/attempts.json`.
#[derive(Serialize)]
struct AttemptFile<'a> {
    #[serde(flatten)]
    attempt: &'a PlanAttempt,
    /// The raw model text of this attempt, relative to the run directory.
    raw_file: Option<String>,
}

fn call_record(a: &PlanAttempt) -> CallRecord {
    CallRecord {
        role: "planner".into(),
        task: None,
        model: a.model.clone(),
        attempt: a.attempt,
        started_at: a.started_at,
        duration_ms: a.duration_ms,
        prompt_tokens: a.usage.prompt_tokens,
        completion_tokens: a.usage.completion_tokens,
        reasoning_tokens: a.usage.reasoning_tokens,
        outcome: if a.error.is_some() { "error" } else { "ok" }.into(),
        error: a.error.clone(),
    }
}

pub async fn research(args: ResearchArgs) -> anyhow::Result<Outcome> {
    let settings = llm::settings(&args.llm, &args.prompts, Some(&args.planner))?;
    let templates = llm::templates(&settings)?;
    let provider = llm::provider(
        &settings,
        args.sim.sim_config(args.exec.seed)?,
        args.exec.seed,
    )?;
    let out = create_run_dir(&args.out)?;
    let _lock = lock_run_dir(&out)?;
    record_invocation(&out)?;
    std::fs::create_dir_all(out.root().join("planner"))
        .with_context(|| format!("creating {}", out.root().join("planner").display()))?;
    let run_id = uuid::Uuid::new_v4();
    let events = open_events(&out, run_id)?;
    let stream = open_stream(run_id, &args.events)?;

    let mut write_errors: Vec<String> = Vec::new();
    let planned = {
        let out = out.clone();
        let events = events.clone();
        let stream = stream.clone();
        let errors = &mut write_errors;
        plan_goal(
            &args.goal,
            provider.clone(),
            templates.clone(),
            &settings,
            args.quiet,
            &mut move |a: &PlanAttempt| {
                // Each attempt is on disk (and in events.jsonl) as soon as it is judged.
                if !a.raw.is_empty()
                    && let Err(e) = out.write(
                        &format!("planner/attempt-{}.txt", a.attempt),
                        a.raw.as_bytes(),
                    )
                {
                    errors.push(e.to_string());
                }
                let ev = Event::now(EventKind::LlmCall {
                    task: None,
                    role: "planner".into(),
                    model: a.model.clone(),
                    attempt: a.attempt,
                    duration_ms: a.duration_ms,
                    usage: a.usage,
                    error: a.error.clone(),
                });
                events.emit(&ev);
                if let Some(s) = &stream {
                    s.emit(&ev);
                }
            },
        )
        .await
    };
    let planned = match planned {
        Ok(p) => p,
        Err(e) => {
            let _ = events.close();
            return Err(e);
        }
    };
    let Some(outcome_) = planned else {
        let _ = events.close();
        eprintln!("interrupted while planning");
        return Ok(Outcome(INTERRUPTED));
    };
    let files: Vec<AttemptFile<'_>> = outcome_
        .attempts
        .iter()
        .map(|a| AttemptFile {
            attempt: a,
            raw_file: (!a.raw.is_empty()).then(|| format!("planner/attempt-{}.txt", a.attempt)),
        })
        .collect();
    out.write_json("planner/attempts.json", &files)?;
    for e in &write_errors {
        eprintln!("warning: {e}");
    }
    let Some(plan) = outcome_.plan.clone() else {
        let _ = events.close();
        return Err(no_plan_error(&outcome_));
    };
    for a in &outcome_.attempts {
        for w in &a.warnings {
            eprintln!("planner warning: {w}");
        }
    }
    let config = run_config(&args.exec, &settings);
    let prices = config.prices.clone();
    let mut result = execute_plan(Execution {
        stream,
        plan: Arc::new(plan),
        provider,
        prompts: templates,
        config,
        deadline: args.exec.deadline,
        out: out.clone(),
        events,
        quiet: args.quiet,
        run_id,
        preset: Vec::new(),
    })
    .await?;

    // run.json accounts for the planner's calls too.
    let planner_calls: Vec<CallRecord> = outcome_.attempts.iter().map(call_record).collect();
    result.stats.usage += outcome_.usage();
    result.calls.splice(0..0, planner_calls);
    result.stats.cost = prices.estimate(result.calls.iter().map(|c| (c.model.as_str(), c.usage())));
    out.write_run(&result)?;
    let _ = writeln!(
        human(),
        "planned in {} attempt(s): {} tasks",
        outcome_.attempts.len(),
        result.stats.tasks
    );
    print_summary(&result, &out);
    Ok(outcome(&result))
}

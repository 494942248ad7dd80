//! `planwave research "GOAL" --out DIR`: the reflective loop. Each round plans (told the
//! previous round's reflection), runs, recovers failed tasks, and is evaluated and reflected
//! on; `DIR/rounds/<k>/` keeps every round and `DIR` gets the best one (see
//! `planwave_runner::ops::research`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use planwave_config::spec::{Answers, JobSpec, ResearchOptions, Work};
use planwave_record::{PlanSource, RunStatus};
use planwave_runner::ops::{self, Job};
use planwave_runner::ops::{CtrlC, Invocation, ResearchOutcome, Stderr, claim_out_dir};
use planwave_storage::RunDir;

use super::events::{EventsOptions, human, stream_to};
use super::exit::{INTERRUPTED, NEEDS_INPUT, OK, Outcome, PARTIAL};
use super::job::{JobOptions, Prepare, io};
use super::llm;
use super::progress::Terminal;
use super::questions;
use super::summary::{outcome, print_summary, tell};

#[derive(Debug, Args)]
pub struct ResearchArgs {
    /// The research goal, e.g. "深度分析特斯拉公司".
    pub goal: String,
    /// Run directory: report.md, plan.json, run.json, events.jsonl, sections/, planner/,
    /// `rounds/<k>/`.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub research: ResearchOptions,
    #[command(flatten)]
    pub job: JobOptions,
    #[command(flatten)]
    pub events: EventsOptions,
    #[command(flatten)]
    pub pdf: super::pdf::PdfOptions,
    /// Wait for the whole plan before starting any task (default: tasks start while the
    /// planner's answer streams, as soon as each is complete and its prerequisites are done).
    #[arg(long)]
    pub no_stream_plan: bool,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

impl ResearchArgs {
    /// The job these flags describe.
    pub fn spec(&self) -> JobSpec {
        JobSpec {
            work: Work::Goal {
                goal: self.goal.clone(),
                research: self.research.clone(),
                stream_plan: !self.no_stream_plan,
            },
            out: self.out.clone(),
            options: self.job.clone(),
        }
    }
}

pub async fn research(args: ResearchArgs) -> anyhow::Result<Outcome> {
    claim_out_dir(&args.out, &[], args.job.force)?;
    args.events.check(&args.out)?;
    let interrupt = CtrlC::listen();
    let mut research = args.research.clone();
    loop {
        let done = match research_once(&args, &research, &interrupt).await {
            Ok(done) => done,
            Err(e) => {
                let Some(questions) = needs_input(&e) else {
                    return Err(e);
                };
                // Someone at a terminal answers, and the goal is planned again with them;
                // anywhere else the job ends here, the questions in run.json.
                if questions::interactive()
                    && let Some(answers) = questions::ask_on_terminal(&questions)?
                {
                    research.planner.answers = Some(
                        Answers::checked(answers).map_err(|e| anyhow::anyhow!("answers: {e}"))?,
                    );
                    continue;
                }
                questions::print_needs_input(&questions, &args.out);
                return Ok(Outcome(NEEDS_INPUT));
            }
        };
        let outcome = tell(&done);
        args.pdf.print(done.out()).await?;
        return Ok(outcome);
    }
}

/// The planner's questions, when `e` is that the goal needs clarifying.
fn needs_input(e: &anyhow::Error) -> Option<Vec<String>> {
    e.downcast_ref::<planwave_runner::ops::RunnerError>()
        .and_then(|e| e.questions())
        .map(<[String]>::to_vec)
}

/// One research job with `research`'s options into `args.out` (claimed by the caller).
async fn research_once(
    args: &ResearchArgs,
    research: &ResearchOptions,
    interrupt: &CtrlC,
) -> anyhow::Result<ops::JobOutcome> {
    let mut spec = args.spec();
    if let Work::Goal { research: r, .. } = &mut spec.work {
        *r = research.clone();
    }
    let settings = llm::settings(&[&args.job, research])?;
    let resources = args.job.resources(&settings)?;
    let invocation = Invocation::current_job(&spec)?;
    // Started once: the planner lists the tools and every round's subagents call them.
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    let done = resources
        .scope(async |resources| {
            let job = Job {
                spec: &spec,
                settings: &settings,
                resources: resources.clone(),
                invocation,
            };
            let watch = Terminal { quiet: args.quiet };
            let stream = stream_to(&args.events);
            ops::research(job, &io(&watch, &stream, interrupt, args.quiet)).await
        })
        .await?;
    Ok(done)
}

/// The best round's summary, a line per round and why the loop stopped; `planned`: the
/// plan came from the planner (not from `run --recover`'s plan file).
pub(super) fn report(done: &ResearchOutcome, out: &RunDir, planned: bool) -> Outcome {
    let looped = &done.looped;
    let interrupted = looped.stop_reason.cut_short();
    let Some(best) = done.shown_round() else {
        // Interrupted while planning the first round.
        return Outcome(INTERRUPTED);
    };
    let mut h = human();
    if best.result.plan_source == Some(PlanSource::Cache) {
        let _ = writeln!(h, "plan from the cache: {} tasks", best.result.stats.tasks);
    } else if planned {
        let _ = writeln!(
            h,
            "planned in {} attempt(s): {} tasks",
            done.attempts.get(&best.round).copied().unwrap_or(0),
            best.result.stats.tasks
        );
    }
    print_summary(&best.result, out);
    for r in &looped.rounds {
        let score = match (r.overall_score, r.correctness) {
            (Some(o), Some(c)) => format!("overall {o:.0}, correctness {c:.0}"),
            _ => "not evaluated".into(),
        };
        let recovery: Vec<&str> = r
            .passes
            .iter()
            .filter_map(|p| p.recovery.map(|s| s.as_str()))
            .collect();
        let _ = writeln!(
            h,
            "round {}: {} ({score}){}",
            r.round,
            r.status.as_str(),
            if recovery.is_empty() {
                String::new()
            } else {
                format!(", recovered by {}", recovery.join(", "))
            }
        );
    }
    let _ = writeln!(
        h,
        "stopped: {}; best round {}",
        looped.stop_reason.as_str(),
        looped.best_round.unwrap_or(best.round)
    );
    if interrupted {
        let _ = writeln!(
            h,
            "round {} is in {}; `planwave resume {}` finishes its tasks and goes on with the loop",
            best.round,
            out.root().display(),
            out.root().display()
        );
        if best.result.status != RunStatus::Cancelled {
            return Outcome(INTERRUPTED);
        }
    }
    let done_outcome = outcome(&best.result);
    // Every task of the shown round completed, yet the loop ended on a failure of its own
    // (no evaluation, reflection or plan from the model), not on its verdict.
    if done_outcome == Outcome(OK) && looped.stop_reason.failed() {
        let _ = writeln!(
            h,
            "the loop ended on a failure ({}), not on its verdict",
            looped.stop_reason.as_str()
        );
        return Outcome(PARTIAL);
    }
    done_outcome
}

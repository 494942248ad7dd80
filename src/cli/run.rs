//! `planwave run PLAN --out DIR`

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use planwave_runner::{
    CtrlC, Execution, Invocation, Research, Stderr, claim_out_dir, lock_run_dir, open_journal,
    open_run_dir, parse_plan_source, validate_plan,
};

use super::events::{EventsOptions, open_stream};
use super::exit::Outcome;
use super::job::JobOptions;
use super::llm;
use super::progress::Terminal;
use super::summary::execute_and_summarize;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Plan file (JSON, possibly wrapped in prose or a ```json fence); `-` reads stdin.
    pub plan: PathBuf,
    /// Run directory: report.md, plan.json, run.json, events.jsonl, sections/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub job: JobOptions,
    #[command(flatten)]
    pub events: EventsOptions,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub pdf: super::pdf::PdfOptions,
    /// Recover failed tasks as `research` does (retry, partial replan, complete replan,
    /// with the plan's topic as the goal); passes are kept under DIR/rounds/1/.
    #[arg(long)]
    pub recover: bool,
}

pub async fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    // Everything that can be checked is checked before a server starts.
    let settings = llm::settings(&[&args.job])?;
    let (source, mut spec) = parse_plan_source(&args.plan)?;
    // `--meta` adds to (and overrides) what the plan file carries, e.g. from an earlier run.
    spec.about.meta.extend(settings.planner.meta.clone());
    claim_out_dir(&args.out, &[&args.plan], args.job.force)?;
    args.events.check(&args.out)?;
    let resources = args.job.resources(&settings)?;
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    resources
        .scope(async |resources| {
            let plan = validate_plan(&source, spec, Some(&resources.catalog()), &Stderr)?;
            if args.recover {
                return recover(&args, plan, resources, &settings, &interrupt).await;
            }
            let out = open_run_dir(&args.out)?;
            let _lock = lock_run_dir(&out)?;
            Invocation::current()?.record(&out)?;
            let run_id = uuid::Uuid::new_v4();
            let events = open_journal(&out, "events.jsonl", run_id)?;
            let stream = open_stream(run_id, &args.events)?;
            let outcome = execute_and_summarize(
                Execution {
                    plan: Arc::new(plan),
                    resources: resources.clone(),
                    config: planwave_engine::RunConfig {
                        plan_source: Some(planwave_record::PlanSource::File),
                        ..settings.run.clone()
                    },
                    deadline: settings.deadline,
                    out: out.clone(),
                    events,
                    stream,
                    run_id,
                    preset: Vec::new(),
                    slots: None,
                    cancel: interrupt.token(),
                    root_span: true,
                },
                args.quiet,
            )
            .await?;
            args.pdf.print(&out).await?;
            Ok(outcome)
        })
        .await
}

/// `run --recover`: the plan as the reflective loop's one round, its failures recovered.
async fn recover(
    args: &RunArgs,
    plan: planwave_plan::ValidatedPlan,
    resources: &planwave_runner::Resources,
    settings: &planwave_config::Settings,
    interrupt: &CtrlC,
) -> anyhow::Result<Outcome> {
    let out = open_run_dir(&args.out)?;
    let _lock = lock_run_dir(&out)?;
    Invocation::current()?.record(&out)?;
    let run_id = uuid::Uuid::new_v4();
    let stream = open_stream(run_id, &args.events)?;
    let goal = recover_goal(&plan);
    let done = planwave_runner::research(Research {
        goal,
        plan: Some(plan),
        resume: false,
        recover: false,
        out: out.clone(),
        resources: resources.clone(),
        settings,
        run_id,
        stream,
        quiet: args.quiet,
        cancel: interrupt.token(),
        watch: &Terminal { quiet: args.quiet },
        notes: &Stderr,
        slots: None,
        stream_plan: false,
    })
    .await?;
    let outcome = super::research::report(&done, &out, false);
    args.pdf.print(&out).await?;
    Ok(outcome)
}

/// The goal `--recover` replans for: the plan's topic. A step plan may have none; its first
/// task still says what it is about.
pub(super) fn recover_goal(plan: &planwave_plan::ValidatedPlan) -> String {
    let topic = &plan.spec().topic;
    if topic.trim().is_empty() {
        plan.task(0).title().to_owned()
    } else {
        topic.clone()
    }
}

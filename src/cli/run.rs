//! `planwave run PLAN --out DIR`

use std::path::PathBuf;

use clap::Args;
use planwave_config::spec::{JobSpec, Work};
use planwave_runner::ops::{self, Job};
use planwave_runner::ops::{
    CtrlC, Invocation, Stderr, claim_out_dir, parse_plan_source, validate_plan,
};

use super::events::{EventsOptions, stream_to};
use super::exit::Outcome;
use super::job::{JobOptions, Prepare, io};
use super::llm;
use super::progress::Terminal;
use super::summary::tell;

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

impl RunArgs {
    /// The job these flags describe.
    pub fn spec(&self) -> JobSpec {
        JobSpec {
            work: Work::Plan {
                plan: self.plan.clone(),
                recover: self.recover,
            },
            out: self.out.clone(),
            options: self.job.clone(),
        }
    }
}

pub async fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let spec = args.spec();
    // Everything that can be checked is checked before a server starts.
    let settings = llm::settings(&[&args.job])?;
    let (source, mut plan) = parse_plan_source(&args.plan)?;
    // `--meta` adds to (and overrides) what the plan file carries, e.g. from an earlier run.
    plan.about.meta.extend(settings.planner.meta.clone());
    claim_out_dir(&args.out, &[&args.plan], args.job.force)?;
    args.events.check(&args.out)?;
    let resources = args.job.resources(&settings)?;
    let invocation = Invocation::current_job(&spec)?;
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    resources
        .scope(async |resources| {
            let plan = validate_plan(&source, plan, Some(&resources.catalog()), &Stderr)?;
            let job = Job {
                spec: &spec,
                settings: &settings,
                resources: resources.clone(),
                invocation,
            };
            let watch = Terminal { quiet: args.quiet };
            let stream = stream_to(&args.events);
            let done = ops::run(job, plan, &io(&watch, &stream, &interrupt, args.quiet)).await?;
            let outcome = tell(&done);
            args.pdf.print(done.out()).await?;
            Ok(outcome)
        })
        .await
}

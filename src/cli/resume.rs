//! `planwave resume DIR`: continue an interrupted run, `run --recover` or `research`.
//!
//! Which kind of run directory it is, and how it goes on, is the runner's
//! (`planwave_runner::ops::Resumable`, the same for the server's resume endpoint): here only
//! the flags, the recorded options resolved into settings (from the run's original working
//! directory, so its relative paths mean what they meant), and what is printed.

use std::path::PathBuf;

use clap::Args;
use planwave_config::ProcessEnv;
use planwave_runner::ops::{self, Job, Resumable};
use planwave_runner::ops::{CtrlC, InvalidInput, Stderr};

use super::events::{EventsOptions, stream_to};
use super::exit::Outcome;
use super::job::{Prepare, io};
use super::progress::Terminal;
use super::summary::tell;

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run directory of `planwave run` or `planwave research`.
    pub dir: PathBuf,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// A new token budget for the run, in place of the one it was started with (the tokens
    /// it spent so far count against it): a run stopped by its budget goes on with a larger
    /// one.
    #[arg(long, value_name = "N", value_parser = planwave_config::parse_count::<u64>)]
    pub max_tokens_total: Option<u64>,
    /// A new cost budget, as `--max-tokens-total`.
    #[arg(long, value_name = "AMOUNT", value_parser = planwave_config::parse_cost)]
    pub max_cost: Option<f64>,
}

pub async fn resume(args: ResumeArgs) -> anyhow::Result<Outcome> {
    let mut r = Resumable::open(&args.dir)?;
    let exec = &mut r.spec.options.run.exec;
    exec.max_tokens_total = args.max_tokens_total.or(exec.max_tokens_total);
    exec.max_cost = args.max_cost.or(exec.max_cost);
    for note in r
        .invocation
        .origin
        .check_redacted(|k| std::env::var(k).ok())?
    {
        eprintln!("planwave: {note}");
    }
    if let Err(e) = r.invocation.origin.enter_cwd() {
        eprintln!(
            "warning: cannot enter the run's original directory {}: {e}",
            r.invocation.origin.cwd.display()
        );
    }
    let settings = r.spec.settings(&ProcessEnv).map_err(InvalidInput::from)?;
    let resources = r.spec.options.resources(&settings)?;
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    let events = EventsOptions::default();
    resources
        .scope(async |resources| {
            let job = Job {
                spec: &r.spec,
                settings: &settings,
                resources: resources.clone(),
                invocation: r.invocation.clone(),
            };
            let watch = Terminal { quiet: args.quiet };
            let stream = stream_to(&events);
            let done = ops::resume(&r, job, &io(&watch, &stream, &interrupt, args.quiet)).await?;
            Ok(tell(&done))
        })
        .await
}

//! Command-line interface: one module per subcommand.

mod batch;
mod estimate;
mod events;
pub mod exit;
pub(crate) mod input;
mod job;
mod llm;
mod loadtest;
mod mcp;
mod nats;
mod pdf;
mod plan;
pub(crate) mod progress;
mod questions;
mod research;
mod resume;
mod run;
mod serve;
mod serve_limits;
mod show;
mod summary;
pub mod telemetry;
mod validate;
mod waves;
mod worker;
mod worker_metrics;

use std::io::Write;

use clap::{Parser, Subcommand};

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success (run: every task completed)
  1  other error (I/O, runtime)
  2  invalid input (unreadable or invalid plan, bad arguments or config,
     or no valid plan from the planner)
  3  run finished but not every task completed (report still written), or
     not as asked: planning fell back to one task, or research's loop ended
     on a failure (evaluation_failed, reflection_failed, planning_failed)
  4  the run's --deadline passed; `planwave resume DIR` goes on
  5  needs_input: the goal is too vague to plan and no terminal answered the
     planner's questions (in run.json); run again with --answers FILE
  6  the budget (--max-tokens-total, --max-cost) was spent; the tasks left
     are blocked; `planwave resume DIR --max-tokens-total N` goes on
  130 interrupted (Ctrl-C); `planwave resume DIR` goes on
  143 stopped by SIGTERM, as cleanly as Ctrl-C; `planwave resume DIR` goes on";

pub const BATCH_EXIT_HELP: &str = "\
Exit codes:
  0  every job completed and every line of the job file was a valid job
  1  other error (I/O, runtime)
  2  invalid input: unreadable job file, or no line of it is a valid job
  3  some job did not complete, or bad lines were skipped (see batch.json)
  4  the batch's --deadline passed; `planwave batch --resume DIR` goes on
  6  the budget was spent before every job completed; `planwave batch
     --resume DIR --max-tokens-total N` (or --max-cost) goes on
  130 interrupted (Ctrl-C); `planwave batch --resume DIR` goes on
  143 stopped by SIGTERM, as cleanly as Ctrl-C; `planwave batch --resume DIR` goes on";

#[derive(Debug, Parser)]
#[command(name = "planwave", version, about = "Turns a research goal into a dependency plan, runs its tasks as concurrent LLM subagents, and assembles a report.", after_help = EXIT_CODES_HELP)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(flatten)]
    pub telemetry: telemetry::TelemetryOptions,
    /// The largest plan or job file read (a file, stdin, a batch's plan files), e.g. `256MiB`.
    #[arg(
        long,
        global = true,
        value_name = "SIZE",
        env = "PLANWAVE_MAX_INPUT_BYTES",
        default_value = "64MiB",
        hide_env_values = true
    )]
    pub max_input_bytes: planwave_config::ByteSize,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a plan: exit 0 with a summary, or exit 2 with one problem per line.
    #[command(after_help = EXIT_CODES_HELP)]
    Validate(validate::ValidateArgs),
    /// Print a plan's dependency waves and critical path.
    #[command(after_help = EXIT_CODES_HELP)]
    Waves(waves::WavesArgs),
    /// Execute a plan: one subagent per task, then the report.
    #[command(after_help = EXIT_CODES_HELP)]
    Run(run::RunArgs),
    /// Ask the model for a plan for GOAL, repairing it until valid; print it and its waves.
    #[command(after_help = EXIT_CODES_HELP)]
    Plan(plan::PlanArgs),
    /// Plan GOAL, run it, evaluate and reflect, and plan again until good enough (the
    /// reflective loop); every round is kept in `DIR/rounds/<k>/`.
    #[command(after_help = EXIT_CODES_HELP)]
    Research(research::ResearchArgs),
    /// Continue an interrupted run (crash, kill, Ctrl-C, deadline) in its run directory:
    /// completed tasks are kept, the others run.
    #[command(after_help = EXIT_CODES_HELP)]
    Resume(resume::ResumeArgs),
    /// Run many jobs (goals or plans, one JSON object per line) sharing one model client,
    /// one rate limiter and one cap on subagents; `--resume DIR` continues a batch.
    #[command(after_help = BATCH_EXIT_HELP)]
    Batch(batch::BatchArgs),
    /// Run jobs of batches queued on NATS JetStream (`batch --nats URL --batch NAME`); start
    /// any number, on any machines. SIGTERM/Ctrl-C hands running jobs back and exits 0.
    #[command(after_help = EXIT_CODES_HELP)]
    Worker(worker::WorkerArgs),
    /// The simulated LLM as an OpenAI-compatible HTTP server (with fault injection).
    SimLlm(planwave_sim_server::cli::SimLlmArgs),
    /// Load-test the engine: a generated or given workload, its makespan against the
    /// critical-path bound, throughput, dispatch latency, memory and model calls.
    #[command(after_help = planwave_loadtest_cli::AFTER_HELP)]
    Loadtest(planwave_loadtest_cli::LoadtestArgs),
    /// The HTTP API and live web view of runs under --data (prints its base URL first).
    Serve(serve::ServeArgs),
    /// Summarize a finished run directory: status, wave, timing, attempts and tokens per task.
    #[command(after_help = EXIT_CODES_HELP)]
    Show(show::ShowArgs),
}

/// The batch command line recorded in `dir`'s `invocation.json`, parsed again as this binary
/// parses its own (so a resumed batch gets exactly the options it started with).
pub fn recorded_command(
    dir: &std::path::Path,
) -> Result<(planwave_runner::ops::BatchInvocation, Command), planwave_runner::ops::InvalidInput> {
    let inv = planwave_runner::ops::BatchInvocation::read(dir)?;
    for note in inv.origin.check_redacted(|k| std::env::var(k).ok())? {
        eprintln!("planwave: {note}");
    }
    let cli = Cli::try_parse_from(std::iter::once("planwave".to_owned()).chain(inv.argv.clone()))
        .map_err(|e| {
        planwave_runner::ops::InvalidInput::one(
            dir.display().to_string(),
            format!("invocation.json: {}", e.to_string().trim()),
        )
    })?;
    Ok((inv, cli.command))
}

pub async fn dispatch(cli: Cli) -> anyhow::Result<exit::Outcome> {
    planwave_runner::ops::set_max_input_bytes(cli.max_input_bytes.as_u64());
    match cli.command {
        Command::Validate(a) => validate::validate(a).await,
        Command::Waves(a) => waves::waves(a),
        Command::Run(a) => telemetry::in_root("run", run::run(a)).await,
        Command::Plan(a) => telemetry::in_root("plan", plan::plan(a)).await,
        Command::Research(a) => telemetry::in_root("research", research::research(a)).await,
        Command::Resume(a) => telemetry::in_root("resume", resume::resume(a)).await,
        Command::Batch(a) => telemetry::in_root("batch", batch::batch(a)).await,
        Command::Worker(a) => telemetry::in_root("worker", worker::worker(a)).await,
        Command::SimLlm(a) => {
            let stop = planwave_runner::ops::stop_signal();
            planwave_sim_server::cli::sim_llm(a, stop).await?;
            Ok(exit::Outcome(exit::OK))
        }
        Command::Loadtest(a) => telemetry::in_root("loadtest", loadtest::loadtest(a)).await,
        Command::Show(a) => show::show(a),
        Command::Serve(a) => telemetry::in_root("serve", serve::serve(a)).await,
    }
}

/// One line per panic instead of a backtrace: a subagent panic is a task failure the run
/// reports, not a crash. `PLANWAVE_BACKTRACE=1` restores the default hook's backtrace.
///
/// `print!` panics when stdout is a closed pipe (`planwave validate big.json | head -c 10`);
/// that is not a failure of planwave, so the process ends as Unix tools do there: by SIGPIPE,
/// quietly. (SIGPIPE itself stays ignored, as Rust sets it: a peer closing a socket must
/// not kill a run.)
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    let backtrace = std::env::var_os("PLANWAVE_BACKTRACE").is_some();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic payload)".into());
        if msg.starts_with("failed printing to std") && msg.contains("Broken pipe") {
            planwave_runner::term::die_of_sigpipe();
        }
        if backtrace {
            return default(info);
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        // Not eprintln!: with stderr closed too, a second panic here would abort.
        let _ = writeln!(std::io::stderr(), "planwave: panic{at}: {msg}");
    }));
}

//! `planwave plan "GOAL" [--out plan.json]`

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use planwave_config::spec::{
    HostOptions, PromptOptions, SimOptions, SimReflectOptions, SimTaskOptions,
};
use planwave_runner::ops::{CtrlC, PlanRequest, RunnerError, Stderr, plan_goal};

use super::exit::InvalidInput;
use super::exit::{INTERRUPTED, OK, Outcome};
use super::job;
use super::llm::{self, MetaOptions, PlannerOptions, Seed};
use super::waves::text as waves_text;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The research goal, e.g. "深度分析特斯拉公司".
    pub goal: String,
    /// Write the plan (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the plan as JSON on stdout instead of the readable summary.
    #[arg(long)]
    pub json: bool,
    /// Seed for the simulator and retry jitter.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub planner: PlannerOptions,
    #[command(flatten)]
    pub meta: MetaOptions,
    /// The model, prompts and MCP servers as `research` has them (and `[mcp]`): the
    /// planner's prompt lists the servers' tools with their input schemas, and the plan is
    /// checked against them.
    #[command(flatten)]
    pub host: HostOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
    #[command(flatten)]
    pub sim_tasks: SimTaskOptions,
    #[command(flatten)]
    pub reflect: SimReflectOptions,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

pub async fn plan(args: PlanArgs) -> anyhow::Result<Outcome> {
    let settings = llm::settings(&[
        &args.host,
        &args.prompts,
        &args.planner,
        &args.meta,
        &Seed(args.seed),
    ])?;
    let sim = args
        .sim
        .sim_config(
            &args.sim_tasks,
            &args.reflect,
            args.host.sim_latency_file.as_deref(),
            settings.run.seed,
        )
        .map_err(InvalidInput::from)?;
    let resources = job::resources(&settings, sim)?;
    // The estimate's fallback: this model's recent call times kept beside the plan cache.
    let subagent_model = resources
        .provider
        .model_for(planwave_llm::AgentRole::Subagent);
    let cache = settings
        .plan_cache
        .as_ref()
        .map(planwave_runner::ops::PlanCache::new);
    let interrupt = CtrlC::listen();
    // Started as `research` starts them: the planner lists their tools; shut down after.
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    let planned = resources
        .scope(async |resources| {
            plan_goal(
                PlanRequest {
                    goal: &args.goal,
                    reflection: None,
                    failed_tools: &[],
                    resources,
                    config: settings.planner.clone(),
                    quiet: args.quiet,
                    cancel: &interrupt.token(),
                    notes: &Stderr,
                },
                &mut |_| {},
            )
            .await
        })
        .await?;
    let Some(outcome) = planned else {
        eprintln!("interrupted");
        return Ok(Outcome(INTERRUPTED));
    };
    let (attempts, tokens) = (outcome.attempts.len(), outcome.usage().total());
    let warnings: Vec<String> = outcome
        .attempts
        .iter()
        .flat_map(|a| a.warnings.iter().cloned())
        .collect();
    let plan = &outcome.into_plan().map_err(RunnerError::from)?;
    let mut json = serde_json::to_string_pretty(plan.spec())?;
    json.push('\n');
    if let Some(path) = &args.out {
        std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        print!("{json}");
        return Ok(Outcome(OK));
    }
    println!(
        "plan: {} tasks, {} waves, longest chain {} ({}) after {} attempt(s), {} tokens",
        plan.len(),
        plan.waves().len(),
        plan.critical_path().len(),
        plan.joined_ids(plan.critical_path(), " -> "),
        attempts,
        tokens
    );
    println!("topic: {}", plan.spec().topic);
    for (i, t) in plan.tasks().iter().enumerate() {
        let after = match plan.deps(i) {
            [] => "-".to_string(),
            deps => plan.joined_ids(deps, ", "),
        };
        println!("  task {}: {} (after: {after})", t.id, t.title());
    }
    print!("{}", waves_text(plan));
    let dir = args.out.as_deref().and_then(std::path::Path::parent);
    let cached = cache.as_ref().map(|cache| super::estimate::CacheTimes {
        cache,
        model: &subagent_model,
    });
    print!("{}", super::estimate::line(plan.waves().len(), dir, cached));
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if let Some(path) = &args.out {
        println!("plan written to {}", path.display());
    }
    Ok(Outcome(OK))
}

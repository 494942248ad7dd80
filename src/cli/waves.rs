//! `planwave waves PLAN [--format text|json|mermaid]`

use std::fmt::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use planwave_plan::ValidatedPlan;
use planwave_report::waves_mermaid;

use super::exit::{OK, Outcome};
use super::input::load_plan;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Mermaid,
}

#[derive(Debug, Args)]
pub struct WavesArgs {
    /// Plan file; `-` reads stdin.
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn waves(args: WavesArgs) -> anyhow::Result<Outcome> {
    let plan = load_plan(&args.plan)?;
    let out = match args.format {
        Format::Text => {
            // A plan in a run directory: that run's calls say how long a wave takes; else
            // the calls recorded beside the plan cache planwave.toml names.
            let dir = args.plan.parent();
            let cache = configured_cache();
            let cached = cache
                .as_ref()
                .map(|(cache, model)| super::estimate::CacheTimes { cache, model });
            text(&plan) + &super::estimate::line(plan.waves().len(), dir, cached)
        }
        Format::Json => serde_json::to_string(&plan.layout())? + "\n",
        Format::Mermaid => waves_mermaid(&plan),
    };
    print!("{out}");
    Ok(Outcome(OK))
}

/// The plan cache the settings name (`$PLANWAVE_CONFIG`, else `./planwave.toml`; `waves` has
/// no flags of its own for it) and the model subagents would use. `None` when there is none,
/// or the settings do not resolve: the estimate is only a hint, never a reason to fail.
fn configured_cache() -> Option<(planwave_runner::ops::PlanCache, String)> {
    let settings = super::llm::settings(&[]).ok()?;
    let cache = planwave_runner::ops::PlanCache::new(settings.plan_cache.as_ref()?);
    let model = match &settings.llm {
        planwave_config::LlmChoice::Sim => planwave_sim::SIM_MODEL.to_owned(),
        planwave_config::LlmChoice::OpenAi { config, .. } => config
            .models
            .for_role(planwave_llm::AgentRole::Subagent)
            .to_owned(),
    };
    Some((cache, model))
}

pub fn text(plan: &ValidatedPlan) -> String {
    let mut s = String::new();
    for (k, w) in plan.waves().iter().enumerate() {
        let _ = writeln!(s, "wave {k}: {}", plan.joined_ids(w, ", "));
    }
    let _ = writeln!(
        s,
        "critical path: {}",
        plan.joined_ids(plan.critical_path(), " -> ")
    );
    s
}

//! `planwave validate PLAN [--mcp-config FILE] [--meta KEY=VALUE] [--config FILE]`

use std::path::PathBuf;

use clap::Args;
use planwave_config::spec::MetaOptions;
use planwave_plan::{LLM_CALL, ValidatedPlan};

use super::exit::{OK, Outcome};
use super::mcp;
use planwave_config::{ProcessEnv, load_validator};
use planwave_runner::ops::{
    CommandValidator, InvalidInput, Stderr, parse_plan_source, tool_catalog, validate_plan,
};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Plan file (JSON, possibly wrapped in prose or a ```json fence); `-` reads stdin.
    pub plan: PathBuf,
    /// Also check tool steps and `suggested_tools` against these MCP servers' tools (the
    /// servers are started to list them).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// The job's metadata, as `run --meta` gives it: `{{meta.KEY}}` references are checked
    /// against it.
    #[command(flatten)]
    pub meta: MetaOptions,
    /// Config file whose `[validate] command` (a custom validator) also checks the plan;
    /// default: $PLANWAVE_CONFIG, else ./planwave.toml if present.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

pub async fn validate(args: ValidateArgs) -> anyhow::Result<Outcome> {
    let (source, mut spec) = parse_plan_source(&args.plan)?;
    // As `run` does: `--meta` adds to (and overrides) what the plan file carries.
    spec.about.meta.extend(args.meta.meta.iter().cloned());
    // The custom validator's problems join the built-in ones (it reads the plan as parsed,
    // valid or not); the validator failing is an error of its own (exit 1), not the plan's.
    let custom = match load_validator(args.config.as_deref(), &ProcessEnv)? {
        Some(v) => {
            let json = serde_json::to_string(&spec)?;
            CommandValidator::new(v).check(&json).await?
        }
        None => Vec::new(),
    };
    let checked = match &args.mcp_config {
        None => validate_plan(&source, spec, None, &Stderr),
        Some(path) => {
            let servers = mcp::servers_from_file(path)?;
            let tools = tool_catalog(&servers, &Stderr).await;
            validate_plan(&source, spec, Some(&tools), &Stderr)
        }
    };
    let plan = match checked {
        Ok(plan) if custom.is_empty() => plan,
        Ok(_) => Err(InvalidInput {
            source_name: source,
            problems: custom,
        })?,
        Err(mut invalid) => {
            invalid.problems.extend(custom);
            Err(invalid)?
        }
    };
    for w in plan.format_advice() {
        eprintln!("{}: warning: {w}", args.plan.display());
    }
    println!(
        "valid: {} tasks, {} waves, longest chain {} ({})",
        plan.len(),
        plan.waves().len(),
        plan.critical_path().len(),
        plan.joined_ids(plan.critical_path(), " -> ")
    );
    if args.mcp_config.is_none() && names_tools(&plan) {
        // `run` refuses a plan naming a tool its servers lack: "valid" alone would promise
        // more than was checked.
        println!(
            "tool names not checked: no tools are configured (give --mcp-config FILE to check them)"
        );
    }
    Ok(Outcome(OK))
}

/// Whether the plan has a tool step other than `llm_call`: `run` refuses one whose tool its
/// servers lack (an unknown suggested tool is only dropped, with a warning).
fn names_tools(plan: &ValidatedPlan) -> bool {
    plan.tasks()
        .iter()
        .any(|t| t.tool.as_deref().is_some_and(|name| name != LLM_CALL))
}

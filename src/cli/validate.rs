//! `planwave validate PLAN`

use std::path::PathBuf;

use clap::Args;

use super::exit::{OK, Outcome};
use super::input::{load_plan, load_plan_with_tools};
use super::mcp;
use planwave_runner::{Stderr, tool_catalog};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Plan file (JSON, possibly wrapped in prose or a ```json fence); `-` reads stdin.
    pub plan: PathBuf,
    /// Also check tool steps and `suggested_tools` against these MCP servers' tools (the
    /// servers are started to list them).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
}

pub async fn validate(args: ValidateArgs) -> anyhow::Result<Outcome> {
    let plan = match &args.mcp_config {
        None => load_plan(&args.plan)?,
        Some(path) => {
            let servers = mcp::servers_from_file(path)?;
            let tools = tool_catalog(&servers, &Stderr).await;
            load_plan_with_tools(&args.plan, Some(&tools))?
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
    Ok(Outcome(OK))
}

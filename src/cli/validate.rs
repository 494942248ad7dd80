//! `planwave validate PLAN`

use std::path::PathBuf;

use clap::Args;

use super::exit::{OK, Outcome};
use super::input::load_plan;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Plan file (JSON, possibly wrapped in prose or a ```json fence); `-` reads stdin.
    pub plan: PathBuf,
}

pub fn validate(args: ValidateArgs) -> anyhow::Result<Outcome> {
    let plan = load_plan(&args.plan)?;
    let chain: Vec<String> = plan
        .critical_path()
        .iter()
        .map(|&i| plan.id(i as usize).to_string())
        .collect();
    println!(
        "valid: {} tasks, {} waves, longest chain {} ({})",
        plan.len(),
        plan.waves().len(),
        chain.len(),
        chain.join(" -> ")
    );
    Ok(Outcome(OK))
}

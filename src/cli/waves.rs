//! `planwave waves PLAN [--format text|json|mermaid]`

use std::fmt::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use planwave_plan::ValidatedPlan;
use planwave_report::mermaid_label;

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
        Format::Text => text(&plan),
        Format::Json => json(&plan)?,
        Format::Mermaid => mermaid(&plan),
    };
    print!("{out}");
    Ok(Outcome(OK))
}

fn ids(plan: &ValidatedPlan, idx: &[u32]) -> Vec<String> {
    idx.iter()
        .map(|&i| plan.id(i as usize).to_string())
        .collect()
}

pub fn text(plan: &ValidatedPlan) -> String {
    let mut s = String::new();
    for (k, w) in plan.waves().iter().enumerate() {
        let _ = writeln!(s, "wave {k}: {}", ids(plan, w).join(", "));
    }
    let _ = writeln!(
        s,
        "critical path: {}",
        ids(plan, plan.critical_path()).join(" -> ")
    );
    s
}

fn json(plan: &ValidatedPlan) -> anyhow::Result<String> {
    let waves: Vec<Vec<&planwave_plan::TaskId>> = plan
        .waves()
        .iter()
        .map(|w| w.iter().map(|&i| plan.id(i as usize)).collect())
        .collect();
    let cp: Vec<&planwave_plan::TaskId> = plan
        .critical_path()
        .iter()
        .map(|&i| plan.id(i as usize))
        .collect();
    Ok(serde_json::to_string(&serde_json::json!({ "waves": waves, "critical_path": cp }))? + "\n")
}

fn mermaid(plan: &ValidatedPlan) -> String {
    let mut s = String::from("graph LR\n");
    for (k, w) in plan.waves().iter().enumerate() {
        let _ = writeln!(s, "    subgraph wave{k} [\"wave {k}\"]");
        for &i in w {
            let label = mermaid_label(&format!(
                "{}: {}",
                plan.id(i as usize),
                plan.task(i as usize).title()
            ));
            let _ = writeln!(s, "        t{i}[\"{label}\"]");
        }
        let _ = writeln!(s, "    end");
    }
    for i in 0..plan.len() {
        for &d in plan.deps(i) {
            let _ = writeln!(s, "    t{d} --> t{i}");
        }
    }
    s
}

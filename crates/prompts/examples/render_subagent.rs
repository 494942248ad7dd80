//! Renders the subagent prompt (and its request context) for every task of a generated plan,
//! as the engine does once per task: a fixed workload for instruction counts of the prompt
//! path alone (docs/benchmarks.md, "Issue 17: the subagent prompt's cost").
//!
//! ```sh
//! cargo build --release -p planwave-prompts --example render_subagent
//! valgrind --tool=callgrind target/release/examples/render_subagent chain 5000
//! ```
//!
//! `wide N`: N independent tasks; `chain N`: each task also gets its prerequisite's section
//! (a fixed ~1.5 KB text, about the simulator's length).

use std::sync::Arc;

use planwave_plan::{ValidatedPlan, generate};
use planwave_prompts::{PriorSection, PromptSet, TaskText, Templates, subagent_context};

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let shape = args.next().unwrap_or_else(|| "wide".into());
    let Some(n) = args
        .next()
        .map_or(Some(10_000), |s| s.parse::<usize>().ok())
    else {
        eprintln!("usage: render_subagent [wide|chain] [TASKS]");
        return std::process::ExitCode::from(2);
    };
    let spec = match shape.as_str() {
        "chain" => generate::chain(n),
        "wide" => generate::wide(n),
        _ => {
            eprintln!("shape must be wide or chain");
            return std::process::ExitCode::from(2);
        }
    };
    let plan = match ValidatedPlan::new(spec) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("{e:?}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let templates = Templates::builtin();
    let section: Arc<str> = Arc::from(
        "## Synthetic task\n\nThis section (task 1) is about the synthetic task, serving the \
         topic. The analysis below uses simulated data sources; the figures only demonstrate \
         the flow.\n\n"
            .repeat(8),
    );
    let mut bytes = 0usize;
    for i in 0..plan.len() {
        let prior: Vec<PriorSection> = match plan.deps(i).first() {
            Some(&dep) => vec![PriorSection {
                index: dep as usize,
                text: section.clone(),
            }],
            None => Vec::new(),
        };
        let own = TaskText::of(plan.task(i));
        let messages = templates.subagent(&plan, i, &own, &prior);
        let context = subagent_context(&plan, i, &own, &prior);
        bytes += messages.iter().map(|m| m.content.len()).sum::<usize>() + context.task_title.len();
    }
    // Printed so the work cannot be optimised away, and as a check that runs compare.
    println!("{bytes}");
    std::process::ExitCode::SUCCESS
}

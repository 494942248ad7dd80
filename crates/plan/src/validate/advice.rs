//! Warnings about a valid plan that strays from the research-plan format: ids that
//! are not 1..N, a `research_type` outside the five, and dependencies already implied through
//! another prerequisite (the format asks for direct prerequisites only). The plan still runs;
//! `validate` says what a careful author would fix.

use crate::model::{PlanFormat, PlanSpec, TaskId};
use crate::validate::Warning;

/// The research types of the format.
pub const RESEARCH_TYPES: [&str; 5] = ["company", "industry", "strategy", "macro", "quantitative"];

/// Ancestor visits the redundancy check may make before it gives up on a plan: its cost grows
/// with depth × fan-in, and a million-task plan must still validate in seconds.
const REDUNDANCY_BUDGET: usize = 2_000_000;

pub(crate) fn advise(spec: &PlanSpec, deps: &[Vec<u32>], wave: &[u32]) -> Vec<Warning> {
    let mut out = Vec::new();
    if spec.format != PlanFormat::Research {
        return out;
    }
    if let Some(t) = spec.research_type.as_deref()
        && !RESEARCH_TYPES.contains(&t.trim())
    {
        out.push(Warning(format!(
            "research_type {t:?} is not one of {} (the plan format's five)",
            RESEARCH_TYPES.join(", ")
        )));
    }
    let stray = spec
        .tasks
        .iter()
        .enumerate()
        .find(|(i, t)| t.id != TaskId::Int(*i as i64 + 1));
    if let Some((i, t)) = stray {
        out.push(Warning(format!(
            "task ids are not the consecutive integers 1..{} the plan format uses (task {} is at position {})",
            spec.tasks.len(),
            t.id,
            i + 1
        )));
    }
    out.extend(redundant(spec, deps, wave));
    out
}

/// `task T: dependency D is redundant (implied through E)` for each direct dependency that is
/// also reached through another one.
fn redundant(spec: &PlanSpec, deps: &[Vec<u32>], wave: &[u32]) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut budget = REDUNDANCY_BUDGET;
    // `seen[a] == stamp`: visited in the current search (one stamp per search).
    let mut seen = vec![0u32; deps.len()];
    let mut stamp = 0u32;
    for (t, direct) in deps.iter().enumerate() {
        if direct.len() < 2 {
            continue;
        }
        // A dependency can only be implied through one in a later wave; each search stops
        // below the lowest wave among the direct ones.
        let floor = direct.iter().map(|&d| wave[d as usize]).min().unwrap_or(0);
        let mut reported: Vec<u32> = Vec::new();
        for &via in direct {
            stamp = stamp.wrapping_add(1).max(1);
            let mut stack: Vec<u32> = deps[via as usize].clone();
            while let Some(a) = stack.pop() {
                if seen[a as usize] == stamp || wave[a as usize] < floor {
                    continue;
                }
                seen[a as usize] = stamp;
                if budget == 0 {
                    return out;
                }
                budget -= 1;
                if direct.contains(&a) && !reported.contains(&a) {
                    reported.push(a);
                    out.push(Warning(format!(
                        "task {}: dependency {} is redundant (implied through {})",
                        spec.tasks[t].id, spec.tasks[a as usize].id, spec.tasks[via as usize].id
                    )));
                }
                stack.extend_from_slice(&deps[a as usize]);
            }
        }
    }
    out
}

//! Results of completed tasks kept for the `{{ID.result}}` references of later tool steps:
//! only for tasks some reference names, so a plan without references keeps nothing (sections
//! can be large and plans can hold 100,000 tasks). The supervisor's alone: a step's subagent
//! gets the results its own references name in its arguments.

use planwave_plan::{ValidatedPlan, refs};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

#[derive(Default)]
pub(super) struct References {
    needed: FxHashSet<usize>,
    kept: FxHashMap<usize, Value>,
}

impl References {
    pub(super) fn for_plan(plan: &ValidatedPlan) -> References {
        References {
            needed: plan
                .tasks()
                .iter()
                .filter_map(|t| t.params.as_ref())
                .flat_map(refs::references)
                .filter_map(|r| plan.index_of_key(&r.task))
                .collect(),
            kept: FxHashMap::default(),
        }
    }

    /// Keeps completed task `index`'s result if a reference names it: the result its record
    /// keeps (`kept`) when there is one, else its section read as one.
    pub(super) fn keep(&mut self, index: usize, kept: Option<&Value>, section: &str) {
        if self.needed.contains(&index) {
            let result = planwave_record::read_result(kept, section);
            self.kept.insert(index, result);
        }
    }

    /// The kept results that task `index`'s parameters reference.
    pub(super) fn for_task(&self, plan: &ValidatedPlan, index: usize) -> Vec<(usize, Value)> {
        let Some(params) = plan.task(index).params.as_ref() else {
            return Vec::new();
        };
        let mut out: Vec<(usize, Value)> = Vec::new();
        for r in refs::references(params) {
            if let Some(i) = plan.index_of_key(&r.task)
                && !out.iter().any(|(seen, _)| *seen == i)
                && let Some(v) = self.kept.get(&i)
            {
                out.push((i, v.clone()));
            }
        }
        out
    }
}

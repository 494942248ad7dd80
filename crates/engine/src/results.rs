//! Task results kept for the `{{ID.result}}` references of later tool steps: only for tasks
//! some reference names, so a plan without references keeps nothing (sections can be large
//! and plans can hold 100,000 tasks).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use planwave_plan::{ValidatedPlan, refs};
use serde_json::Value;

#[derive(Default)]
pub struct Results {
    needed: HashSet<usize>,
    kept: Mutex<HashMap<usize, Value>>,
}

impl Results {
    pub fn for_plan(plan: &ValidatedPlan) -> Results {
        let needed = plan
            .tasks()
            .iter()
            .filter_map(|t| t.params.as_ref())
            .flat_map(refs::references)
            .filter_map(|r| plan.index_of_key(&r.task))
            .collect();
        Results {
            needed,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps task `index`'s result if a reference needs it (`make` runs only then).
    pub fn keep(&self, index: usize, make: impl FnOnce() -> Value) {
        if self.needed.contains(&index)
            && let Ok(mut k) = self.kept.lock()
        {
            k.insert(index, make());
        }
    }

    /// As [`Results::keep`], unless a result is kept already (its subagent's own, richer
    /// than one rebuilt from the section text).
    pub fn keep_missing(&self, index: usize, make: impl FnOnce() -> Value) {
        if self.needed.contains(&index)
            && let Ok(mut k) = self.kept.lock()
        {
            k.entry(index).or_insert_with(make);
        }
    }

    pub fn get(&self, index: usize) -> Option<Value> {
        self.kept.lock().ok()?.get(&index).cloned()
    }
}

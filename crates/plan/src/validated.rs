//! [`ValidatedPlan`]: a plan whose ids resolve, whose graph is acyclic, and whose waves are known.

use crate::model::{Lang, PlanSpec, TaskId, TaskSpec};
use crate::validate::{ValidationErrors, Warning};

/// A plan that passed validation. Tasks are addressed by their index in `spec().tasks`.
///
/// **Invariant:** ids are unique, every dependency resolves, the graph is acyclic, and
/// `wave(i) > wave(d)` for every prerequisite `d` of `i`.
#[derive(Clone, Debug)]
pub struct ValidatedPlan {
    pub(crate) spec: PlanSpec,
    /// Task ids to indices.
    pub(crate) index: crate::validate::IdIndex,
    /// Direct prerequisites of each task, as indices, in the order written.
    pub(crate) deps: Vec<Vec<u32>>,
    /// Direct dependents of each task, as indices, ascending.
    pub(crate) dependents: Vec<Vec<u32>>,
    /// Wave of each task: the number of edges on the longest path from a root.
    pub(crate) wave: Vec<u32>,
    /// Tasks per wave, each wave in declaration order.
    pub(crate) waves: Vec<Vec<u32>>,
    /// The longest chain, root first.
    pub(crate) critical_path: Vec<u32>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) lang: Lang,
}

impl ValidatedPlan {
    /// Validates `spec`, collecting every problem rather than stopping at the first.
    pub fn new(spec: PlanSpec) -> Result<ValidatedPlan, ValidationErrors> {
        crate::validate::validate(spec)
    }

    /// Validates `spec` against the tools a run has: unknown `suggested_tools` are dropped
    /// with a warning, an unknown tool in a tool step is a problem.
    pub fn with_tools(
        mut spec: PlanSpec,
        catalog: &crate::ToolCatalog,
    ) -> Result<ValidatedPlan, ValidationErrors> {
        let (warnings, tool_problems) = crate::tools::check_tools(&mut spec, catalog);
        match crate::validate::validate(spec) {
            Ok(mut plan) if tool_problems.is_empty() => {
                plan.warnings.extend(warnings);
                Ok(plan)
            }
            Ok(_) => Err(ValidationErrors(tool_problems)),
            Err(mut e) => {
                e.0.extend(tool_problems);
                Err(e)
            }
        }
    }

    pub fn spec(&self) -> &PlanSpec {
        &self.spec
    }
    pub fn len(&self) -> usize {
        self.spec.tasks.len()
    }
    pub fn is_empty(&self) -> bool {
        self.spec.tasks.is_empty()
    }
    pub fn task(&self, i: usize) -> &TaskSpec {
        &self.spec.tasks[i]
    }
    pub fn tasks(&self) -> &[TaskSpec] {
        &self.spec.tasks
    }
    pub fn id(&self, i: usize) -> &TaskId {
        &self.spec.tasks[i].id
    }
    pub fn index_of(&self, id: &TaskId) -> Option<usize> {
        self.index.get(id)
    }
    pub fn index_of_key(&self, key: &str) -> Option<usize> {
        self.index.get_key(key)
    }
    pub fn deps(&self, i: usize) -> &[u32] {
        &self.deps[i]
    }
    pub fn dependents(&self, i: usize) -> &[u32] {
        &self.dependents[i]
    }
    pub fn wave(&self, i: usize) -> u32 {
        self.wave[i]
    }
    pub fn waves(&self) -> &[Vec<u32>] {
        &self.waves
    }
    pub fn critical_path(&self) -> &[u32] {
        &self.critical_path
    }
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Where a valid plan strays from the research-plan format: ids not 1..N, an unknown
    /// `research_type`, dependencies implied through another prerequisite. Computed on
    /// request (`validate` shows them; runs do not need them).
    pub fn format_advice(&self) -> Vec<Warning> {
        crate::validate::advice::advise(&self.spec, &self.deps, &self.wave)
    }
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// The same plan with its language set explicitly (`--lang`), instead of detected from
    /// its text: prompts, placeholders and the report follow it.
    pub fn with_lang(mut self, lang: Lang) -> ValidatedPlan {
        self.lang = lang;
        self
    }

    /// The plan with `metadata.KEY` set to `value`: metadata takes no part in validation
    /// (the plan cache records a similar goal's match there).
    pub fn with_metadata(mut self, key: &str, value: serde_json::Value) -> ValidatedPlan {
        self.spec.about.metadata.insert(key.to_owned(), value);
        self
    }

    /// The plan under a new identity (the planner's `plan_id` and `created_at`): neither
    /// takes part in validation, so the plan stays valid.
    pub fn with_identity(mut self, plan_id: String, created_at: String) -> ValidatedPlan {
        self.spec.about.plan_id = Some(plan_id);
        self.spec.about.created_at = Some(serde_json::Value::String(created_at));
        self
    }

    /// Longest chain when each task takes `weights[i]`: `(total weight, path root first)`.
    /// Used for the critical-path lower bound of a run's makespan.
    pub fn critical_path_weighted(&self, weights: &[f64]) -> (f64, Vec<u32>) {
        crate::validate::weighted_critical_path(self, weights)
    }

    /// Indices of `i`'s transitive prerequisites (not including `i`), ascending.
    pub fn ancestors(&self, i: usize) -> Vec<u32> {
        let mut seen = vec![false; self.len()];
        let mut stack: Vec<u32> = self.deps[i].clone();
        let mut out = Vec::new();
        while let Some(d) = stack.pop() {
            if std::mem::replace(&mut seen[d as usize], true) {
                continue;
            }
            out.push(d);
            stack.extend_from_slice(&self.deps[d as usize]);
        }
        out.sort_unstable();
        out
    }

    /// Indices of `i`'s transitive dependents (not including `i`), ascending.
    pub fn descendants(&self, i: usize) -> Vec<u32> {
        let mut seen = vec![false; self.len()];
        let mut stack: Vec<u32> = self.dependents[i].clone();
        let mut out = Vec::new();
        while let Some(d) = stack.pop() {
            if std::mem::replace(&mut seen[d as usize], true) {
                continue;
            }
            out.push(d);
            stack.extend_from_slice(&self.dependents[d as usize]);
        }
        out.sort_unstable();
        out
    }
}

//! The rules of executing a plan while it streams (LLMCompiler-style), kept pure so they can be
//! tested without a runtime: which streamed tasks may join the plan being run ([`Admission`]),
//! and which of the tasks that ran early still count once the whole plan is known
//! ([`keep_map`]).
//!
//! A task joins when its object is complete, its id is new and non-empty, it has a
//! description, it does not depend on itself, and every dependency has already joined. The
//! scheduler then starts it once those dependencies have completed. So a task that names an id
//! not seen yet waits, and a cycle can never start: no task on it ever has all its
//! prerequisites joined.

use std::collections::{HashMap, HashSet};

use planwave_plan::{TaskId, TaskSpec, ValidatedPlan};

/// The streamed tasks admitted so far, in the order they joined (every task after its
/// dependencies, so positions never change as the plan grows).
#[derive(Debug, Default)]
pub struct Admission {
    admitted: Vec<TaskSpec>,
    joined: HashSet<TaskId>,
    /// Ids seen in the stream (the first object with an id wins; a later duplicate is left
    /// to the whole plan's validation).
    seen: HashSet<TaskId>,
    /// Tasks waiting for dependencies that have not joined, in arrival order.
    waiting: Vec<TaskSpec>,
}

impl Admission {
    pub fn new() -> Admission {
        Admission::default()
    }

    /// Offers a task complete in the stream; returns the ids that joined because of it (it,
    /// and waiting tasks it unblocked), in joining order.
    pub fn offer(&mut self, task: TaskSpec) -> Vec<TaskId> {
        let id_ok = !task.id.key().trim().is_empty();
        if !id_ok || !self.seen.insert(task.id.clone()) {
            return Vec::new();
        }
        if task.description.trim().is_empty() || task.dependencies.contains(&task.id) {
            return Vec::new();
        }
        self.waiting.push(task);
        let mut joined = Vec::new();
        // A join can unblock tasks that arrived earlier: sweep until nothing moves.
        while let Some(pos) = self
            .waiting
            .iter()
            .position(|t| t.dependencies.iter().all(|d| self.joined.contains(d)))
        {
            let t = self.waiting.remove(pos);
            self.joined.insert(t.id.clone());
            joined.push(t.id.clone());
            self.admitted.push(t);
        }
        joined
    }

    /// The admitted tasks, dependencies before dependents.
    pub fn tasks(&self) -> &[TaskSpec] {
        &self.admitted
    }

    /// Ids of tasks still waiting for an unseen (or never-joining) dependency.
    pub fn waiting(&self) -> Vec<TaskId> {
        self.waiting.iter().map(|t| t.id.clone()).collect()
    }
}

/// For each task of `early` (a plan built while streaming, dependencies before dependents),
/// its index in `fin`, the whole validated plan, when the work done for it still holds: the
/// task is in `fin` unchanged (id, description, dependencies and everything else its prompt is
/// made from), its section file has the same name, and every dependency is kept too (its
/// context would otherwise differ). A different topic, objectives or language changes every
/// prompt, so then nothing is kept.
pub fn keep_map(
    early: &ValidatedPlan,
    fin: &ValidatedPlan,
    early_files: &[String],
    fin_files: &[String],
) -> Vec<Option<usize>> {
    let (a, b) = (early.spec(), fin.spec());
    if a.topic != b.topic || a.objectives != b.objectives || early.lang() != fin.lang() {
        return vec![None; early.len()];
    }
    let mut kept: Vec<Option<usize>> = Vec::with_capacity(early.len());
    let by_id: HashMap<&TaskId, usize> = (0..fin.len()).map(|j| (fin.id(j), j)).collect();
    for i in 0..early.len() {
        let target = by_id.get(early.id(i)).copied().filter(|&j| {
            fin.task(j) == early.task(i)
                && early_files.get(i) == fin_files.get(j)
                && early.deps(i).iter().all(|&d| kept[d as usize].is_some())
        });
        kept.push(target);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_plan::PlanSpec;

    fn t(id: i64, deps: &[i64]) -> TaskSpec {
        TaskSpec::new(
            id,
            format!("task {id}"),
            deps.iter().map(|&d| TaskId::Int(d)).collect(),
        )
    }

    fn ids(v: &[i64]) -> Vec<TaskId> {
        v.iter().map(|&i| TaskId::Int(i)).collect()
    }

    fn plan(tasks: Vec<TaskSpec>) -> ValidatedPlan {
        ValidatedPlan::new(PlanSpec {
            topic: "t".into(),
            tasks,
            ..PlanSpec::default()
        })
        .expect("valid")
    }

    #[test]
    fn a_task_joins_once_its_dependencies_have_joined() {
        let mut a = Admission::new();
        assert_eq!(a.offer(t(1, &[])), ids(&[1]));
        // 3 names 2, not seen yet: it waits.
        assert_eq!(a.offer(t(3, &[1, 2])), ids(&[]));
        assert_eq!(a.waiting(), ids(&[3]));
        // 2 arrives: it joins, then 3 which it unblocked.
        assert_eq!(a.offer(t(2, &[1])), ids(&[2, 3]));
        let order: Vec<TaskId> = a.tasks().iter().map(|t| t.id.clone()).collect();
        assert_eq!(order, ids(&[1, 2, 3]));
        // The admitted tasks always form a valid plan.
        assert_eq!(plan(a.tasks().to_vec()).len(), 3);
    }

    #[test]
    fn a_cycle_never_joins_and_bad_objects_are_refused() {
        let mut a = Admission::new();
        assert!(a.offer(t(1, &[3])).is_empty());
        assert!(a.offer(t(2, &[1])).is_empty());
        assert!(a.offer(t(3, &[2])).is_empty());
        assert_eq!(a.offer(t(4, &[])), ids(&[4]));
        assert_eq!(a.waiting(), ids(&[1, 2, 3]));
        // Self-dependency, duplicate id, empty description: never admitted.
        assert!(a.offer(t(5, &[5])).is_empty());
        assert!(a.offer(t(4, &[])).is_empty());
        assert!(a.offer(TaskSpec::new(6, " ", vec![])).is_empty());
        assert_eq!(a.tasks().len(), 1);
    }

    #[test]
    fn only_unchanged_tasks_with_kept_dependencies_are_kept() {
        let early = plan(vec![t(1, &[]), t(2, &[]), t(4, &[1, 2])]);
        // The repaired plan changes 2's description: 4 built on its old section, so it goes
        // too; 1 is kept at its new position.
        let mut two = t(2, &[]);
        two.description = "another angle".into();
        let fin = plan(vec![t(3, &[]), t(1, &[]), two, t(4, &[1, 2])]);
        let files = |p: &ValidatedPlan| -> Vec<String> {
            (0..p.len()).map(|i| format!("{}.md", p.id(i))).collect()
        };
        let kept = keep_map(&early, &fin, &files(&early), &files(&fin));
        assert_eq!(kept, vec![Some(1), None, None]);
        // Unchanged plan: everything kept where it is.
        let same = keep_map(&early, &early, &files(&early), &files(&early));
        assert_eq!(same, vec![Some(0), Some(1), Some(2)]);
        // Another topic changes every prompt.
        let mut spec = fin.spec().clone();
        spec.topic = "other".into();
        let other = ValidatedPlan::new(spec).expect("valid");
        assert!(
            keep_map(&early, &other, &files(&early), &files(&other))
                .iter()
                .all(Option::is_none)
        );
    }
}

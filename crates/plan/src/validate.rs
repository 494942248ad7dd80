//! Strict validation of a [`PlanSpec`] into a [`ValidatedPlan`].
//!
//! Every problem is collected (a repair prompt should fix them all at once), in a stable
//! order: `NoTasks`; then per task in declaration order its empty id, empty description,
//! duplicate id, self-dependency and unknown dependencies; then one cycle per strongly
//! connected component. The graph algorithms live in [`graph`] and are all iterative.

pub(crate) mod advice;
mod graph;
mod ids;

use std::collections::HashSet;
use std::fmt;

use crate::model::{PlanSpec, TaskId, TaskSpec};
use crate::validated::ValidatedPlan;
pub(crate) use ids::IdIndex;

/// One reason a plan is invalid. `Display` gives the exact user-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// `plan has no tasks`
    NoTasks,
    /// `task #3: id is empty` (position is 1-based)
    EmptyId { position: usize },
    /// `task 3: description is empty`
    EmptyDescription { id: TaskId },
    /// `task 3: duplicate id (tasks #2 and #5)` (positions 1-based)
    DuplicateId {
        id: TaskId,
        first: usize,
        second: usize,
    },
    /// `task 2: dependency 9 does not match any task`
    UnknownDependency { task: TaskId, dependency: TaskId },
    /// `task 4: depends on itself`
    SelfDependency { task: TaskId },
    /// `cycle: 1 -> 3 -> 2 -> 1` (arrows run from prerequisite to dependent)
    Cycle { path: Vec<TaskId> },
    /// Free-form problems added by later checks (tools, references).
    Other(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NoTasks => f.write_str("plan has no tasks"),
            Problem::EmptyId { position } => write!(f, "task #{position}: id is empty"),
            Problem::EmptyDescription { id } => write!(f, "task {id}: description is empty"),
            Problem::DuplicateId { id, first, second } => {
                write!(f, "task {id}: duplicate id (tasks #{first} and #{second})")
            }
            Problem::UnknownDependency { task, dependency } => {
                write!(
                    f,
                    "task {task}: dependency {dependency} does not match any task"
                )
            }
            Problem::SelfDependency { task } => write!(f, "task {task}: depends on itself"),
            Problem::Cycle { path } => {
                f.write_str("cycle: ")?;
                for (i, id) in path.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" -> ")?;
                    }
                    write!(f, "{id}")?;
                }
                Ok(())
            }
            Problem::Other(s) => f.write_str(s),
        }
    }
}

/// Every problem found, in a stable order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationErrors(pub Vec<Problem>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// Something odd but harmless that validation fixed (e.g. a dependency listed twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning(pub String);

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every cycle of the graph, as the ids along it.
fn cycles(spec: &PlanSpec, dependents: &[Vec<u32>]) -> Vec<Problem> {
    graph::cycles(dependents)
        .iter()
        .map(|cycle| Problem::Cycle {
            path: cycle
                .iter()
                .map(|&i| spec.tasks[i as usize].id.clone())
                .collect(),
        })
        .collect()
}

pub(crate) fn validate(mut spec: PlanSpec) -> Result<ValidatedPlan, ValidationErrors> {
    let n = spec.tasks.len();
    if n == 0 {
        return Err(ValidationErrors(vec![Problem::NoTasks]));
    }
    // Indices are stored as u32 to halve the graph's memory; no real plan comes close.
    if u32::try_from(n).is_err() {
        return Err(ValidationErrors(vec![Problem::Other(format!(
            "plan has {n} tasks; at most {} are supported",
            u32::MAX
        ))]));
    }

    // Duplicates are harmless, so they are fixed here (with a warning) before any check, so
    // that a duplicated unknown or self dependency is reported once.
    let mut warnings = Vec::new();
    for task in &mut spec.tasks {
        dedup_dependencies(task, &mut warnings);
    }

    let (index, first_definition) = IdIndex::build(&spec);

    // Second pass: per-task problems in the documented order, and the resolved edges.
    let mut problems = Vec::new();
    let mut deps: Vec<Vec<u32>> = Vec::with_capacity(n);
    for (i, task) in spec.tasks.iter().enumerate() {
        let empty_id = is_empty_id(&task.id);
        if empty_id {
            problems.push(Problem::EmptyId { position: i + 1 });
        }
        if task.description.trim().is_empty() {
            problems.push(Problem::EmptyDescription {
                id: task.id.clone(),
            });
        }
        if let Some(&Some(first)) = first_definition.get(i) {
            problems.push(Problem::DuplicateId {
                id: task.id.clone(),
                first: first + 1,
                second: i + 1,
            });
        }
        let mut resolved = Vec::with_capacity(task.dependencies.len());
        let mut unknown = Vec::new();
        let mut self_dependency = false;
        for dep in &task.dependencies {
            if !empty_id && same_key(dep, &task.id) {
                self_dependency = true;
            } else if let Some(j) = index.get(dep) {
                // `j < n <= u32::MAX`, checked above.
                resolved.push(j as u32);
            } else {
                unknown.push(Problem::UnknownDependency {
                    task: task.id.clone(),
                    dependency: dep.clone(),
                });
            }
        }
        if self_dependency {
            problems.push(Problem::SelfDependency {
                task: task.id.clone(),
            });
        }
        problems.append(&mut unknown);
        deps.push(resolved);
    }

    let dependents = graph::dependents(&deps);
    let order = graph::topological_order(&deps, &dependents);
    if order.len() < n {
        // Kahn's algorithm stalled, so some cycle exists: name each one.
        problems.extend(cycles(&spec, &dependents));
    }
    if problems.is_empty() {
        check_references(&spec, &index, &deps, &mut problems);
    }
    if !problems.is_empty() {
        return Err(ValidationErrors(problems));
    }

    let (wave, waves) = graph::waves(&deps, &order);
    let critical_path = graph::critical_path(&dependents, &order);
    let lang = spec.lang();
    Ok(ValidatedPlan {
        spec,
        index,
        deps,
        dependents,
        wave,
        waves,
        critical_path,
        warnings,
        lang,
    })
}

/// The heaviest chain (sum of its tasks' weights), root first. Missing, negative and
/// non-finite weights count as 0: weights are durations, and a NaN must not poison the sum.
pub(crate) fn weighted_critical_path(plan: &ValidatedPlan, weights: &[f64]) -> (f64, Vec<u32>) {
    let weight = |i: usize| {
        weights
            .get(i)
            .copied()
            .filter(|w| w.is_finite() && *w > 0.0)
            .unwrap_or(0.0)
    };
    // Waves in order are a topological order: every prerequisite sits in an earlier wave.
    let order = plan.waves.iter().flatten().copied();
    graph::heaviest_chain(&plan.deps, order, weight)
}

/// A tool step may only use results of its (transitive) prerequisites: anything else may not
/// exist yet when it runs. One problem per offending reference, in document order.
fn check_references(
    spec: &PlanSpec,
    index: &IdIndex,
    deps: &[Vec<u32>],
    problems: &mut Vec<Problem>,
) {
    for (i, task) in spec.tasks.iter().enumerate() {
        let Some(params) = &task.params else { continue };
        let refs = crate::refs::references(params);
        if refs.is_empty() {
            continue;
        }
        let ancestors = graph::ancestors(deps, i);
        for r in refs {
            match index.get_key(&r.task) {
                None if crate::refs::namespace(&spec.about, &r.task).is_some() => {
                    if let Some(p) = namespace_problem(spec, &task.id, &r) {
                        problems.push(p);
                    }
                }
                None => problems.push(Problem::Other(format!(
                    "task {}: parameter references unknown task {}",
                    task.id, r.task
                ))),
                Some(j) if !ancestors.contains(&(j as u32)) => {
                    problems.push(Problem::Other(format!(
                        "task {}: parameter references task {}, which is not among its prerequisites",
                        task.id, r.task
                    )))
                }
                Some(_) => {}
            }
        }
    }
}

/// Why a `{{vars.NAME}}` or `{{meta.KEY}}` reference cannot resolve, if it cannot.
fn namespace_problem(
    spec: &PlanSpec,
    task: &TaskId,
    r: &crate::refs::Reference,
) -> Option<Problem> {
    let root = crate::refs::namespace(&spec.about, &r.task)?;
    if !r.path.is_empty() && crate::refs::lookup(&root, &r.path).is_some() {
        return None;
    }
    let name = format!("{{{{{}.{}}}}}", r.task, r.path.join("."));
    let source = if r.task == crate::refs::VARS {
        "the plan's global_variables do not define it".to_owned()
    } else {
        "the job's metadata does not define it (--meta KEY=VALUE)".to_owned()
    };
    Some(Problem::Other(format!(
        "task {task}: parameter references {name}, but {source}"
    )))
}

fn is_empty_id(id: &TaskId) -> bool {
    matches!(id, TaskId::Str(s) if s.trim().is_empty())
}

/// Removes repeated dependencies (by key, keeping the first spelling) with one warning per
/// repeated key: `task 3: dependency 1 listed twice`.
fn dedup_dependencies(task: &mut TaskSpec, warnings: &mut Vec<Warning>) {
    let deps = &task.dependencies;
    // Most lists are short and clean: check without allocating before building sets.
    let maybe_repeated =
        deps.len() > 16 || (1..deps.len()).any(|j| deps[..j].iter().any(|d| same_key(d, &deps[j])));
    if !maybe_repeated {
        return;
    }
    let mut seen: HashSet<String> = HashSet::with_capacity(task.dependencies.len());
    let mut warned: HashSet<String> = HashSet::new();
    let id = &task.id;
    task.dependencies.retain(|dep| {
        let key = dep.key();
        if seen.contains(key.as_ref()) {
            if warned.insert(key.into_owned()) {
                warnings.push(Warning(format!("task {id}: dependency {dep} listed twice")));
            }
            false
        } else {
            seen.insert(key.into_owned());
            true
        }
    });
}

/// `a.key() == b.key()` without allocating for the common int/int case.
fn same_key(a: &TaskId, b: &TaskId) -> bool {
    match (a, b) {
        (TaskId::Int(x), TaskId::Int(y)) => x == y,
        (TaskId::Str(x), TaskId::Str(y)) => x == y,
        (TaskId::Int(n), TaskId::Str(s)) | (TaskId::Str(s), TaskId::Int(n)) => *s == n.to_string(),
    }
}

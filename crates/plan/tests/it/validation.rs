//! Validation problems: exact messages, their order, and the warnings of fixable oddities.

use planwave_plan::{
    PlanSpec, Problem, TaskId, TaskSpec, ValidatedPlan, ValidationErrors, parse_plan_str,
};

use crate::{messages, plan};

fn str_plan(tasks: &[(&str, &str, &[&str])]) -> PlanSpec {
    PlanSpec {
        tasks: tasks
            .iter()
            .map(|&(id, desc, deps)| {
                TaskSpec::new(id, desc, deps.iter().map(|&d| TaskId::from(d)).collect())
            })
            .collect(),
        ..PlanSpec::default()
    }
}

#[test]
fn no_tasks() {
    assert_eq!(messages(PlanSpec::default()), ["plan has no tasks"]);
}

#[test]
fn empty_id() {
    let spec = str_plan(&[("a", "x", &[]), ("  ", "y", &[])]);
    assert_eq!(messages(spec), ["task #2: id is empty"]);
}

#[test]
fn empty_description() {
    let mut spec = plan(&[(1, &[]), (3, &[])]);
    spec.tasks[1].description = " \n\t".into();
    assert_eq!(messages(spec), ["task 3: description is empty"]);
}

#[test]
fn duplicate_ids_reported_once_per_extra_definition() {
    let spec = plan(&[(1, &[]), (3, &[]), (2, &[]), (4, &[]), (3, &[]), (3, &[])]);
    assert_eq!(
        messages(spec),
        [
            "task 3: duplicate id (tasks #2 and #5)",
            "task 3: duplicate id (tasks #2 and #6)"
        ]
    );
}

#[test]
fn unknown_dependency() {
    assert_eq!(
        messages(plan(&[(1, &[]), (2, &[9])])),
        ["task 2: dependency 9 does not match any task"]
    );
}

#[test]
fn self_dependency() {
    assert_eq!(
        messages(plan(&[(1, &[]), (4, &[1, 4])])),
        ["task 4: depends on itself"]
    );
}

#[test]
fn cycle_runs_from_prerequisite_to_dependent() {
    // 3 depends on 1, 2 depends on 3, 1 depends on 2.
    let spec = plan(&[(1, &[2]), (2, &[3]), (3, &[1])]);
    assert_eq!(messages(spec), ["cycle: 1 -> 3 -> 2 -> 1"]);
}

#[test]
fn two_separate_cycles_each_reported() {
    // Cycle A: 1 -> 2 -> 1. Cycle B: 5 -> 6 -> 7 -> 5 (declared 7, 6, 5). 3 and 8 are fine;
    // 4 depends on a cycle but is not part of one.
    let spec = plan(&[
        (1, &[2]),
        (3, &[]),
        (7, &[6]),
        (2, &[1, 3]),
        (4, &[2]),
        (6, &[5]),
        (5, &[7]),
        (8, &[4]),
    ]);
    assert_eq!(
        messages(spec),
        ["cycle: 1 -> 2 -> 1", "cycle: 7 -> 5 -> 6 -> 7"]
    );
}

#[test]
fn shortest_cycle_within_a_component() {
    // 1 -> 2 -> 3 -> 4 -> 1 with a shortcut 2 -> 4: the shortest cycle through 1 skips 3.
    let spec = plan(&[(1, &[4]), (2, &[1]), (3, &[2]), (4, &[3, 2])]);
    assert_eq!(messages(spec), ["cycle: 1 -> 2 -> 4 -> 1"]);
}

#[test]
fn several_problems_at_once_in_documented_order() {
    let mut spec = plan(&[
        (1, &[2]),    // in the cycle 1 -> 3 -> 2 -> 1
        (2, &[3, 9]), // unknown 9
        (3, &[1]),
        (2, &[2, 7, 8]), // duplicate of #2, self, two unknowns
        (5, &[5]),       // self
    ]);
    spec.tasks[2].description = String::new();
    spec.tasks.push(TaskSpec::new("", "", vec![TaskId::Int(1)]));
    assert_eq!(
        messages(spec),
        [
            "task 2: dependency 9 does not match any task",
            "task 3: description is empty",
            "task 2: duplicate id (tasks #2 and #4)",
            "task 2: depends on itself",
            "task 2: dependency 7 does not match any task",
            "task 2: dependency 8 does not match any task",
            "task 5: depends on itself",
            "task #6: id is empty",
            "task : description is empty",
            "cycle: 1 -> 3 -> 2 -> 1",
        ]
    );
}

#[test]
fn string_ids() {
    let spec = str_plan(&[
        ("data_upload", "upload", &[]),
        ("step_1", "explore", &["data_upload", "step_9"]),
        ("step_2", "trend", &["step_3"]),
        ("step_3", "report", &["step_2"]),
    ]);
    assert_eq!(
        messages(spec),
        [
            "task step_1: dependency step_9 does not match any task",
            "cycle: step_2 -> step_3 -> step_2",
        ]
    );
}

#[test]
fn int_and_string_ids_match_by_key() {
    let spec = parse_plan_str(
        r#"{"tasks": [{"id": 1, "description": "a"}, {"id": "2", "description": "b", "dependencies": ["1"]},
                     {"id": 3, "description": "c", "dependencies": [2]}]}"#,
    )
    .unwrap();
    let plan = ValidatedPlan::new(spec).unwrap();
    assert_eq!(plan.deps(1), [0]);
    assert_eq!(plan.deps(2), [1]);
    assert_eq!(plan.index_of(&TaskId::Int(2)), Some(1));
    assert_eq!(plan.index_of_key("1"), Some(0));
}

#[test]
fn int_and_string_ids_collide_as_duplicates() {
    let spec = str_plan(&[("1", "a", &[]), ("x", "b", &[])]);
    let mut spec = spec;
    spec.tasks[1].id = TaskId::Int(1);
    assert_eq!(messages(spec), ["task 1: duplicate id (tasks #1 and #2)"]);
}

#[test]
fn dependency_listed_twice_is_a_warning_and_removed() {
    let mut spec = plan(&[(1, &[]), (2, &[]), (3, &[1, 2, 1, 1])]);
    spec.tasks[2].dependencies.push(TaskId::Str("2".into()));
    let plan = ValidatedPlan::new(spec).unwrap();
    let warnings: Vec<String> = plan.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "task 3: dependency 1 listed twice",
            "task 3: dependency 2 listed twice"
        ]
    );
    assert_eq!(plan.deps(2), [0, 1]);
    assert_eq!(plan.task(2).dependencies, [TaskId::Int(1), TaskId::Int(2)]);
}

#[test]
fn repeated_unknown_dependency_reported_once() {
    assert_eq!(
        messages(plan(&[(1, &[]), (2, &[9, 9])])),
        ["task 2: dependency 9 does not match any task"]
    );
}

#[test]
fn display_of_every_variant() {
    let cases = [
        (Problem::NoTasks, "plan has no tasks"),
        (Problem::EmptyId { position: 3 }, "task #3: id is empty"),
        (
            Problem::EmptyDescription { id: 3.into() },
            "task 3: description is empty",
        ),
        (
            Problem::DuplicateId {
                id: 3.into(),
                first: 2,
                second: 5,
            },
            "task 3: duplicate id (tasks #2 and #5)",
        ),
        (
            Problem::UnknownDependency {
                task: 2.into(),
                dependency: 9.into(),
            },
            "task 2: dependency 9 does not match any task",
        ),
        (
            Problem::SelfDependency {
                task: "step_4".into(),
            },
            "task step_4: depends on itself",
        ),
        (
            Problem::Cycle {
                path: vec![1.into(), 3.into(), 2.into(), 1.into()],
            },
            "cycle: 1 -> 3 -> 2 -> 1",
        ),
        (
            Problem::Other("tool x is unknown".into()),
            "tool x is unknown",
        ),
    ];
    for (problem, text) in cases {
        assert_eq!(problem.to_string(), text);
    }
    let all = ValidationErrors(vec![Problem::NoTasks, Problem::EmptyId { position: 1 }]);
    assert_eq!(all.to_string(), "plan has no tasks\ntask #1: id is empty");
}

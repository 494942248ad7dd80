//! Synthetic plans: deterministic, well-formed, and shaped as documented.

use planwave_plan::{TaskId, ValidatedPlan, generate};

fn deps_as_ints(deps: &[TaskId]) -> Vec<i64> {
    deps.iter()
        .map(|d| match d {
            TaskId::Int(n) => *n,
            TaskId::Str(s) => panic!("synthetic ids are integers, got {s:?}"),
        })
        .collect()
}

#[test]
fn wide_and_chain() {
    let w = generate::wide(3);
    assert_eq!(w.topic, "Synthetic wide plan (3 tasks)");
    assert_eq!(w.objectives.len(), 1);
    assert_eq!(w.tasks[2].id, TaskId::Int(3));
    assert_eq!(w.tasks[2].description, "Synthetic task 3");
    assert!(w.tasks.iter().all(|t| t.dependencies.is_empty()));

    let c = generate::chain(4);
    assert_eq!(c.topic, "Synthetic chain plan (4 tasks)");
    let deps: Vec<Vec<i64>> = c
        .tasks
        .iter()
        .map(|t| deps_as_ints(&t.dependencies))
        .collect();
    assert_eq!(deps, [vec![], vec![1], vec![2], vec![3]]);
    assert!(generate::chain(0).tasks.is_empty());
}

#[test]
fn deterministic_for_a_seed() {
    assert_eq!(generate::random(500, 4, 42), generate::random(500, 4, 42));
    assert_ne!(generate::random(500, 4, 42), generate::random(500, 4, 43));
    assert_eq!(
        generate::layered(500, 20, 3, 9),
        generate::layered(500, 20, 3, 9)
    );
    assert_ne!(
        generate::layered(500, 20, 3, 9),
        generate::layered(500, 20, 3, 10)
    );
}

#[test]
fn random_depends_only_on_distinct_earlier_tasks() {
    let spec = generate::random(2_000, 4, 5);
    let mut fan_ins = [0usize; 5];
    for (i, t) in spec.tasks.iter().enumerate() {
        let k = i as i64 + 1;
        assert_eq!(t.id, TaskId::Int(k));
        let deps = deps_as_ints(&t.dependencies);
        assert!(deps.len() <= 4);
        assert!(deps.iter().all(|&d| 1 <= d && d < k));
        assert!(
            deps.windows(2).all(|w| w[0] < w[1]),
            "distinct and ascending"
        );
        fan_ins[deps.len()] += 1;
    }
    // Every fan-in from 0 to 4 occurs.
    assert!(fan_ins.iter().all(|&c| c > 0), "{fan_ins:?}");
    assert!(ValidatedPlan::new(spec).is_ok());
}

#[test]
fn layered_depends_on_the_previous_layer() {
    let width = 10;
    let spec = generate::layered(95, width, 3, 2);
    assert_eq!(spec.tasks.len(), 95);
    for (i, t) in spec.tasks.iter().enumerate() {
        let layer = i / width;
        let deps = deps_as_ints(&t.dependencies);
        if layer == 0 {
            assert!(deps.is_empty());
            continue;
        }
        assert!((1..=3).contains(&deps.len()));
        for d in deps {
            assert_eq!((d as usize - 1) / width, layer - 1);
        }
    }
    // Degenerate arguments do not panic.
    assert_eq!(generate::layered(5, 0, 0, 1).tasks.len(), 5);
    assert!(generate::random(1, 4, 1).tasks[0].dependencies.is_empty());
    assert!(generate::random(0, 4, 1).tasks.is_empty());
}

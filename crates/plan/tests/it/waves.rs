//! Waves, critical paths and big graphs.

use planwave_plan::{ValidatedPlan, generate, parse_plan};

use crate::{plan, wave_ids};

/// Checks every invariant of a validated plan against its own spec.
pub fn assert_consistent(plan: &ValidatedPlan) {
    let n = plan.len();
    for i in 0..n {
        for &d in plan.deps(i) {
            assert!(
                plan.wave(i) > plan.wave(d as usize),
                "task {i} not after its prerequisite {d}"
            );
            assert!(plan.dependents(d as usize).contains(&(i as u32)));
        }
        let expected = plan
            .deps(i)
            .iter()
            .map(|&d| plan.wave(d as usize) + 1)
            .max()
            .unwrap_or(0);
        assert_eq!(
            plan.wave(i),
            expected,
            "wave of task {i} is not its longest path"
        );
        assert!(plan.dependents(i).windows(2).all(|w| w[0] < w[1]));
    }
    let mut seen = 0;
    for (w, tasks) in plan.waves().iter().enumerate() {
        assert!(!tasks.is_empty());
        assert!(
            tasks.windows(2).all(|p| p[0] < p[1]),
            "wave {w} not in declaration order"
        );
        for &t in tasks {
            assert_eq!(plan.wave(t as usize) as usize, w);
        }
        seen += tasks.len();
    }
    assert_eq!(seen, n);
    let path = plan.critical_path();
    assert_eq!(path.len(), plan.waves().len());
    assert!(
        plan.deps(path[0] as usize).is_empty(),
        "critical path must start at a root"
    );
    for pair in path.windows(2) {
        assert!(
            plan.deps(pair[1] as usize).contains(&pair[0]),
            "critical path is not a chain"
        );
    }
}

#[test]
fn diamond() {
    let p = ValidatedPlan::new(plan(&[(1, &[]), (2, &[1]), (3, &[1]), (4, &[2, 3])])).unwrap();
    assert_eq!(wave_ids(&p), [vec!["1"], vec!["2", "3"], vec!["4"]]);
    assert_eq!(p.critical_path(), [0, 1, 3]);
    assert_eq!(p.dependents(0), [1, 2]);
    assert_eq!(p.ancestors(3), [0, 1, 2]);
    assert_eq!(p.descendants(0), [1, 2, 3]);
    assert_consistent(&p);
}

#[test]
fn wave_is_the_longest_path_not_the_shortest() {
    // 4 depends on 1 directly and through 2 -> 3: it belongs to wave 3, not wave 1.
    let p = ValidatedPlan::new(plan(&[
        (4, &[1, 3]),
        (1, &[]),
        (2, &[1]),
        (3, &[2]),
        (5, &[]),
    ]))
    .unwrap();
    assert_eq!(
        wave_ids(&p),
        [vec!["1", "5"], vec!["2"], vec!["3"], vec!["4"]]
    );
    // Declared order is 4, 1, 2, 3, 5, so the path is 1 -> 2 -> 3 -> 4 as indices 1, 2, 3, 0.
    assert_eq!(p.critical_path(), [1, 2, 3, 0]);
    assert_consistent(&p);
}

#[test]
fn critical_path_ties_prefer_lower_indices() {
    // Two chains of equal length: 1 -> 3 and 2 -> 4; and 2 -> 3.
    let p = ValidatedPlan::new(plan(&[(1, &[]), (2, &[]), (3, &[1, 2]), (4, &[2])])).unwrap();
    assert_eq!(p.critical_path(), [0, 2]);
    let p = ValidatedPlan::new(plan(&[(1, &[]), (2, &[]), (4, &[2]), (3, &[2])])).unwrap();
    assert_eq!(p.critical_path(), [1, 2]);
}

#[test]
fn single_task_and_wide_plans() {
    let p = ValidatedPlan::new(plan(&[(1, &[])])).unwrap();
    assert_eq!(p.waves(), [vec![0]]);
    assert_eq!(p.critical_path(), [0]);
    let p = ValidatedPlan::new(generate::wide(5)).unwrap();
    assert_eq!(p.waves().len(), 1);
    assert_eq!(p.critical_path(), [0]);
}

#[test]
fn weighted_critical_path() {
    // 1 -> 2 -> 4 and 3 -> 4, with 3 heavy.
    let p = ValidatedPlan::new(plan(&[(1, &[]), (2, &[1]), (3, &[]), (4, &[2, 3])])).unwrap();
    assert_eq!(
        p.critical_path_weighted(&[1.0, 1.0, 5.0, 2.0]),
        (7.0, vec![2, 3])
    );
    assert_eq!(
        p.critical_path_weighted(&[3.0, 3.0, 5.0, 2.0]),
        (8.0, vec![0, 1, 3])
    );
    // Missing weights count as 0, so do NaN and negative ones.
    assert_eq!(p.critical_path_weighted(&[1.0, f64::NAN]), (1.0, vec![0]));
    assert_eq!(
        p.critical_path_weighted(&[-1.0, 2.0, 1.0, 1.0]),
        (3.0, vec![0, 1, 3])
    );
}

/// Runs `f` on a thread with the platform's default 2 MiB stack, whatever RUST_MIN_STACK says.
fn on_default_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn chain_of_100_000_tasks_does_not_overflow() {
    on_default_stack(|| {
        let n = 100_000;
        let text = serde_json::to_string(&generate::chain(n)).unwrap();
        let spec = parse_plan(text.as_bytes()).unwrap();
        let p = ValidatedPlan::new(spec).unwrap();
        assert_eq!(p.waves().len(), n);
        assert_eq!(p.critical_path().len(), n);
        assert_eq!(p.wave(n - 1), (n - 1) as u32);
        assert_eq!(p.critical_path_weighted(&vec![1.0; n]).0, n as f64);
        assert_eq!(p.ancestors(n - 1).len(), n - 1);
    });
}

#[test]
fn cycle_through_a_100_000_chain_is_reported() {
    on_default_stack(|| {
        let n = 100_000;
        let mut spec = generate::chain(n);
        spec.tasks[0].dependencies.push((n as i64).into());
        let err = ValidatedPlan::new(spec).unwrap_err();
        assert_eq!(err.0.len(), 1);
        let msg = err.0[0].to_string();
        assert!(msg.starts_with("cycle: 1 -> 2 -> 3"), "{}", &msg[..40]);
        assert!(msg.ends_with(&format!("{} -> 1", n)));
    });
}

#[test]
fn random_dag_of_20_000_tasks() {
    let spec = generate::random(20_000, 4, 7);
    let text = serde_json::to_vec(&spec).unwrap();
    let parsed = parse_plan(&text).unwrap();
    assert_eq!(parsed, spec);
    let p = ValidatedPlan::new(parsed).unwrap();
    assert_eq!(p.len(), 20_000);
    assert!(p.waves().len() > 10, "random DAG should have some depth");
    assert_consistent(&p);
}

#[test]
fn layered_plan_waves_are_its_layers() {
    let p = ValidatedPlan::new(generate::layered(1_000, 50, 3, 1)).unwrap();
    assert_eq!(p.waves().len(), 20);
    for (w, tasks) in p.waves().iter().enumerate() {
        assert_eq!(tasks.len(), 50);
        assert_eq!(tasks[0] as usize, w * 50);
    }
    assert_consistent(&p);
}

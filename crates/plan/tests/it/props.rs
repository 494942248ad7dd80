//! Property tests: parsing never panics, and validation agrees with a naive reference.

use planwave_plan::{
    PlanSpec, Problem, TaskId, TaskSpec, ValidatedPlan, parse_plan, plan_from_value,
};
use proptest::prelude::*;
use serde_json::Value;

use crate::waves::assert_consistent;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop::sample::select(vec!["", "a", "1", "data_upload", " ", "特斯拉"])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop::sample::select(vec![
            "tasks",
            "steps",
            "id",
            "step_id",
            "description",
            "name",
            "dependencies",
            "depends_on",
            "hints",
            "data_needs",
            "tool",
            "params",
            "topic",
            "goal",
            "objectives",
            "plan",
            "x",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

/// Text made of JSON tokens, fences and prose: it often looks like JSON, rarely is.
fn json_ish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        "\"",
        ":",
        ",",
        "```json\n",
        "```",
        "\n```\n",
        "\"tasks\"",
        "\"steps\"",
        "\"id\"",
        "1",
        "\"a\"",
        "null",
        "true",
        " ",
        "\n",
        "\\",
        "特",
        "\u{FEFF}",
        "-",
        "1.5e3",
        "\"dependencies\"",
        "\"hints\"",
        "Here is the plan: ",
        "\"description\"",
        "{{x.result}}",
    ]);
    prop::collection::vec(pieces, 0..80).prop_map(|v| v.concat())
}

/// Never panics, and whatever it returns can be validated without panicking either.
fn parse_and_validate(bytes: &[u8]) {
    if let Ok(spec) = parse_plan(bytes) {
        let _ = ValidatedPlan::new(spec);
    }
}

proptest! {
    #[test]
    fn parse_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_and_validate(&bytes);
    }

    #[test]
    fn parse_never_panics_on_json_ish_text(text in json_ish()) {
        parse_and_validate(text.as_bytes());
    }

    #[test]
    fn parse_never_panics_on_cut_and_wrapped_json(
        value in json_value(),
        cut in any::<prop::sample::Index>(),
        before in "[a-z {}\\[\\]`\n]{0,20}",
        after in "[a-z {}\\[\\]`\n]{0,20}",
    ) {
        let _ = plan_from_value(value.clone());
        let json = serde_json::to_string_pretty(&value).unwrap_or_default();
        let whole = format!("{before}{json}{after}");
        parse_and_validate(whole.as_bytes());
        // Cutting inside a character is fine: it must give NotUtf8, not a panic.
        let end = cut.index(whole.len() + 1);
        parse_and_validate(&whole.as_bytes()[..end]);
    }
}

fn task_id() -> impl Strategy<Value = TaskId> {
    prop_oneof![
        4 => (0i64..6).prop_map(TaskId::Int),
        2 => prop::sample::select(vec!["1", "2", "a", "b"]).prop_map(TaskId::from),
        1 => prop::sample::select(vec!["", " "]).prop_map(TaskId::from),
    ]
}

fn small_spec() -> impl Strategy<Value = PlanSpec> {
    let task = (
        task_id(),
        prop::sample::select(vec!["x", "x", "x", "x", "", " "]),
        prop::collection::vec(task_id(), 0..4),
    )
        .prop_map(|(id, desc, deps)| TaskSpec::new(id, desc, deps));
    prop::collection::vec(task, 0..8).prop_map(|tasks| PlanSpec {
        tasks,
        ..PlanSpec::default()
    })
}

/// A deliberately naive reference: what should be wrong with `spec`, and its reachability.
struct Reference {
    /// Any problem other than a cycle.
    structural: bool,
    /// reach[i][j]: j is reachable from i along prerequisite -> dependent edges.
    reach: Vec<Vec<bool>>,
}

fn key(id: &TaskId) -> String {
    match id {
        TaskId::Int(n) => n.to_string(),
        TaskId::Str(s) => s.clone(),
    }
}

impl Reference {
    fn new(spec: &PlanSpec) -> Reference {
        let tasks = &spec.tasks;
        let n = tasks.len();
        let blank = |id: &TaskId| key(id).trim().is_empty() && matches!(id, TaskId::Str(_));
        let first = |k: &str| tasks.iter().position(|t| !blank(&t.id) && key(&t.id) == k);
        let mut structural = n == 0;
        let mut reach = vec![vec![false; n]; n];
        for (i, t) in tasks.iter().enumerate() {
            structural |= blank(&t.id) || t.description.trim().is_empty();
            structural |= !blank(&t.id) && first(&key(&t.id)) != Some(i);
            for d in &t.dependencies {
                if !blank(&t.id) && key(d) == key(&t.id) {
                    structural = true;
                    continue;
                }
                match first(&key(d)) {
                    Some(j) => reach[j][i] = true,
                    None => structural = true,
                }
            }
        }
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    if reach[i][k] && reach[k][j] {
                        reach[i][j] = true;
                    }
                }
            }
        }
        Reference { structural, reach }
    }

    fn cyclic(&self) -> bool {
        (0..self.reach.len()).any(|i| self.reach[i][i])
    }

    /// Strongly connected components with more than one task.
    fn cyclic_components(&self) -> usize {
        let n = self.reach.len();
        (0..n)
            .filter(|&i| {
                self.reach[i][i] && (0..i).all(|j| !(self.reach[i][j] && self.reach[j][i]))
            })
            .count()
    }
}

proptest! {
    #[test]
    fn validation_agrees_with_reference(spec in small_spec()) {
        let reference = Reference::new(&spec);
        let original = spec.clone();
        match ValidatedPlan::new(spec) {
            Ok(plan) => {
                prop_assert!(!reference.structural && !reference.cyclic());
                assert_consistent(&plan);
                prop_assert_eq!(plan.critical_path().len(), plan.waves().len());
            }
            Err(errors) => {
                let problems = &errors.0;
                prop_assert!(!problems.is_empty());
                let cycles: Vec<&Vec<TaskId>> = problems
                    .iter()
                    .filter_map(|p| match p { Problem::Cycle { path } => Some(path), _ => None })
                    .collect();
                if cycles.len() == problems.len() {
                    prop_assert!(reference.cyclic(), "cycle reported for an acyclic plan");
                }
                prop_assert_eq!(cycles.len(), reference.cyclic_components());
                prop_assert_eq!(reference.structural, cycles.len() < problems.len());
                // Each cycle is real: every arrow is a dependency, and it closes.
                for path in cycles {
                    prop_assert!(path.len() >= 3);
                    prop_assert_eq!(path.first(), path.last());
                    for pair in path.windows(2) {
                        let dependent = original.tasks.iter().find(|t| key(&t.id) == key(&pair[1]));
                        let deps = dependent.map(|t| &t.dependencies);
                        prop_assert!(
                            deps.is_some_and(|d| d.iter().any(|x| key(x) == key(&pair[0]))),
                            "{} does not depend on {}", pair[1], pair[0]
                        );
                    }
                }
            }
        }
    }
}

//! Normalizing JSON shapes: alternate field names, and the exact shape-problem messages.

use planwave_plan::{ParseError, PlanFormat, PlanSpec, TaskId, plan_from_value};
use serde_json::{Value, json};

fn ok(v: Value) -> PlanSpec {
    match plan_from_value(v) {
        Ok(spec) => spec,
        Err(e) => panic!("expected a plan, got {e:?}"),
    }
}

fn shape(v: Value) -> Vec<String> {
    match plan_from_value(v) {
        Err(ParseError::Shape(msgs)) => msgs,
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn topic_alternates() {
    assert_eq!(ok(json!({"goal": "g", "tasks": []})).topic, "g");
    assert_eq!(ok(json!({"title": "x", "tasks": []})).topic, "x");
    assert_eq!(
        ok(json!({"topic": "t", "goal": "g", "tasks": []})).topic,
        "t"
    );
    assert_eq!(ok(json!({"task": "do it", "steps": []})).topic, "do it");
    assert_eq!(
        ok(json!({"description": "d", "goal": "g", "steps": []})).topic,
        "g"
    );
    assert_eq!(
        ok(json!({"topic": null, "goal": "g", "tasks": []})).topic,
        "g"
    );
}

#[test]
fn objectives_single_string_and_null() {
    assert_eq!(
        ok(json!({"objectives": "one", "tasks": []})).objectives,
        ["one"]
    );
    assert!(
        ok(json!({"objectives": null, "tasks": []}))
            .objectives
            .is_empty()
    );
}

#[test]
fn task_field_alternates() {
    let spec = ok(json!({"tasks": [
        {"id": 1, "name": "Overview"},
        {"id": 2.0, "title": "Finance", "description": "Financial analysis", "depends_on": 1},
        {"id": "3", "step_name": "Risks", "deps": [1, "2", 2.0]},
        {"id": 4, "description": "x", "dependencies": null, "hints": null},
        {"id": 5, "description": "y", "hints": {"data_needs": "revenue", "key_questions": null}}
    ]}));
    let t = &spec.tasks;
    assert_eq!(t[0].description, "Overview");
    assert_eq!(t[0].name.as_deref(), Some("Overview"));
    assert_eq!(t[1].id, TaskId::Int(2));
    assert_eq!(t[1].name.as_deref(), Some("Finance"));
    assert_eq!(t[1].description, "Financial analysis");
    assert_eq!(t[1].dependencies, [TaskId::Int(1)]);
    // A numeric string stays a string; it still matches `3` through its key.
    assert_eq!(t[2].id, TaskId::Str("3".into()));
    assert_eq!(t[2].description, "Risks");
    // Parsing keeps what was written; validation removes the repeat with a warning.
    assert_eq!(
        t[2].dependencies,
        [TaskId::Int(1), TaskId::Str("2".into()), TaskId::Int(2)]
    );
    assert!(t[3].dependencies.is_empty());
    assert_eq!(t[4].hints.data_needs, ["revenue"]);
    assert!(t[4].hints.key_questions.is_empty());
}

#[test]
fn step_field_alternates() {
    let spec = ok(json!({"goal": "g", "steps": [
        {"step_id": "a", "step_name": "A", "tool_id": "t1", "parameters": {"q": 1}},
        {"id": "b", "description": "B", "tool": "t2", "params": [1, 2], "dependencies": "a"},
        {"step_id": "c", "id": "ignored", "name": "C", "tool_name": "t3", "tool_parameters": "raw"}
    ]}));
    assert_eq!(spec.format, PlanFormat::Steps);
    let t = &spec.tasks;
    assert_eq!(t[0].description, "A");
    assert_eq!(t[0].tool.as_deref(), Some("t1"));
    assert_eq!(t[0].params, Some(json!({"q": 1})));
    assert_eq!(t[1].params, Some(json!([1, 2])));
    assert_eq!(t[1].dependencies, [TaskId::Str("a".into())]);
    assert_eq!(t[2].id, TaskId::Str("c".into()));
    assert_eq!(t[2].tool.as_deref(), Some("t3"));
    assert_eq!(t[2].params, Some(json!("raw")));
}

#[test]
fn tasks_win_over_steps() {
    let spec = ok(json!({"tasks": [{"id": 1, "description": "t"}], "steps": "ignored"}));
    assert_eq!(spec.format, PlanFormat::Research);
    assert_eq!(spec.tasks.len(), 1);
}

#[test]
fn not_an_object() {
    assert_eq!(shape(json!([1, 2])), ["plan JSON must be an object"]);
    assert_eq!(shape(json!("plan")), ["plan JSON must be an object"]);
}

#[test]
fn neither_tasks_nor_steps() {
    assert_eq!(
        shape(json!({"topic": "t"})),
        [r#"plan has neither "tasks" nor "steps""#]
    );
    assert_eq!(
        shape(json!({"tasks": null})),
        [r#"plan has neither "tasks" nor "steps""#]
    );
}

#[test]
fn list_must_be_an_array() {
    assert_eq!(
        shape(json!({"tasks": {"id": 1}})),
        [r#""tasks" must be an array"#]
    );
    assert_eq!(
        shape(json!({"steps": "one"})),
        [r#""steps" must be an array"#]
    );
}

#[test]
fn every_problem_is_collected() {
    let v = json!({
        "research_type": 7,
        "objectives": [1],
        "tasks": [
            {"id": 1, "description": "ok"},
            {"id": 2, "description": "a", "dependencies": {"x": 1}},
            {"description": "no id"},
            {"id": 1.5, "description": "fractional", "hints": 3},
            {"id": true},
            "not an object",
            {"id": "s", "description": 5, "hints": {"data_needs": [1]}, "tool": ["x"]},
            {"id": " ", "depends_on": [null]},
            {"id": 9, "expected_output": {"a": 1}, "name": false}
        ]
    });
    assert_eq!(
        shape(v),
        [
            r#""research_type" must be a string"#,
            r#""objectives" must be a list of strings"#,
            r#"task 2: "dependencies" must be a list of ids"#,
            r#"task #3: "id" is missing"#,
            r#"task #4: "id" must be an integer or a string"#,
            r#"task #4: "hints" must be an object"#,
            r#"task #5: "id" must be an integer or a string"#,
            "task #6: must be an object",
            r#"task s: "description" must be a string"#,
            r#"task s: "hints.data_needs" must be a list of strings"#,
            r#"task s: "tool" must be a string"#,
            r#"task #8: "depends_on" must be a list of ids"#,
            r#"task 9: "name" must be a string"#,
            r#"task 9: "expected_output" must be a string"#,
        ]
    );
}

#[test]
fn step_id_wrong_type_names_the_key_used() {
    assert_eq!(
        shape(json!({"steps": [{"step_id": [1], "name": "x"}]})),
        [r#"task #1: "step_id" must be an integer or a string"#]
    );
}

#[test]
fn huge_plans_cap_the_problem_list() {
    let tasks: Vec<Value> = (0..500).map(|_| json!({"description": "no id"})).collect();
    let msgs = shape(json!({ "tasks": tasks }));
    assert_eq!(msgs.len(), 101);
    assert_eq!(msgs[100], "... and 400 more problems");
}

#[test]
fn shape_error_display_is_one_line_per_problem() {
    let err = plan_from_value(json!({"tasks": [{}, {}]})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "task #1: \"id\" is missing\ntask #2: \"id\" is missing"
    );
}

//! Tool checks: unknown suggested tools, unknown tool steps, and references to results.

use planwave_plan::{ToolCatalog, ValidatedPlan, parse_plan_str};

fn catalog() -> ToolCatalog {
    ToolCatalog::new(["echo".to_owned(), "get-sum".to_owned()])
}

#[test]
fn unknown_suggested_tools_are_dropped_with_a_warning() {
    let spec = parse_plan_str(
        r#"{"topic": "t", "tasks": [{"id": 1, "description": "d", "hints": {"suggested_tools": ["get-sum", "info_search_finance_db"]}}]}"#,
    )
    .expect("parse");
    let plan = ValidatedPlan::with_tools(spec, &catalog()).expect("valid");
    assert_eq!(plan.task(0).hints.suggested_tools, ["get-sum"]);
    let warnings: Vec<String> = plan.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        ["task 1: suggested tool info_search_finance_db is not available; dropped"]
    );
}

#[test]
fn without_any_tools_the_dropped_suggestions_are_one_warning() {
    let spec = parse_plan_str(
        r#"{"topic": "t", "tasks": [
            {"id": 1, "description": "d", "hints": {"suggested_tools": ["db_b", "db_a"]}},
            {"id": 2, "description": "e", "hints": {"suggested_tools": ["db_a"]}}]}"#,
    )
    .expect("parse");
    let plan = ValidatedPlan::with_tools(spec, &ToolCatalog::default()).expect("valid");
    assert!(plan.task(0).hints.suggested_tools.is_empty());
    assert!(plan.task(1).hints.suggested_tools.is_empty());
    let warnings: Vec<String> = plan.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        ["no MCP tools are configured (--mcp-config): suggested tools ignored: db_a, db_b"]
    );
}

#[test]
fn unknown_tool_step_names_task_tool_and_known_tools() {
    let spec = parse_plan_str(
        r#"{"steps": [{"step_id": "s1", "description": "d", "tool": "search_web", "params": {}}, {"step_id": "s2", "description": "e", "tool": "echo", "params": {"message": "x"}}]}"#,
    )
    .expect("parse");
    let err = ValidatedPlan::with_tools(spec, &catalog()).expect_err("unknown tool");
    assert_eq!(
        err.to_string(),
        "task s1: unknown tool search_web (known tools: echo, get-sum, llm_call)"
    );
}

#[test]
fn references_must_point_at_prerequisites() {
    let spec = parse_plan_str(
        r#"{"steps": [
            {"step_id": 1, "description": "a", "tool": "get-sum", "params": {"a": 1, "b": 2}},
            {"step_id": 2, "description": "b", "tool": "echo", "params": {"message": "{{1.result}}"}, "dependencies": [1]},
            {"step_id": 3, "description": "c", "tool": "echo", "params": {"message": "@{{steps.1.result}} {{2.result}}"}, "dependencies": [2]},
            {"step_id": 4, "description": "d", "tool": "echo", "params": {"message": "{{3.result}} {{9.x}}"}, "dependencies": [1]}
        ]}"#,
    )
    .expect("parse");
    let err = ValidatedPlan::with_tools(spec, &catalog()).expect_err("bad references");
    assert_eq!(
        err.to_string(),
        "task 4: parameter references task 3, which is not among its prerequisites\ntask 4: parameter references unknown task 9"
    );
}

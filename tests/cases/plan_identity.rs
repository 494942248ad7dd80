//! A plan's identity (seed 001's output format, seed 003's TaskPlan): every plan the planner
//! writes gets a `plan_id` (a UUID) and `created_at`; a plan file's `task_id`, plan `status`
//! and step `status` are kept in `plan.json`, never dropped silently.

use serde_json::json;

use crate::support::{planwave, read_json, tempdir, write_json};

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

#[test]
fn every_plan_the_planner_writes_has_its_own_uuid_and_creation_time() {
    let dir = tempdir();
    let mut ids = Vec::new();
    for (k, goal) in ["深度分析特斯拉公司", "深度分析特斯拉公司"]
        .iter()
        .enumerate()
    {
        let out = dir.path().join(format!("plan{k}.json"));
        planwave(["plan", goal])
            .opt("--out", &out)
            .instant()
            .quiet()
            .run()
            .expect_ok();
        let plan = read_json(&out);
        let id = plan["plan_id"].as_str().expect("plan_id").to_owned();
        assert!(is_uuid(&id), "{id}");
        let at = plan["created_at"].as_str().expect("created_at");
        assert!(
            chrono::DateTime::parse_from_rfc3339(at).is_ok(),
            "created_at {at}"
        );
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "two plans, two identities");

    // research: the run's plan.json, the round's, and run.json agree on it.
    let out = dir.path().join("run");
    planwave(["research", "深度分析特斯拉公司"])
        .out(&out)
        .opt("--max-rounds", "1")
        .instant()
        .quiet()
        .run()
        .expect_ok();
    let id = read_json(&out.join("plan.json"))["plan_id"].clone();
    assert!(id.as_str().is_some_and(is_uuid), "{id}");
    assert_eq!(read_json(&out.join("rounds/1/plan.json"))["plan_id"], id);
}

#[test]
fn a_seed_003_plans_task_id_and_statuses_are_kept() {
    let dir = tempdir();
    let plan = write_json(
        dir.path(),
        "taskplan.json",
        &json!({
            "plan_id": "plan-7", "task_id": "task-42", "status": "CREATED",
            "created_at": "2025-07-29T10:00:00",
            "steps": [
                {"step_id": 1, "name": "问候", "description": "say hello", "tool_name": "llm_call",
                 "tool_parameters": {"prompt": "Say hello"}, "dependencies": [], "status": "QUEUED"},
                {"step_id": 2, "name": "复述", "description": "repeat it", "tool_name": "llm_call",
                 "tool_parameters": {"prompt": "Repeat: {{1.result}}"}, "dependencies": [1],
                 "status": "QUEUED"}
            ]
        }),
    );
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .run()
        .expect_ok();
    let saved = read_json(&out.join("plan.json"));
    assert_eq!(saved["plan_id"], "plan-7");
    assert_eq!(saved["task_id"], "task-42");
    assert_eq!(saved["status"], "CREATED");
    assert_eq!(saved["created_at"], "2025-07-29T10:00:00");
    let steps = saved["tasks"].as_array().expect("tasks");
    assert!(steps.iter().all(|s| s["status"] == "QUEUED"), "{saved}");

    // A status that is not text is a problem named by its key, not a silent drop.
    let bad = write_json(
        dir.path(),
        "bad.json",
        &json!({"status": {"phase": 1}, "tasks": [
            {"id": 1, "description": "a", "status": ["x"]}
        ]}),
    );
    let r = planwave(["validate"]).arg(&bad).run();
    r.expect_code(2);
    assert!(
        r.stderr.contains("task 1: \"status\" must be a string"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("\"status\" must be a string"),
        "{}",
        r.stderr
    );
}

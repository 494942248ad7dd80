//! `planwave validate` and `planwave waves`: exit codes and exact output.

use crate::support::{plan, planwave, repo_file, tempdir, write_json};

#[test]
fn valid_plan_prints_one_summary_line() {
    let out = planwave(["validate"])
        .arg(repo_file("examples/tesla.json"))
        .run();
    out.expect_ok();
    assert_eq!(
        out.stdout,
        "valid: 4 tasks, 2 waves, longest chain 2 (1 -> 4)\n"
    );
}

#[test]
fn invalid_plan_exits_2_with_every_problem_on_its_own_line() {
    let dir = tempdir();
    // 1 -> 2 -> 3 -> 1 is a cycle (arrows run from prerequisite to dependent).
    let p = write_json(
        dir.path(),
        "bad.json",
        &plan(
            "t",
            &[
                ("1", "a", &["3"]),
                ("2", "", &["9", "1"]),
                ("3", "c", &["2"]),
                ("2", "dup", &[]),
                ("4", "d", &["4"]),
            ],
        ),
    );
    let out = planwave(["validate"]).arg(&p).run();
    out.expect_code(2);
    assert_eq!(out.stdout, "");
    let name = p.display().to_string();
    let expected: String = [
        "task 2: description is empty",
        "task 2: dependency 9 does not match any task",
        "task 2: duplicate id (tasks #2 and #4)",
        "task 4: depends on itself",
        "cycle: 1 -> 2 -> 3 -> 1",
    ]
    .iter()
    .map(|l| format!("{name}: {l}\n"))
    .collect();
    assert_eq!(out.stderr, expected);
}

#[test]
fn stdin_is_read_with_a_dash_and_prose_around_json_is_tolerated() {
    let text = format!(
        "Sure! Here is the plan:\n```json\n{}\n```\nLet me know.",
        serde_json::to_string_pretty(&plan("t", &[("a", "first", &[]), ("b", "second", &["a"])]))
            .expect("json")
    );
    let out = planwave(["validate", "-"]).stdin(text).run();
    out.expect_ok();
    assert_eq!(
        out.stdout,
        "valid: 2 tasks, 2 waves, longest chain 2 (a -> b)\n"
    );
}

#[test]
fn unreadable_or_non_json_input_exits_2_with_a_clear_message() {
    let out = planwave(["validate", "/definitely/not/here.json"]).run();
    out.expect_code(2);
    assert!(out.stderr.contains("cannot read"), "{}", out.stderr);
    let out = planwave(["validate", "-"])
        .stdin("no json here at all")
        .run();
    out.expect_code(2);
    assert_eq!(out.stderr, "<stdin>: no JSON object found in the input\n");
    let out = planwave(["validate", "-"])
        .stdin("{\"tasks\": [{\"id\": 1, \"description\": \"x\"")
        .run();
    out.expect_code(2);
    assert!(
        out.stderr
            .starts_with("<stdin>: JSON is truncated at line 1 column"),
        "{}",
        out.stderr
    );
}

#[test]
fn waves_prints_text_json_and_mermaid() {
    let p = repo_file("examples/tesla.json");
    let waves = || planwave(["waves"]).arg(&p);
    let out = waves().opt("--format", "json").run();
    out.expect_ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(
        v,
        serde_json::json!({"waves": [[1, 2, 3], [4]], "critical_path": [1, 4]})
    );
    let out = waves().run();
    assert_eq!(
        out.stdout,
        "wave 0: 1, 2, 3\nwave 1: 4\ncritical path: 1 -> 4\nestimated duration: 1m 00s (2 waves × 30.0 s per wave, a default: no recent model calls to measure)\n"
    );
    let out = waves().opt("--format", "mermaid").run();
    assert!(
        out.stdout.starts_with("graph LR\n") && out.stdout.contains("    t0 --> t3\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn validate_advises_where_a_valid_plan_strays_from_the_plan_format() {
    let dir = crate::support::tempdir();
    let plan = crate::support::write_json(
        dir.path(),
        "plan.json",
        &serde_json::json!({"research_type": "biotech", "topic": "t", "tasks": [
            {"id": 1, "description": "a"},
            {"id": 2, "description": "b", "dependencies": [1]},
            {"id": 3, "description": "c", "dependencies": [1, 2]},
            {"id": 5, "description": "e", "dependencies": [3, 1]}
        ]}),
    );
    let r = crate::support::planwave(["validate"]).arg(&plan).run();
    r.expect_ok();
    let name = plan.display();
    for expected in [
        format!(
            "{name}: warning: research_type \"biotech\" is not one of company, industry, strategy, macro, quantitative"
        ),
        format!(
            "{name}: warning: task ids are not the consecutive integers 1..4 the plan format uses (task 5 is at position 4)"
        ),
        format!("{name}: warning: task 3: dependency 1 is redundant (implied through 2)"),
        format!("{name}: warning: task 5: dependency 1 is redundant (implied through 3)"),
    ] {
        assert!(r.stderr.contains(&expected), "{expected}\n{}", r.stderr);
    }
    // Advice for authors, not noise in every run.
    let out = dir.path().join("out");
    let run = crate::support::run_plan(&plan, &out).quiet().run();
    run.expect_ok();
    assert!(!run.stderr.contains("redundant"), "{}", run.stderr);
    // A plan in the format gets none.
    let clean = crate::support::write_json(
        dir.path(),
        "clean.json",
        &serde_json::json!({"research_type": "company", "topic": "t", "tasks": [
            {"id": 1, "description": "a"}, {"id": 2, "description": "b", "dependencies": [1]}
        ]}),
    );
    let r = crate::support::planwave(["validate"]).arg(&clean).run();
    r.expect_ok();
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

//! The domain's process specification (`[planner] process_spec`, or `process_spec_file`)
//! in its own section of the planning prompt, and `--meta` keys in any script
//! (`--meta 流程规范=…`). `@copilotkit/aimock` answers the planner only when the prompt holds
//! the section, so a plan proves the prompt had it.

use serde_json::json;

use super::aimock::aimock_with;
use crate::support::{planwave, read_json, tempdir};

const PLAN: &str = r#"{"research_type": "company", "topic": "比亚迪流程分析", "objectives": ["按流程分析"], "tasks": [{"id": 1, "description": "财报核对", "dependencies": [], "hints": {"data_needs": [], "key_questions": [], "suggested_tools": []}}, {"id": 2, "description": "估值判断", "dependencies": [1], "hints": {"data_needs": [], "key_questions": [], "suggested_tools": []}}]}"#;

#[test]
fn the_process_spec_has_its_own_section_of_the_planning_prompt() {
    let dir = tempdir();
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "# 流程规范（规划时遵循）\n先核对财报，再做估值"},
             "response": {"content": PLAN}},
            {"match": {}, "response": {"content": "no plan without the process spec"}}
        ]),
    ) else {
        return;
    };
    std::fs::write(dir.path().join("spec.md"), "先核对财报，再做估值。\n").expect("spec");
    let toml = dir.path().join("planwave.toml");
    std::fs::write(&toml, "[planner]\nprocess_spec_file = \"spec.md\"\n").expect("toml");
    let plan = |extra: &[&str]| {
        let mut p = planwave(["plan", "深度分析比亚迪公司"])
            .opt("--config", &toml)
            .opt("--llm-base-url", &base)
            .opt("--model", "gpt-4o")
            .opt("--planner-attempts", "1")
            .quiet();
        for pair in extra.chunks(2) {
            p = p.opt(pair[0], pair[1]);
        }
        p.run()
    };
    let out = dir.path().join("plan.json");
    let out_text = out.to_string_lossy().into_owned();
    plan(&["--meta", "流程规范=先财报后估值", "--out", &out_text]).expect_ok();
    let saved = read_json(&out);
    assert_eq!(saved["topic"], "比亚迪流程分析");
    assert_eq!(saved["meta"], json!({"流程规范": "先财报后估值"}));

    // The same text given inline; without either the planner gets no such section.
    std::fs::write(
        &toml,
        "[planner]\nprocess_spec = \"先核对财报，再做估值。\"\n",
    )
    .expect("toml");
    plan(&[]).expect_ok();
    std::fs::write(&toml, "[planner]\n").expect("toml");
    plan(&[]).expect_code(2);
}

#[test]
fn a_process_spec_given_twice_or_unreadable_is_refused_naming_the_setting() {
    let dir = tempdir();
    let toml = dir.path().join("planwave.toml");
    let refused = |body: &str| {
        std::fs::write(&toml, body).expect("toml");
        let r = planwave(["plan", "Analyse Tesla"])
            .opt("--config", &toml)
            .instant()
            .quiet()
            .run();
        r.expect_code(2);
        r.stderr
    };
    let both = refused("[planner]\nprocess_spec = \"a\"\nprocess_spec_file = \"s.md\"\n");
    assert!(
        both.contains("[planner] process_spec and process_spec_file: give one of them"),
        "{both}"
    );
    let missing = refused("[planner]\nprocess_spec_file = \"absent.md\"\n");
    assert!(
        missing.contains("[planner] process_spec_file ") && missing.contains("absent.md"),
        "{missing}"
    );
    std::fs::write(dir.path().join("big.md"), "x".repeat(64 * 1024 + 1)).expect("big");
    let big = refused("[planner]\nprocess_spec_file = \"big.md\"\n");
    assert!(big.contains("longer than 65536 bytes"), "{big}");
}

#[test]
fn meta_keys_may_be_chinese_and_still_refuse_what_a_reference_cannot_name() {
    let dir = tempdir();
    let out = dir.path().join("plan.json");
    planwave(["plan", "深度分析特斯拉公司"])
        .opt("--meta", "流程规范=先财报后估值")
        .opt("--out", &out)
        .instant()
        .quiet()
        .run()
        .expect_ok();
    assert_eq!(read_json(&out)["meta"]["流程规范"], "先财报后估值");
    let r = planwave(["plan", "深度分析特斯拉公司"])
        .opt("--meta", "流程.规范=x")
        .instant()
        .quiet()
        .run();
    r.expect_code(2);
    assert!(
        r.stderr.contains("metadata key \"流程.规范\""),
        "{}",
        r.stderr
    );
}

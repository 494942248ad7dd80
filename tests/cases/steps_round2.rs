//! Step plans at the edges (issue 36), through the real binary: a tool chain stops at a
//! tool's own error and the model decides, a step plan ends in an answer, recovery keeps a
//! step plan's kind, and `plan`/`validate` agree with `run`.

use serde_json::{Value, json};

use crate::cases::aimock::aimock_with;
use crate::cases::steps::crashy_config;
use crate::support::{planwave, read_json, task, tempdir, write_json};

fn tools_called(t: &Value) -> Vec<(String, String)> {
    t["tool_calls"]
        .as_array()
        .expect("tool calls")
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").to_owned(),
                c["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_tool_error_stops_the_chain_and_the_model_decides() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "plan.json",
        &json!({"topic": "Chain audit", "objectives": ["check the chain"], "tasks": [
            {"id": 1, "description": "Greet after the broken call", "dependencies": [],
             "hints": {"suggested_tools": ["broken", "hello"]}}
        ]}),
    );
    // Matched on the last user message, first fixture first: the first turn asks for a
    // chain whose first call fails; the results of that call make the model call hello
    // again with its own arguments; hello's result gives the section.
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "[1] hello:"},
             "response": {"content": "{\"content\": \"## Greeting\\n\\nThe retry answered (CHAIN-OK).\"}"}},
            {"match": {"userMessage": "[1] broken (error)"},
             "response": {"content": "{\"content\": \"\", \"next\": [{\"mcp\": \"hello\", \"args\": {\"name\": \"retry\"}}]}"}},
            {"match": {"userMessage": "## Tools"},
             "response": {"content": "{\"content\": \"\", \"next\": [{\"mcp\": \"broken\", \"args\": {\"message\": \"x\"}}, {\"mcp\": \"hello\", \"args\": {\"name\": \"{{input}}\"}}]}"}},
            {"match": {}, "response": {"content": "The audit ran."}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let t = task(&run, "1");
    // broken's error ended the chain: hello never got the error text as its input; the
    // model's own retry is the second call, and the record marks the error.
    assert_eq!(
        tools_called(t),
        [
            ("broken".to_owned(), "tool_error".to_owned()),
            ("hello".to_owned(), "ok".to_owned())
        ],
        "{t}"
    );
    assert_eq!(t["tool_calls"][1]["args"], json!({"name": "retry"}));
    assert!(
        t["tool_calls"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Error executing tool broken")),
        "{t}"
    );
    let section = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    assert!(section.contains("CHAIN-OK"), "{section}");
}

/// An `mcpServers` config with `mcp-server-time` under `time`.
fn time_config(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let time = crate::support::peer("py/bin/mcp-server-time")?;
    Some(write_json(
        dir,
        "time.json",
        &json!({"mcpServers": {"time": {"command": time}}}),
    ))
}

fn time_steps(dir: &std::path::Path, name: &str, final_now: bool) -> std::path::PathBuf {
    write_json(
        dir,
        name,
        &json!({"goal": "What time is it in UTC?", "steps": [
            {"step_id": "now", "description": "Read the clock", "tool": "get_current_time",
             "params": {"timezone": "UTC"}, "final": final_now},
            {"step_id": "note", "description": "Write a note about it", "tool": "llm_call",
             "params": {"prompt": "Note the time {{now.result}}"}, "dependencies": ["now"]}
        ]}),
    )
}

#[test]
fn a_step_plan_ends_in_an_answer_shown_first() {
    let dir = tempdir();
    let Some(cfg) = time_config(dir.path()) else {
        return;
    };
    // A step marked final: its raw JSON is the answer, fenced as JSON in the report.
    let out = dir.path().join("final");
    crate::support::run_plan(time_steps(dir.path(), "final.json", true), &out)
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let answer = run["answer"].as_str().expect("run.json has the answer");
    let clock: Value = serde_json::from_str(answer).expect("the clock's JSON");
    assert_eq!(clock["timezone"], "UTC", "{answer}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    let at = |needle: &str| {
        report
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in:\n{report}"))
    };
    // The answer comes first, fenced as JSON; the steps follow as an appendix.
    assert!(at("## Answer\n\n```json\n{") < at("## Executive summary"));
    assert!(at("## Executive summary") < at("## Appendix: step outputs"));
    assert!(at("### Read the clock") > at("## Appendix: step outputs"));
    assert!(at("### Write a note about it") > at("### Read the clock"));
    assert!(!report.contains("\n## Read the clock"), "{report}");
    assert!(!report.contains("\n## Write a note about it"), "{report}");

    // Without a final step, the last step's output is the answer.
    let out = dir.path().join("last");
    crate::support::run_plan(time_steps(dir.path(), "last.json", false), &out)
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let note = std::fs::read_to_string(out.join("sections/note.md")).expect("note");
    assert_eq!(run["answer"].as_str(), Some(note.trim()));
    // A research plan has no answer of this kind.
    let research = crate::support::write_json(
        dir.path(),
        "research.json",
        &crate::support::plan("Topic", &[("1", "One chapter", &[])]),
    );
    let out = dir.path().join("research");
    crate::support::run_plan(&research, &out).run().expect_ok();
    assert!(read_json(&out.join("run.json")).get("answer").is_none());
}

fn ids(run: &Value) -> Vec<String> {
    run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| crate::support::id_text(&t["id"]))
        .collect()
}

#[test]
fn recovery_replaces_a_failed_tool_step_with_another_tool_step() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // greet completes, a fails for good (broken always reports an error), answer is blocked.
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"goal": "Greet the team", "steps": [
            {"step_id": "greet", "description": "Greet", "tool": "hello", "params": {"name": "team"}},
            {"step_id": "a", "description": "Fetch the data", "tool": "broken", "params": {"message": "x"}},
            {"step_id": "answer", "description": "Answer", "tool": "llm_call",
             "params": {"prompt": "Answer from {{greet.result}} and {{a.result}}"},
             "dependencies": ["greet", "a"]}
        ]}),
    );
    let out = dir.path().join("partial");
    let r = planwave(["run", "--recover"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--mcp-config", &cfg)
        .run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["rounds"][0]["passes"][0]["recovery"],
        "replan_from_failure"
    );
    // The failed step was replaced by a step with another tool; the kept one was not rerun.
    assert_eq!(ids(&run), ["greet", "a_alt", "answer"]);
    let alt = task(&run, "a_alt");
    assert_eq!(tools_called(alt), [("hello".to_owned(), "ok".to_owned())]);
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(plan["format"], "steps", "{plan}");
    let answer = &plan["tasks"][2];
    assert_eq!(answer["tool"], "llm_call");
    assert_eq!(answer["dependencies"], json!(["greet", "a_alt"]));
    assert!(
        answer["params"]["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("{{a_alt.result}}")),
        "{answer}"
    );
    assert_eq!(
        task(&run, "greet")["tool_calls"].as_array().map(Vec::len),
        Some(1)
    );
    // The replanner saw the catalogue and the failed step's error (kept in the round).
    let asked = read_json(&out.join("rounds/1/replan-pass-2.json"));
    assert_eq!(asked["replaced"], json!(["a", "answer"]), "{asked}");

    // Nothing completed: a complete replan, still in steps, with the tools it has.
    let plan = write_json(
        dir.path(),
        "none.json",
        &json!({"goal": "Say hello to the team", "steps": [
            {"step_id": "a", "description": "Fetch the data", "tool": "broken", "params": {"message": "x"}},
            {"step_id": "answer", "description": "Answer", "tool": "llm_call",
             "params": {"prompt": "Answer from {{a.result}}"}, "dependencies": ["a"]}
        ]}),
    );
    let out = dir.path().join("complete");
    planwave(["run", "--recover"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["rounds"][0]["passes"][0]["recovery"], "complete_replan");
    assert_eq!(run["status"], "completed", "{run}");
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(plan["format"], "steps", "{plan}");
    let tools: Vec<&str> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["tool"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tools, ["hello", "llm_call"], "{plan}");
}

#[test]
fn plan_lists_the_tools_of_mcp_config_and_of_planwave_toml() {
    let dir = tempdir();
    let Some(cfg) = crate::cases::mcp::everything_config(dir.path(), "everything") else {
        return;
    };
    let goal = "Add two figures with get-sum, then echo the total";
    let tools_of = |out: &crate::support::Output| -> Vec<String> {
        let plan: Value = serde_json::from_str(&out.stdout).expect("plan JSON");
        plan["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .map(|t| t["tool"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let r = planwave(["plan", goal])
        .instant()
        .quiet()
        .arg("--json")
        .opt("--plan-format", "steps")
        .opt("--mcp-config", &cfg)
        .run();
    r.expect_ok();
    assert_eq!(tools_of(&r), ["get-sum", "echo", "llm_call"]);

    let js = crate::cases::mcp::everything().expect("peer");
    let toml = dir.path().join("planwave.toml");
    std::fs::write(
        &toml,
        format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            js.display().to_string()
        ),
    )
    .expect("toml");
    let r = planwave(["plan", goal])
        .instant()
        .quiet()
        .arg("--json")
        .opt("--plan-format", "steps")
        .opt("--config", &toml)
        .run();
    r.expect_ok();
    assert_eq!(tools_of(&r), ["get-sum", "echo", "llm_call"]);
}

#[test]
fn validate_takes_meta_and_says_when_tool_names_were_not_checked() {
    let dir = tempdir();
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [{"step_id": "a", "description": "Greet", "tool": "hello",
                           "params": {"name": "{{meta.team}}"}}]}),
    );
    let v = planwave(["validate"])
        .arg(&plan)
        .opt("--meta", "team=research")
        .run();
    v.expect_ok();
    assert!(v.stdout.starts_with("valid: 1 tasks"), "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "tool names not checked: no tools are configured (give --mcp-config FILE to check them)"
        ),
        "{}",
        v.stdout
    );
    // Without --meta the reference is still refused, as run refuses it.
    planwave(["validate"]).arg(&plan).run().expect_code(2);

    // With the servers given, the names are checked and the note is gone.
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let v = planwave(["validate"])
        .arg(&plan)
        .opt("--meta", "team=research")
        .opt("--mcp-config", &cfg)
        .run();
    v.expect_ok();
    assert!(!v.stdout.contains("not checked"), "{}", v.stdout);
}

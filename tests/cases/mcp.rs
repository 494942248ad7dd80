//! Subagents and tool steps calling real MCP servers written by others:
//! `@modelcontextprotocol/server-everything` (npm) and `mcp-server-time` (PyPI), installed by
//! `.ci/peers`. The simulated model asks for the calls; the servers do the work.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{
    SimLlm, events, peer, planwave, read_json, run_plan, task, tempdir, write_json,
};

/// `server-everything`'s entry point, or `None` when peer tests are skipped.
pub fn everything() -> Option<PathBuf> {
    peer("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// An `mcpServers` config with server-everything over stdio under `name`.
pub(crate) fn everything_config(dir: &Path, name: &str) -> Option<PathBuf> {
    let js = everything()?;
    Some(write_json(
        dir,
        "mcp.json",
        &json!({"mcpServers": {name: {"command": "node", "args": [js, "stdio"]}}}),
    ))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A research plan whose first task suggests get-sum then echo.
fn chain_plan(dir: &Path) -> PathBuf {
    chain_plan_titled(
        dir,
        "Arithmetic audit",
        "Add two figures and confirm the total",
    )
}

fn chain_plan_titled(dir: &Path, topic: &str, first: &str) -> PathBuf {
    write_json(
        dir,
        "plan.json",
        &json!({"topic": topic, "objectives": ["check a sum"], "tasks": [
            {"id": 1, "description": first, "dependencies": [],
             "hints": {"key_questions": ["What is the total?"],
                       "suggested_tools": ["get-sum", "echo", "info_search_finance_db"]}},
            {"id": 2, "description": "Conclusion", "dependencies": [1]}
        ]}),
    )
}

/// The sum get-sum computed (from the arguments it was given) reached echo's arguments and
/// the section.
fn assert_sum_flowed(out: &Path) {
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    let calls = task(&run, "1")["tool_calls"]
        .as_array()
        .expect("tool calls")
        .clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["tool"], "get-sum");
    assert_eq!(calls[1]["tool"], "echo");
    let (a, b) = (
        calls[0]["args"]["a"].as_f64().expect("a"),
        calls[0]["args"]["b"].as_f64().expect("b"),
    );
    let sum = format!("{}", a + b);
    let sum_text = calls[0]["output"].as_str().expect("output");
    assert!(
        sum_text.contains(&sum),
        "get-sum said {sum_text:?}, expected {sum}"
    );
    let message = calls[1]["args"]["message"].as_str().expect("echo message");
    assert_eq!(message, sum_text, "echo got the previous output");
    let echoed = calls[1]["output"].as_str().expect("echo output");
    assert!(echoed.contains(&sum), "{echoed}");
    let section_file = task(&run, "1")["section_file"]
        .as_str()
        .expect("section file");
    let section = std::fs::read_to_string(out.join(section_file))
        .or_else(|_| std::fs::read_to_string(out.join("sections").join(section_file)))
        .expect("section");
    assert!(
        section.contains(echoed),
        "section reports the last output:\n{section}"
    );
    assert!(
        task(&run, "2")["tool_calls"].is_null(),
        "task 2 suggests no tools"
    );

    let ev = events(out);
    let schema = crate::cases::events::documented();
    for e in &ev {
        crate::cases::events::check_line(e, &ev[0]["run_id"], &schema);
    }
    let tool_events: Vec<&Value> = ev.iter().filter(|e| e["type"] == "tool_call").collect();
    assert_eq!(tool_events.len(), 2);
    assert!(
        tool_events
            .iter()
            .all(|e| e["outcome"] == "ok" && e["server"] == "everything")
    );
    assert!(ev.iter().any(|e| e["type"] == "mcp_server"
        && e["status"] == "started"
        && e["server"] == "everything"));
}

#[test]
fn json_protocol_chain_carries_the_sum_into_the_next_call() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = chain_plan(dir.path());
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_ok();
    assert!(
        r.stderr.contains(
            "warning: task 1: suggested tool info_search_finance_db is not available; dropped"
        ),
        "{}",
        r.stderr
    );
    assert_sum_flowed(&out);
}

#[test]
fn a_model_retry_reuses_the_tool_results_of_the_failed_attempt() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = chain_plan(dir.path());
    let out = dir.path().join("out");
    // Task 1's first attempt fails after its get-sum -> echo chain has run.
    let r = run_plan(&plan, &out)
        .opt("--mcp-config", &cfg)
        .opt("--sim-flaky", "1")
        .opt("--retry-backoff-ms", "1")
        .run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    let t = task(&run, "1");
    assert_eq!(t["attempts"], 2, "{t}");
    let calls: Vec<(String, String)> = t["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").to_owned(),
                c["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let pair = |t: &str, o: &str| (t.to_owned(), o.to_owned());
    assert_eq!(
        calls,
        vec![
            pair("get-sum", "ok"),
            pair("echo", "ok"),
            pair("get-sum", "reused"),
            pair("echo", "reused"),
        ],
        "the retry asked for the same calls and got the first attempt's results"
    );
    let reused = &t["tool_calls"][2];
    assert_eq!(reused["output"], t["tool_calls"][0]["output"]);
    assert_eq!(reused["duration_ms"], 0.0);
}

#[test]
fn a_chinese_plan_chains_the_same_way() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = chain_plan_titled(dir.path(), "算术核对", "两个数字求和并确认合计");
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_ok();
    assert_sum_flowed(&out);
}

#[test]
fn native_protocol_over_http_chains_the_same_way() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let server = SimLlm::start(&["--latency-ms", "0"], &[]);
    let plan = chain_plan(dir.path());
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--tool-protocol", "native")
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .run();
    r.expect_ok();
    assert_sum_flowed(&out);
}

#[test]
fn tool_step_plan_passes_results_by_reference() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "sum", "description": "Add", "tool": "get-sum", "params": {"a": 20, "b": 22}},
            {"step_id": "say", "description": "Echo the sum", "tool": "echo",
             "params": {"message": "result: @{{steps.sum.result}}"}, "dependencies": ["sum"]},
            {"step_id": "note", "description": "Write it up", "tool": "llm_call",
             "params": {"prompt": "Summarise {{say.result}}"}, "dependencies": ["say"]}
        ]}),
    );
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    let say = &task(&run, "say")["tool_calls"][0];
    assert_eq!(
        say["args"]["message"],
        "result: The sum of 20 and 22 is 42."
    );
    assert_eq!(say["output"], "Echo: result: The sum of 20 and 22 is 42.");
    assert_eq!(task(&run, "note")["status"], "completed");
    // No model call for the tool steps, one for llm_call.
    let calls = run["calls"].as_array().expect("calls");
    let subagent_calls: Vec<&Value> = calls.iter().filter(|c| c["role"] == "subagent").collect();
    assert_eq!(subagent_calls.len(), 1, "{calls:?}");
    assert_eq!(subagent_calls[0]["task"], "note");
}

#[test]
fn invalid_tool_use_is_rejected_before_anything_runs() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": 1, "description": "Search", "tool": "search_web", "params": {"q": "x"}},
            {"step_id": 2, "description": "Echo", "tool": "echo", "params": {"message": "{{3.result}}"}},
            {"step_id": 3, "description": "Add", "tool": "get-sum", "params": {"a": 1, "b": 2}}
        ]}),
    );
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("task 1: unknown tool search_web (known tools: ")
            && r.stderr.contains("get-sum"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("task 2: parameter references task 3, which is not among its prerequisites"),
        "{}",
        r.stderr
    );
    assert!(!out.join("run.json").exists());

    let v = planwave(["validate"])
        .arg(&plan)
        .opt("--mcp-config", &cfg)
        .run();
    v.expect_code(2);
    assert!(
        v.stderr
            .contains("task 1: unknown tool search_web (known tools: "),
        "{}",
        v.stderr
    );
}

#[test]
fn a_tool_that_never_answers_times_out_and_is_retried_once() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "slow", "description": "Wait forever", "tool": "trigger-long-running-operation",
             "params": {"duration": 3600, "steps": 2}},
            {"step_id": "after", "description": "Never runs", "tool": "echo",
             "params": {"message": "{{slow.result}}"}, "dependencies": ["slow"]},
            {"step_id": "other", "description": "Independent", "tool": "echo", "params": {"message": "fine"}}
        ]}),
    );
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--tool-timeout", "1")
        .run();
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    let slow = task(&run, "slow");
    assert_eq!(slow["status"], "failed");
    assert_eq!(
        slow["error"],
        "tool trigger-long-running-operation (server everything) did not answer within 1.0s"
    );
    let attempts: Vec<&Value> = slow["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .collect();
    assert_eq!(attempts.len(), 2, "one retry: {attempts:?}");
    assert_eq!(attempts[1]["attempt"], 2);
    assert_eq!(task(&run, "after")["status"], "blocked");
    assert_eq!(task(&run, "other")["status"], "completed");
}

#[test]
fn example_plan_runs_with_everything_and_the_time_server() {
    let dir = tempdir();
    let (Some(js), Some(time)) = (everything(), peer("py/bin/mcp-server-time")) else {
        return;
    };
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {
            "everything": {"command": "node", "args": [js, "stdio"]},
            "time": {"command": time}
        }}),
    );
    let out = dir.path().join("out");
    let plan = crate::support::repo_file("examples/mcp_plan.json");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    let now = &task(&run, "2")["tool_calls"][0];
    assert_eq!(now["server"], "time");
    let now_out: Value =
        serde_json::from_str(now["output"].as_str().expect("output")).expect("json");
    let convert = &task(&run, "3")["tool_calls"][0];
    assert_eq!(convert["args"]["source_timezone"], now_out["timezone"]);
    let converted: Value =
        serde_json::from_str(convert["output"].as_str().expect("output")).expect("json");
    assert_eq!(converted["target"]["timezone"], "Asia/Tokyo");
    assert!(
        converted["source"]["datetime"]
            .as_str()
            .expect("dt")
            .contains("T12:00:00")
    );
    assert_eq!(
        task(&run, "1")["tool_calls"]
            .as_array()
            .expect("chain")
            .len(),
        2
    );
}

#[test]
fn a_server_that_dies_fails_its_call_clearly_and_is_restarted_once() {
    let dir = tempdir();
    // A tiny server on the official Python SDK (installed with mcp-server-time) that exits
    // mid-call: `fragile` on its first call only, `doomed` on every call.
    let Some(python) = peer("py/bin/python") else {
        return;
    };
    let script = crate::support::repo_file("tests/peers/mcp_crashy.py");
    let mark = dir.path().join("crashed-once");
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"crashy": {"command": python, "args": [script],
                                          "env": {"CRASHY_MARK": path(&mark)}}}}),
    );
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "a", "description": "Survives a restart", "tool": "fragile", "params": {"message": "hello"}},
            {"step_id": "b", "description": "Crashes every time", "tool": "doomed", "params": {"message": "x"},
             "dependencies": ["a"]},
            {"step_id": "c", "description": "Needs b", "tool": "fragile", "params": {"message": "{{b.result}}"},
             "dependencies": ["b"]}
        ]}),
    );
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .run();
    r.expect_code(3);
    assert!(mark.exists(), "the server crashed once");
    let run = read_json(&out.join("run.json"));

    let a = task(&run, "a");
    assert_eq!(a["status"], "completed");
    let calls = a["tool_calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["outcome"], "error");
    assert_eq!(
        calls[0]["error"],
        "tool fragile: MCP server crashy failed: the connection closed (the server exited or crashed)"
    );
    assert_eq!(calls[1]["outcome"], "ok");
    assert_eq!(calls[1]["output"], "survived: hello");

    let b = task(&run, "b");
    assert_eq!(b["status"], "failed");
    assert_eq!(
        b["error"],
        "tool doomed: MCP server crashy is unavailable: it crashed again after 1 restart"
    );
    assert_eq!(task(&run, "c")["status"], "blocked");
    let restarts = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "mcp_server" && e["status"] == "restarted")
        .count();
    assert_eq!(restarts, 1, "restarted once, not again");
}

/// A free port on 127.0.0.1 (released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[test]
fn streamable_http_transport_reaches_the_same_tools() {
    use std::io::BufRead;
    let dir = tempdir();
    let Some(js) = everything() else {
        return;
    };
    let port = free_port();
    let mut child = std::process::Command::new("node")
        .arg(&js)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        // It logs to stderr.
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs server-everything");
    let stdout = child.stderr.take().expect("stderr");
    let _server = crate::support::ChildGuard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("listening") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("server-everything says it is listening");

    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"everything": {"url": format!("http://127.0.0.1:{port}/mcp"),
                                              "headers": {"X-Planwave-Test": "1"}}}}),
    );
    let plan = chain_plan(dir.path());
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_ok();
    assert_sum_flowed(&out);
}

#[test]
fn a_server_that_cannot_start_is_named_and_the_run_goes_on() {
    let dir = tempdir();
    let Some(js) = everything() else {
        return;
    };
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {
            "everything": {"command": "node", "args": [js, "stdio"]},
            "ghost": {"command": dir.path().join("no-such-server")}
        }}),
    );
    let plan = chain_plan(dir.path());
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_ok();
    assert!(
        r.stderr.contains("warning: MCP server ghost: cannot start"),
        "{}",
        r.stderr
    );
    assert!(
        events(&out).iter().any(|e| e["type"] == "mcp_server"
            && e["server"] == "ghost"
            && e["status"] == "failed")
    );
    assert_sum_flowed(&out);
}

#[test]
fn research_plans_with_the_tools_and_its_subagents_call_them() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let out = dir.path().join("out");
    let r = planwave(["research", "Analyse Acme Corp"])
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--max-rounds", "1")
        .instant()
        .run();
    r.expect_ok();
    let plan = read_json(&out.join("plan.json"));
    let suggested: Vec<String> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .flat_map(|t| {
            t["hints"]["suggested_tools"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|v| v.as_str().expect("name").to_owned())
        .collect();
    assert!(!suggested.is_empty(), "the planner saw the tools: {plan}");
    let run = read_json(&out.join("run.json"));
    let called: Vec<String> = run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .flat_map(|t| t["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["tool"].as_str().expect("tool").to_owned())
        .collect();
    assert_eq!(
        called, suggested,
        "each suggested tool was called once, in order"
    );
}

#[test]
fn servers_and_limits_can_come_from_planwave_toml() {
    let dir = tempdir();
    let Some(js) = everything() else {
        return;
    };
    let toml = format!(
        "[mcp]\ntool_timeout_secs = 1\ntool_protocol = \"native\"\n\n[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
        js.display().to_string()
    );
    let cfg = dir.path().join("planwave.toml");
    std::fs::write(&cfg, toml).expect("write toml");
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "slow", "description": "Wait", "tool": "trigger-long-running-operation",
             "params": {"duration": 3600, "steps": 2}}
        ]}),
    );
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--config", &cfg)
        .run();
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    assert_eq!(
        task(&run, "slow")["error"],
        "tool trigger-long-running-operation (server everything) did not answer within 1.0s"
    );
}

#[test]
fn a_batch_starts_its_servers_once_for_every_job() {
    let dir = tempdir();
    let Some(python) = peer("py/bin/python") else {
        return;
    };
    let starts = dir.path().join("starts.txt");
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"counter": {
            "command": python,
            "args": [crate::support::repo_file("tests/peers/mcp_crashy.py")],
            "env": {"CRASHY_STARTS": path(&starts)}}}}),
    );
    let lines: Vec<String> = ["ann", "bob", "cy"]
        .iter()
        .map(|n| {
            json!({"id": n, "plan": {"steps": [
                {"step_id": 1, "description": "greet", "tool": "hello", "params": {"name": n}}
            ]}})
            .to_string()
        })
        .collect();
    let jobs = dir.path().join("jobs.jsonl");
    std::fs::write(&jobs, lines.join("\n")).expect("jobs");
    let out = dir.path().join("batch");
    let r = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--jobs", "3")
        .opt("--mcp-config", &cfg)
        .quiet()
        .run();
    r.expect_ok();
    for n in ["ann", "bob", "cy"] {
        let run = read_json(&out.join("jobs").join(n).join("run.json"));
        assert_eq!(
            task(&run, "1")["tool_calls"][0]["output"],
            format!("hello {n}")
        );
    }
    let started = std::fs::read_to_string(&starts).expect("starts");
    assert_eq!(
        started.lines().count(),
        1,
        "one server for the batch: {started}"
    );
}

#[test]
fn resume_restarts_the_servers_and_references_reach_results_of_the_first_attempt() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "sum", "description": "Add", "tool": "get-sum", "params": {"a": 30, "b": 12}},
            {"step_id": "say", "description": "Echo the sum", "tool": "echo",
             "params": {"message": "again: {{sum.result}}"}, "dependencies": ["sum"]}
        ]}),
    );
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .quiet()
        .run();
    r.expect_ok();
    let first = read_json(&out.join("run.json"));
    let file = task(&first, "say")["section_file"]
        .as_str()
        .expect("file")
        .to_owned();
    // A crash before `say`'s completion was journaled: `say` runs again, `sum` is kept.
    crate::cases::durable::forget_completion(&out, "say");
    std::fs::remove_file(out.join(&file)).expect("rm");
    let r = planwave(["resume"]).arg(&out).quiet().run();
    r.expect_ok();
    assert!(
        r.stdout.contains("1 of 2 tasks already completed"),
        "{}",
        r.stdout
    );
    let again = read_json(&out.join("run.json"));
    let say = &task(&again, "say")["tool_calls"][0];
    assert_eq!(say["args"]["message"], "again: The sum of 30 and 12 is 42.");
    assert_eq!(
        std::fs::read_to_string(out.join(&file)).expect("section"),
        "Echo: again: The sum of 30 and 12 is 42."
    );
}

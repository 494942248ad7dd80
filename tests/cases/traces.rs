//! Traces exported by the real binary to a real OTLP receiver on 127.0.0.1 (the official
//! `opentelemetry-proto` decoding, see tests/peers/otlp_receiver.py): the span tree of a run
//! follows the plan, model calls carry the GenAI attributes, failures are errors, and the API
//! key is nowhere.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::support::otlp::{OtlpReceiver, attr};
use crate::support::{SimLlm, id_text, planwave, read_json, run_plan, tempdir};

const FAKE_KEY: &str = "pw-FAKE-KEY-for-traces-3b9d2f";

/// `(task id, its dependencies)` from a run directory's plan.json.
fn plan_deps(dir: &std::path::Path) -> HashMap<String, BTreeSet<String>> {
    let plan = read_json(&dir.join("plan.json"));
    plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            (
                id_text(&t["id"]),
                t["dependencies"]
                    .as_array()
                    .map(|d| d.iter().map(id_text).collect())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn research_over_http_exports_one_trace_shaped_like_the_plan() {
    let Some(receiver) = OtlpReceiver::start(false) else {
        return;
    };
    let server = SimLlm::start(
        &[
            "--planner-faults",
            "cycle",
            "--api-key-env",
            "SIM_KEY",
            "--prefix-cache",
            "--prefix-cache-block-tokens",
            "16",
        ],
        &[("SIM_KEY", FAKE_KEY)],
    );
    let dir = tempdir();
    let out = dir.path().join("traced");
    // The planner has a model of its own: its calls' spans must name it.
    let config = dir.path().join("planwave.toml");
    std::fs::write(
        &config,
        "[llm.models]\nplanner = \"planwave-sim-planner\"\n",
    )
    .expect("config");
    let res = planwave(["research"])
        .opt("--config", &config)
        .arg("深度分析特斯拉公司")
        .out(&out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--otlp-endpoint", &receiver.http_url)
        .quiet()
        .env("PLANWAVE_LLM_API_KEY", FAKE_KEY)
        .env("RUST_LOG", "trace")
        .run();
    res.expect_ok();
    let spans = receiver.spans();
    let run = read_json(&out.join("run.json"));
    let deps = plan_deps(&out);

    // One trace, one root: the run.
    let traces: BTreeSet<&str> = spans
        .0
        .iter()
        .map(|s| s["trace_id"].as_str().expect("id"))
        .collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
    let roots = spans.roots();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    let root = roots[0];
    assert_eq!(root["name"], "run");
    assert_eq!(attr(root, "planwave.command"), "research");
    assert_eq!(attr(root, "planwave.run.id"), &run["run_id"]);
    assert_eq!(attr(root, "planwave.tasks"), deps.len());
    assert_eq!(attr(root, "planwave.status"), "completed");
    assert_eq!(root["resource"]["service.name"], "planwave");

    // Planner: the invalid first plan (a cycle) and the repaired second, each with its call.
    let plans = spans.named("plan");
    assert_eq!(plans.len(), 2, "{plans:#?}");
    for p in &plans {
        assert_eq!(p["parent_span_id"], root["span_id"]);
        let calls = spans.children_of(p);
        assert_eq!(calls.len(), 1, "{calls:#?}");
        assert_eq!(attr(calls[0], "planwave.role"), "planner");
        assert_eq!(calls[0]["name"], "chat planwave-sim-planner");
        assert_eq!(
            attr(calls[0], "gen_ai.request.model"),
            "planwave-sim-planner"
        );
    }
    let first = plans
        .iter()
        .find(|p| attr(p, "planwave.plan.attempt") == 1)
        .expect("attempt 1");
    assert_eq!(first["status"]["code"], "STATUS_CODE_ERROR");
    assert!(
        attr(first, "planwave.plan.problems")
            .as_str()
            .expect("problems")
            .contains("cycle")
    );
    let second = plans
        .iter()
        .find(|p| attr(p, "planwave.plan.attempt") == 2)
        .expect("attempt 2");
    assert_eq!(attr(second, "planwave.plan.valid"), true);
    assert_ne!(second["status"]["code"], "STATUS_CODE_ERROR");

    // One task span per task, under the root, linked to exactly its prerequisites' spans.
    let tasks = spans.tasks();
    assert_eq!(
        tasks.keys().cloned().collect::<BTreeSet<_>>(),
        deps.keys().cloned().collect::<BTreeSet<_>>()
    );
    assert!(
        deps.values().any(|d| !d.is_empty()),
        "the plan has dependencies"
    );
    let span_of: HashMap<&str, &str> = tasks
        .iter()
        .map(|(id, s)| (s["span_id"].as_str().expect("span id"), id.as_str()))
        .collect();
    let mut cached_spans = 0;
    for (id, s) in &tasks {
        assert_eq!(s["parent_span_id"], root["span_id"], "task {id}");
        assert_eq!(attr(s, "planwave.task.status"), "completed", "task {id}");
        let linked: BTreeSet<String> = s["links"]
            .as_array()
            .expect("links")
            .iter()
            .map(|l| {
                assert_eq!(l["trace_id"], s["trace_id"]);
                assert_eq!(l["attributes"]["planwave.link.kind"], "prerequisite");
                span_of[l["span_id"].as_str().expect("link span")].to_owned()
            })
            .collect();
        assert_eq!(linked, deps[id], "links of task {id}");
        // Its model call, with the GenAI attributes and the tokens run.json counted.
        let calls = spans.children_of(s);
        assert_eq!(calls.len(), 1, "task {id}: {calls:#?}");
        let chat = calls[0];
        assert_eq!(chat["name"], "chat planwave-sim-1");
        assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(chat, "gen_ai.provider.name"), "openai-compatible");
        assert_eq!(attr(chat, "gen_ai.request.model"), "planwave-sim-1");
        assert_eq!(
            attr(chat, "gen_ai.response.finish_reasons"),
            &serde_json::json!(["stop"])
        );
        let usage = &crate::support::task(&run, id)["usage"];
        assert_eq!(
            attr(chat, "gen_ai.usage.input_tokens"),
            &usage["prompt_tokens"],
            "task {id}"
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.output_tokens"),
            &usage["completion_tokens"],
            "task {id}"
        );
        // The cached part of the prompt, under the semantic conventions' name; absent when
        // the provider reported none.
        assert_eq!(
            attr(chat, "gen_ai.usage.cache_read.input_tokens"),
            &usage["cached_tokens"],
            "task {id}"
        );
        cached_spans += usize::from(usage.get("cached_tokens").is_some());
        assert!(
            attr(chat, "gen_ai.input.messages").is_null(),
            "no prompt text unless asked"
        );
    }

    // Subagent prompts share their instructions: all but the first find them cached.
    assert!(cached_spans > 0, "no chat span with cached tokens");

    // The integrator's summary call sits under `integrate`.
    let integrate = spans.named("integrate");
    assert_eq!(integrate.len(), 1);
    assert_eq!(integrate[0]["parent_span_id"], root["span_id"]);
    let summary = spans.children_of(integrate[0]);
    assert_eq!(summary.len(), 1);
    assert_eq!(attr(summary[0], "planwave.role"), "integrator");

    // Every request carried a traceparent; the key is in no span, attribute or resource.
    let stats = server.stats();
    assert_eq!(stats["traced"], stats["requests"], "{stats}");
    // Sections, 2 planning attempts, the summary and the reflective loop's one evaluation
    // (correct enough: no reflection call).
    assert_eq!(stats["requests"], deps.len() + 4, "{stats}");
    assert_eq!(stats["roles"]["evaluator"], 1, "{stats}");
    for needle in [FAKE_KEY, "3b9d2f"] {
        assert!(
            !receiver.raw().contains(needle),
            "the API key reached the traces"
        );
    }
}

#[test]
fn failed_and_blocked_tasks_are_error_spans_over_grpc_from_the_environment() {
    let Some(receiver) = OtlpReceiver::start(true) else {
        return;
    };
    let grpc = receiver.grpc_url.clone().expect("grpc port");
    let dir = tempdir();
    let plan = crate::support::plan(
        "traced failures",
        &[
            ("1", "base", &[]),
            ("2", "breaks", &["1"]),
            ("3", "after", &["2", "1"]),
            ("4", "alone", &[]),
        ],
    );
    let plan_file = crate::support::write_json(dir.path(), "plan.json", &plan);
    let out = dir.path().join("out");
    let res = run_plan(&plan_file, &out)
        .opt("--llm", "sim")
        .opt("--sim-fail", "2")
        .arg("--trace-content")
        .quiet()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &grpc)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("OTEL_SERVICE_NAME", "planwave-test")
        .run();
    res.expect_code(3);
    let spans = receiver.spans();
    assert!(spans.0.iter().all(|s| s["transport"] == "grpc"));
    let root = spans.roots();
    assert_eq!(root.len(), 1);
    let root = root[0];
    assert_eq!(root["resource"]["service.name"], "planwave-test");
    assert_eq!(root["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(attr(root, "planwave.status"), "partial");
    assert_eq!(attr(root, "planwave.exit_code"), 3);

    let tasks = spans.tasks();
    assert_eq!(tasks.len(), 4, "blocked tasks get a span too");
    let status = |id: &str| {
        tasks[id]["status"]["code"]
            .as_str()
            .expect("code")
            .to_owned()
    };
    assert_ne!(status("1"), "STATUS_CODE_ERROR");
    assert_ne!(status("4"), "STATUS_CODE_ERROR");
    assert_eq!(status("2"), "STATUS_CODE_ERROR");
    assert_eq!(attr(tasks["2"], "planwave.task.status"), "failed");
    assert_eq!(
        attr(tasks["2"], "planwave.task.attempts"),
        2,
        "one retry by default"
    );
    assert!(
        !tasks["2"]["status"]["message"]
            .as_str()
            .expect("message")
            .is_empty()
    );
    // Each failed attempt is an error chat span under the task.
    let calls = spans.children_of(tasks["2"]);
    assert_eq!(calls.len(), 2);
    assert!(
        calls
            .iter()
            .all(|c| c["status"]["code"] == "STATUS_CODE_ERROR")
    );
    assert_eq!(status("3"), "STATUS_CODE_ERROR");
    assert_eq!(attr(tasks["3"], "planwave.task.status"), "blocked");
    assert_eq!(attr(tasks["3"], "planwave.task.blocked_by"), "2");
    let linked: BTreeSet<&str> = tasks["3"]["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| l["span_id"].as_str().expect("id"))
        .collect();
    let expected: BTreeSet<&str> = ["1", "2"]
        .iter()
        .map(|id| tasks[*id]["span_id"].as_str().expect("id"))
        .collect();
    assert_eq!(linked, expected);
    assert!(
        spans.children_of(tasks["3"]).is_empty(),
        "a blocked task calls no model"
    );

    // --trace-content puts the prompt and the answer on the chat span.
    let chat = spans.children_of(tasks["1"]);
    assert_eq!(chat.len(), 1);
    let input: Value = serde_json::from_str(
        attr(chat[0], "gen_ai.input.messages")
            .as_str()
            .expect("input"),
    )
    .expect("input messages are JSON");
    assert!(input.as_array().is_some_and(|m| !m.is_empty()));
    let run = read_json(&out.join("run.json"));
    let file = crate::support::task(&run, "1")["section_file"]
        .as_str()
        .expect("section file")
        .to_owned();
    let section = std::fs::read_to_string(out.join(file)).expect("section");
    let output: Value = serde_json::from_str(
        attr(chat[0], "gen_ai.output.messages")
            .as_str()
            .expect("output"),
    )
    .expect("output messages are JSON");
    assert_eq!(
        output[0]["content"].as_str().map(str::trim),
        Some(section.trim())
    );
}

#[test]
fn ctrl_c_still_flushes_the_trace_with_the_run_marked_cancelled() {
    let Some(receiver) = OtlpReceiver::start(false) else {
        return;
    };
    let dir = tempdir();
    let plan = crate::support::plan(
        "interrupted trace",
        &[
            ("1", "a", &[]),
            ("2", "b", &["1"]),
            ("3", "c", &["2"]),
            ("4", "d", &["3"]),
        ],
    );
    let plan_file = crate::support::write_json(dir.path(), "plan.json", &plan);
    let out = dir.path().join("out");
    let mut child = planwave(["run"])
        .arg(&plan_file)
        .out(&out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "200")
        .opt("--sim-sigma", "0")
        .opt("--otlp-endpoint", &receiver.http_url)
        .spawn();
    child.wait_for(" completed in ", 1);
    child.interrupt();
    let (code, stdout) = child.wait();
    assert_eq!(code, 130, "{stdout}");
    let spans = receiver.spans();
    let roots = spans.roots();
    assert_eq!(roots.len(), 1, "the root was exported after Ctrl-C");
    let root = roots[0];
    assert_eq!(attr(root, "planwave.status"), "cancelled");
    assert_eq!(attr(root, "planwave.exit_code"), 130);
    assert_eq!(root["status"]["code"], "STATUS_CODE_ERROR");
    let tasks = spans.tasks();
    assert_eq!(attr(tasks["1"], "planwave.task.status"), "completed");
    assert!(!tasks.contains_key("4"), "task 4 never started");
    for (id, s) in &tasks {
        let status = attr(s, "planwave.task.status").as_str().expect("status");
        assert!(
            ["completed", "cancelled"].contains(&status),
            "task {id}: {status}"
        );
        assert_eq!(s["parent_span_id"], root["span_id"]);
    }
}

#[test]
fn mcp_tool_calls_are_execute_tool_spans_under_their_task() {
    let Some(receiver) = OtlpReceiver::start(false) else {
        return;
    };
    let Some(js) = crate::support::peer(
        "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    ) else {
        return;
    };
    let dir = tempdir();
    let cfg = crate::support::write_json(
        dir.path(),
        "mcp.json",
        &serde_json::json!({"mcpServers": {"everything": {"command": "node", "args": [js, "stdio"]}}}),
    );
    let plan = crate::support::write_json(
        dir.path(),
        "steps.json",
        &serde_json::json!({"steps": [
            {"step_id": "slow", "description": "Wait forever", "tool": "trigger-long-running-operation",
             "params": {"duration": 3600, "steps": 2}},
            {"step_id": "other", "description": "Independent", "tool": "echo", "params": {"message": "fine"}}
        ]}),
    );
    let out = dir.path().join("out");
    let res = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--tool-timeout", "1")
        .opt("--otlp-endpoint", &receiver.http_url)
        .quiet()
        .run();
    res.expect_code(3);
    let spans = receiver.spans();
    let tasks = spans.tasks();
    let calls = |id: &str| -> Vec<&Value> {
        spans
            .children_of(tasks[id])
            .into_iter()
            .filter(|s| {
                s["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("execute_tool "))
            })
            .collect()
    };
    let ok = calls("other");
    assert_eq!(ok.len(), 1, "{ok:#?}");
    assert_eq!(ok[0]["name"], "execute_tool echo");
    assert_eq!(attr(ok[0], "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr(ok[0], "gen_ai.tool.name"), "echo");
    assert_eq!(attr(ok[0], "mcp.method.name"), "tools/call");
    assert_eq!(attr(ok[0], "planwave.mcp.server"), "everything");
    assert_eq!(attr(ok[0], "planwave.tool.outcome"), "ok");
    assert_ne!(ok[0]["status"]["code"], "STATUS_CODE_ERROR");
    // The call that timed out, and its one retry: two error spans, then a failed task.
    let slow = calls("slow");
    assert_eq!(slow.len(), 2, "{slow:#?}");
    for (n, s) in slow.iter().enumerate() {
        assert_eq!(s["status"]["code"], "STATUS_CODE_ERROR");
        assert_eq!(attr(s, "error.type"), "error");
        assert!(
            s["status"]["message"]
                .as_str()
                .expect("message")
                .contains("did not answer within 1.0s")
        );
        assert!(
            [1, 2].contains(&attr(s, "planwave.attempt").as_i64().expect("attempt")),
            "{n}"
        );
    }
    assert_eq!(tasks["slow"]["status"]["code"], "STATUS_CODE_ERROR");
}

#[test]
fn mcp_tool_calls_carry_the_execute_tool_span_as_traceparent_in_meta() {
    let Some(receiver) = OtlpReceiver::start(false) else {
        return;
    };
    let Some(python) = crate::support::peer("py/bin/python") else {
        return;
    };
    let dir = tempdir();
    let script = crate::support::repo_file("tests/peers/mcp_trace.py");
    let cfg = crate::support::write_json(
        dir.path(),
        "mcp.json",
        &serde_json::json!({"mcpServers": {"traced": {"command": python, "args": [script]}}}),
    );
    let plan = crate::support::write_json(
        dir.path(),
        "steps.json",
        &serde_json::json!({"steps": [
            {"step_id": "t", "description": "Report the trace context", "tool": "traceparent", "params": {}}
        ]}),
    );
    let out = dir.path().join("out");
    let res = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--otlp-endpoint", &receiver.http_url)
        .quiet()
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    let seen = crate::support::task(&run, "t")["tool_calls"][0]["output"]
        .as_str()
        .expect("tool output")
        .trim()
        .to_owned();
    let spans = receiver.spans();
    let tool = spans.prefixed("execute_tool ");
    assert_eq!(tool.len(), 1);
    assert_eq!(
        seen,
        format!(
            "00-{}-{}-01",
            tool[0]["trace_id"].as_str().expect("trace"),
            tool[0]["span_id"].as_str().expect("span")
        )
    );
}

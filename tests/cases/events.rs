//! `events.jsonl` and the `--events` stream against the schema in docs/events.md.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::support::{events, plan, planwave, read_json, repo_file, run_plan, tempdir, write_json};

/// `type -> (required fields, optional fields)` from the `### type` / `Fields:` lines.
pub fn documented() -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
    let doc = std::fs::read_to_string(repo_file("docs/events.md")).expect("docs/events.md");
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(t) = line.strip_prefix("### ") {
            current = Some(t.trim().to_owned());
        } else if let (Some(t), Some(fields)) = (&current, line.strip_prefix("Fields: ")) {
            let (mut req, mut opt) = (BTreeSet::new(), BTreeSet::new());
            for f in fields.split(", ") {
                let f = f.trim().trim_matches('`');
                match f.strip_suffix('?') {
                    Some(o) => opt.insert(o.to_owned()),
                    None => req.insert(f.to_owned()),
                };
            }
            out.insert(t.clone(), (req, opt));
        }
    }
    assert!(out.len() >= 9, "{out:?}");
    out
}

fn sorted(v: &[Value]) -> Vec<String> {
    let mut s: Vec<String> = v.iter().map(Value::to_string).collect();
    s.sort();
    s
}

pub fn check_line(
    ev: &Value,
    run_id: &Value,
    schema: &BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
) {
    let ty = ev["type"]
        .as_str()
        .unwrap_or_else(|| panic!("no type: {ev}"));
    let (req, opt) = schema
        .get(ty)
        .unwrap_or_else(|| panic!("undocumented type {ty}"));
    assert_eq!(&ev["run_id"], run_id, "{ev}");
    crate::support::ts(&ev["ts"]);
    let keys: BTreeSet<String> = ev.as_object().expect("object").keys().cloned().collect();
    for k in &keys {
        assert!(
            ["type", "ts", "run_id"].contains(&k.as_str()) || req.contains(k) || opt.contains(k),
            "{ty}: undocumented field {k}"
        );
    }
    for k in req {
        assert!(keys.contains(k), "{ty}: missing {k}: {ev}");
    }
}

#[test]
fn events_stream_to_stdout_and_match_the_documented_schema() {
    let dir = tempdir();
    let p = plan(
        "events",
        &[
            ("1", "a", &[]),
            ("2", "b", &["1"]),
            ("3", "c", &["2"]),
            ("4", "d", &[]),
        ],
    );
    let file = write_json(dir.path(), "plan.json", &p);
    let out = dir.path().join("out");
    let res = run_plan(&file, &out)
        .opt("--llm", "sim")
        .opt("--sim-fail", "2")
        .opt("--sim-flaky", "4")
        .fast_retries()
        .opt("--events", "-")
        .run();
    res.expect_code(3);
    // stdout is nothing but events; the summary went to stderr.
    let streamed: Vec<Value> = res
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not an event: {l}: {e}")))
        .collect();
    assert!(
        res.stderr
            .contains("partial: 2 completed, 1 failed, 1 blocked"),
        "{}",
        res.stderr
    );
    assert!(res.stderr.contains("report: "));
    let written = events(&out);
    // The journal records a completion before others hear of it, so the order may differ.
    assert_eq!(
        sorted(&streamed),
        sorted(&written),
        "the stream and events.jsonl carry the same lines"
    );
    assert_eq!(
        streamed.first().map(|e| &e["type"]),
        Some(&Value::from("run_started"))
    );

    let run_json = read_json(&out.join("run.json"));
    let schema = documented();
    for ev in &written {
        check_line(ev, &run_json["run_id"], &schema);
    }
    let types: BTreeSet<&str> = written.iter().filter_map(|e| e["type"].as_str()).collect();
    for t in [
        "run_started",
        "task_ready",
        "task_started",
        "task_retry",
        "task_completed",
        "task_failed",
        "task_blocked",
        "llm_call",
        "run_finished",
    ] {
        assert!(types.contains(t), "no {t} in {types:?}");
    }
    assert_eq!(
        written.first().map(|e| &e["type"]),
        Some(&Value::from("run_started"))
    );
    assert_eq!(
        written.last().map(|e| &e["type"]),
        Some(&Value::from("run_finished"))
    );
}

#[test]
fn research_events_to_a_file_carry_the_run_id_from_the_first_planner_call() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let stream = dir.path().join("stream.jsonl");
    let res = planwave(["research", "深度分析特斯拉公司"])
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .opt("--events", &stream)
        .quiet()
        .run();
    res.expect_ok();
    assert!(
        res.stdout.contains("report: "),
        "human output stays on stdout"
    );
    let streamed: Vec<Value> = std::fs::read_to_string(&stream)
        .expect("stream file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let written = events(&out);
    assert_eq!(sorted(&streamed), sorted(&written));
    // The loop frames the round; the planner's first call comes next.
    assert_eq!(written[0]["type"], "round_started");
    assert_eq!(written[1]["type"], "llm_call");
    assert_eq!(written[1]["role"], "planner");
    let types: Vec<&str> = written.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types[types.len() - 3..],
        [
            // Correct enough: the loop ends by its own rule, with no reflection call.
            "evaluation",
            "round_finished",
            "loop_finished"
        ]
    );
    let run_json = read_json(&out.join("run.json"));
    let schema = documented();
    for ev in &written {
        check_line(ev, &run_json["run_id"], &schema);
    }
}

#[test]
fn the_loop_streams_its_rounds_recoveries_and_end() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let stream = dir.path().join("stream.jsonl");
    planwave(["research", "Deep analysis of Tesla"])
        .out(&out)
        .instant()
        .quiet()
        .opt("--events", &stream)
        .opt("--sim-scores", "40,96")
        .opt("--sim-task-fail", "1:2:transient")
        .opt("--retries", "0")
        .run()
        .expect_ok();
    let loop_lines: Vec<Value> = std::fs::read_to_string(&stream)
        .expect("stream file")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .filter(|e| {
            matches!(
                e["type"].as_str(),
                Some(
                    "round_started"
                        | "recovery"
                        | "evaluation"
                        | "reflection"
                        | "round_finished"
                        | "loop_finished"
                )
            )
        })
        .collect();
    let brief: Vec<String> = loop_lines
        .iter()
        .map(|e| match e["type"].as_str().unwrap_or("") {
            "round_started" => format!("round_started {} {}", e["round"], e["reflected"]),
            "recovery" => format!(
                "recovery {}.{} {} {}",
                e["round"], e["pass"], e["strategy"], e["tasks"]
            ),
            "evaluation" => format!("evaluation {} {}", e["round"], e["correctness"]),
            "reflection" => format!("reflection {} {}", e["round"], e["reflection_id"]),
            "round_finished" => format!("round_finished {} {}", e["round"], e["passes"]),
            _ => format!(
                "loop_finished {} {} {}",
                e["stop_reason"], e["rounds"], e["best_round"]
            ),
        })
        .collect();
    assert_eq!(
        brief,
        [
            "round_started 1 false",
            "recovery 1.1 \"retry_step\" [2]",
            "evaluation 1 40.0",
            "reflection 1 \"sim-refl-1\"",
            "round_finished 1 2",
            "round_started 2 true",
            "evaluation 2 96.0",
            "round_finished 2 1",
            "loop_finished \"correctness\" 2 2",
        ]
    );
    // Each round's journal holds its own loop lines; the top level ends with loop_finished.
    let round1: Vec<Value> = std::fs::read_to_string(out.join("rounds/1/events.jsonl"))
        .expect("round 1 journal")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .collect();
    assert!(round1.iter().any(|e| e["type"] == "recovery"));
    assert_eq!(
        events(&out).last().expect("events")["type"],
        "loop_finished"
    );
    let schema = documented();
    let run_json = read_json(&out.join("run.json"));
    for ev in &events(&out) {
        check_line(ev, &run_json["run_id"], &schema);
    }
}

#[test]
fn progress_lines_show_tokens_so_far_and_an_estimate_of_time_left() {
    let dir = tempdir();
    let p = plan("progress", &[("1", "a", &[]), ("2", "b", &["1"])]);
    let file = write_json(dir.path(), "plan.json", &p);
    let out = dir.path().join("out");
    let res = run_plan(&file, &out).opt("--llm", "sim").run();
    res.expect_ok();
    let first_call = events(&out)
        .into_iter()
        .find(|e| e["type"] == "llm_call")
        .expect("a model call");
    let u = &first_call["usage"];
    let tokens =
        u["prompt_tokens"].as_u64().expect("n") + u["completion_tokens"].as_u64().expect("n");
    assert!(tokens < 1000, "printed exactly below 1k");
    let line = |task: &str| {
        res.stderr
            .lines()
            .find(|l| l.contains(&format!("task {task} completed in")))
            .unwrap_or_else(|| panic!("no completion line for {task}: {}", res.stderr))
            .to_owned()
    };
    let first = line("1");
    assert!(
        first.contains(&format!("; {tokens} tokens, ETA ")),
        "{first}"
    );
    let last = line("2");
    assert!(
        last.contains(" tokens") && !last.contains("ETA"),
        "nothing left to estimate: {last}"
    );
}

#[test]
fn task_started_says_what_the_task_is_and_which_tool_a_step_runs() {
    let dir = crate::support::tempdir();
    let plan = crate::support::write_json(
        dir.path(),
        "steps.json",
        &serde_json::json!({"steps": [
            {"step_id": "ask", "description": "Summarise the market\nin two lines", "tool": "llm_call",
             "params": {"prompt": "Summarise the market"}},
            {"step_id": "write", "description": "Write it up", "dependencies": ["ask"]}
        ]}),
    );
    let out = dir.path().join("out");
    crate::support::run_plan(&plan, &out)
        .quiet()
        .run()
        .expect_ok();
    let started: Vec<serde_json::Value> = crate::support::events(&out)
        .into_iter()
        .filter(|e| e["type"] == "task_started")
        .collect();
    let of = |id: &str| {
        started
            .iter()
            .find(|e| crate::support::id_text(&e["task"]) == id)
            .unwrap_or_else(|| panic!("task_started {id}: {started:?}"))
            .clone()
    };
    assert_eq!(of("ask")["description"], "Summarise the market");
    assert_eq!(of("ask")["tool"], "llm_call");
    assert_eq!(of("write")["description"], "Write it up");
    assert!(of("write").get("tool").is_none());
}

#[test]
fn task_completed_carries_a_one_line_preview_of_the_output_on_the_events_stream() {
    let dir = crate::support::tempdir();
    let plan = crate::support::write_json(
        dir.path(),
        "plan.json",
        &serde_json::json!({"topic": "Acme", "tasks": [
            {"id": 1, "description": "Business model", "dependencies": []}
        ]}),
    );
    let out = dir.path().join("out");
    let r = crate::support::run_plan(&plan, &out)
        .quiet()
        .opt("--events", "-")
        .run();
    r.expect_ok();
    let streamed: serde_json::Value = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "task_completed")
        .expect("task_completed on the stream");
    let preview = streamed["preview"].as_str().expect("preview");
    let section = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    // The section's first words, on one line, bounded.
    assert!(
        !preview.contains('\n') && preview.chars().count() <= 161,
        "{preview}"
    );
    let first_words: Vec<&str> = section
        .split_whitespace()
        .filter(|w| !w.starts_with('#'))
        .take(3)
        .collect();
    assert!(
        preview.starts_with(&first_words.join(" ")),
        "{preview:?} vs {section:?}"
    );
}

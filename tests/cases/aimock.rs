//! The real binary against an OpenAI-compatible mock written by others: `@copilotkit/aimock`
//! (npm, installed by `.ci/peers`), streaming and non-streaming.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{ChildGuard, peer, planwave, read_json, tempdir};

pub(crate) const PLAN: &str = r#"{"research_type": "company", "topic": "Acme Corp review", "objectives": ["understand Acme"], "tasks": [{"id": 1, "description": "Acme business model", "dependencies": [], "hints": {"data_needs": ["revenue mix"], "key_questions": ["What does Acme sell?"], "suggested_tools": []}}, {"id": 2, "description": "Acme finances", "dependencies": [], "hints": {"data_needs": [], "key_questions": [], "suggested_tools": []}}, {"id": 3, "description": "Acme outlook", "dependencies": [1, 2], "hints": {"data_needs": [], "key_questions": [], "suggested_tools": []}}]}"#;

/// The evaluator's answer, matched on the evaluator prompt's closing line: correct enough
/// that the reflective loop stops after one round.
pub(crate) const EVALUATION: &str = r#"Here is my evaluation: {"overall_score": 90, "is_successful": true, "dimensions": {"completeness": 100, "correctness": 97, "efficiency": 85, "reliability": 90}, "successes": ["all sections"], "failures": [], "improvement_suggestions": []}"#;

/// The reflector's answer, matched on the reflector prompt's closing line (the last round
/// is reflected on too).
const REFLECTION: &str = r#"{"reflection_id": "refl_aimock", "root_causes": ["none"], "incorrect_assumptions": [], "alternative_approaches": [], "optimization_suggestions": [], "lessons_learned": ["keep the plan"], "should_replan": false}"#;

/// Starts aimock on 127.0.0.1 with a free port; returns its base URL.
fn aimock(dir: &Path) -> Option<(String, ChildGuard)> {
    aimock_with(
        dir,
        serde_json::json!([
            {"match": {"userMessage": "Evaluate the round above"}, "response": {"content": EVALUATION}},
            {"match": {"userMessage": "Reflect on the round"}, "response": {"content": REFLECTION}},
            {"match": {"userMessage": "plan-acme-aimock"}, "response": {"content": PLAN}},
            {"match": {}, "response": {"content": "## Aimock section\n\nWritten by aimock: revenue grew 12% in 2024 (source: annual report)."}}
        ]),
    )
}

/// aimock answering from `fixtures` (the first whose `match` fits wins); `None` when peer
/// tests are skipped.
pub(crate) fn aimock_with(
    dir: &Path,
    fixtures_list: serde_json::Value,
) -> Option<(String, ChildGuard)> {
    let cli = peer("npm/node_modules/@copilotkit/aimock/dist/cli.js")?;
    let fixtures = dir.join("fixtures.json");
    let body = serde_json::json!({ "fixtures": fixtures_list });
    std::fs::write(&fixtures, body.to_string()).expect("fixtures");
    let mut child = Command::new("node")
        .arg(cli)
        .args([
            "--port",
            "0",
            "--host",
            "127.0.0.1",
            "--log-level",
            "info",
            "--fixtures",
        ])
        .arg(&fixtures)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs aimock");
    let stdout = child.stdout.take().expect("stdout");
    let guard = ChildGuard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(pos) = line.find("http://127.0.0.1:") {
                let _ = tx.send(line[pos..].trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("aimock printed its address");
    Some((format!("{}/v1", url.trim_end_matches('/')), guard))
}

#[test]
fn research_against_aimock_streaming_and_not() {
    let dir = tempdir();
    let Some((base, _server)) = aimock(dir.path()) else {
        return;
    };
    for (name, extra) in [("stream", None), ("plain", Some("--no-stream"))] {
        let out = dir.path().join(name);
        let res = planwave(["research", "plan-acme-aimock: review Acme"])
            .out(&out)
            .opt("--llm-base-url", &base)
            .opt("--model", "gpt-4o")
            .quiet()
            .args(extra)
            .run();
        res.expect_ok();
        assert!(
            res.stdout.starts_with("planned in 1 attempt(s): 3 tasks"),
            "{}",
            res.stdout
        );
        let run = read_json(&out.join("run.json"));
        assert_eq!(run["status"], "completed");
        let calls = run["calls"].as_array().expect("calls");
        assert_eq!(
            calls.len(),
            6,
            "planner + 3 sections + summary + evaluation (correctness ends the loop: no reflection)"
        );
        assert_eq!(calls[5]["role"], "evaluator");
        assert_eq!(run["loop_stop_reason"], "correctness");
        assert_eq!(run["rounds"][0]["correctness"], 97.0);
        for c in calls {
            // aimock reports usage; planwave records it per call.
            assert!(c["completion_tokens"].as_u64() > Some(0), "{name}: {c}");
        }
        let s3 = std::fs::read_to_string(out.join("sections/3.md")).expect("section 3");
        assert!(
            s3.starts_with("## Aimock section") && s3.contains("grew 12%"),
            "{s3}"
        );
        let report = std::fs::read_to_string(out.join("report.md")).expect("report");
        assert!(report.starts_with("# Acme Corp review\n"), "{report}");
        assert!(!report.contains("simulated LLM"));
    }
}

/// Every request aimock received, as its journal (`GET /__aimock/journal`) records them.
pub(crate) fn aimock_requests(base_url: &str) -> Vec<serde_json::Value> {
    let journal = crate::support::http_get_json(&base_url.replace("/v1", "/__aimock/journal"));
    journal.as_array().cloned().unwrap_or_default()
}

/// The text of every message of a request aimock received, one string.
pub(crate) fn messages_text(request: &Value) -> String {
    let mut text = String::new();
    let messages = request["body"]["messages"]
        .as_array()
        .or_else(|| request["messages"].as_array());
    for m in messages.into_iter().flatten() {
        text.push_str(m["content"].as_str().unwrap_or(""));
        text.push('\n');
    }
    text
}

/// The first request aimock got whose messages contain every one of `needles`.
pub(crate) fn request_with(base: &str, needles: &[&str]) -> String {
    let texts: Vec<String> = aimock_requests(base).iter().map(messages_text).collect();
    match texts.iter().find(|t| needles.iter().all(|n| t.contains(n))) {
        Some(t) => t.clone(),
        None => panic!("no request with {needles:?}; the requests:\n{texts:#?}"),
    }
}

/// The final `llm_call`'s request: the one whose prompt (its only message) opens with
/// "Answer from ".
pub(crate) fn answer_request(base: &str) -> String {
    let texts: Vec<String> = aimock_requests(base).iter().map(messages_text).collect();
    match texts.iter().find(|t| t.starts_with("Answer from ")) {
        Some(t) => t.clone(),
        None => panic!("no answer step's request; the requests:\n{texts:#?}"),
    }
}
